// Package zktest gives tests a real ZooKeeper ensemble, as redistest
// gives them Redis: it skips under -short, fails with the command that
// installs what is missing, and stops every process in Cleanup.
package zktest

import (
	"context"
	"os"
	"os/exec"
	"testing"

	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/sut/zookeeper"
)

// InstallHint is what a test says when a program it needs is missing.
const InstallHint = "apt-get install -y zookeeper redis-server (or make deps)"

// Require skips tb under -short and fails it when java, ZooKeeper's jar or
// redis-server (the storage node) is missing.
func Require(tb testing.TB) {
	tb.Helper()
	if testing.Short() {
		tb.Skip("integration test: runs real ZooKeeper servers")
	}
	for _, b := range []string{"java", "redis-server"} {
		if _, err := exec.LookPath(b); err != nil {
			tb.Fatalf("%s is not on PATH: %s", b, InstallHint)
		}
	}
	if _, err := os.Stat("/usr/share/java/zookeeper.jar"); err != nil {
		tb.Fatalf("ZooKeeper is not installed (%v): %s", err, InstallHint)
	}
}

// Up starts a ZooKeeper ensemble (after Require) and stops it in Cleanup,
// reporting an error of Down.
func Up(tb testing.TB, cfg sut.Config) *zookeeper.Cluster {
	tb.Helper()
	Require(tb)
	c, err := zookeeper.Up(context.Background(), cfg)
	if err != nil {
		tb.Fatalf("zookeeper up: %v", err)
	}
	tb.Cleanup(func() {
		if err := c.Down(); err != nil {
			tb.Errorf("zookeeper down: %v", err)
		}
	})
	return c
}
