// Package redistest gives tests real Redis topologies, as httptest gives
// them real servers: it skips under -short, fails with the command that
// installs what is missing, and stops every process in Cleanup.
package redistest

import (
	"context"
	"flag"
	"os"
	"os/exec"
	"testing"

	"github.com/lockharness/lockharness/sut"
	redisbackend "github.com/lockharness/lockharness/sut/redis"
)

// InstallHint is what a test says when a program it needs is missing.
const InstallHint = "apt-get install -y redis-server redis-sentinel libfaketime gcc libc6-dev (or make deps)"

// Require skips tb under -short and fails it when any of bins (default
// redis-server and redis-sentinel) is not on PATH.
func Require(tb testing.TB, bins ...string) {
	tb.Helper()
	if testing.Short() {
		tb.Skip("integration test: runs real Redis processes")
	}
	if len(bins) == 0 {
		bins = []string{"redis-server", "redis-sentinel"}
	}
	for _, b := range bins {
		if _, err := exec.LookPath(b); err != nil {
			tb.Fatalf("%s is not on PATH: %s", b, InstallHint)
		}
	}
}

// Up starts the topology cfg describes (after Require) and stops it in
// Cleanup, reporting an error of Down.
func Up(tb testing.TB, cfg sut.Config) *redisbackend.Cluster {
	tb.Helper()
	Require(tb)
	c, err := redisbackend.Up(context.Background(), cfg)
	if err != nil {
		tb.Fatalf("cluster up: %v", err)
	}
	tb.Cleanup(func() {
		if err := c.Down(); err != nil {
			tb.Errorf("cluster down: %v", err)
		}
	})
	return c
}

// Main is a TestMain for packages whose runnable examples start real
// Redis processes: under -short it skips the examples matching pattern
// too (an Example cannot skip itself), then runs the tests.
func Main(m *testing.M, pattern string) {
	flag.Parse()
	if testing.Short() {
		if err := flag.Set("test.skip", pattern); err != nil {
			panic(err)
		}
	}
	os.Exit(m.Run())
}
