// Package etcdtest gives tests a real etcd group, as redistest gives them
// Redis: it skips under -short, fails with the command that installs what
// is missing, and stops every process in Cleanup.
package etcdtest

import (
	"context"
	"os/exec"
	"testing"

	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/sut/etcd"
)

// InstallHint is what a test says when a program it needs is missing.
const InstallHint = "apt-get install -y etcd-server redis-server (or make deps)"

// Require skips tb under -short and fails it when etcd or redis-server
// (the storage node) is not on PATH.
func Require(tb testing.TB) {
	tb.Helper()
	if testing.Short() {
		tb.Skip("integration test: runs real etcd processes")
	}
	for _, b := range []string{"etcd", "redis-server"} {
		if _, err := exec.LookPath(b); err != nil {
			tb.Fatalf("%s is not on PATH: %s", b, InstallHint)
		}
	}
}

// Up starts an etcd group (after Require) and stops it in Cleanup,
// reporting an error of Down.
func Up(tb testing.TB, cfg sut.Config) *etcd.Cluster {
	tb.Helper()
	Require(tb)
	c, err := etcd.Up(context.Background(), cfg)
	if err != nil {
		tb.Fatalf("etcd up: %v", err)
	}
	tb.Cleanup(func() {
		if err := c.Down(); err != nil {
			tb.Errorf("etcd down: %v", err)
		}
	})
	return c
}
