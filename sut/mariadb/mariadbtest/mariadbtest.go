// Package mariadbtest gives tests a real MariaDB server, as redistest
// gives them Redis: it skips under -short, fails with the command that
// installs what is missing, and stops every process in Cleanup.
package mariadbtest

import (
	"context"
	"errors"
	"os/exec"
	"testing"

	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/sut/local"
	"github.com/lockharness/lockharness/sut/mariadb"
)

// InstallHint is what a test says when a program it needs is missing.
const InstallHint = "apt-get install -y mariadb-server redis-server && service mariadb stop (or make deps)"

// Require skips tb under -short and fails it when mariadbd or
// redis-server (the storage node) is missing.
func Require(tb testing.TB) {
	tb.Helper()
	if testing.Short() {
		tb.Skip("integration test: runs a real MariaDB server")
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		tb.Fatalf("redis-server is not on PATH: %s", InstallHint)
	}
	if err := mariadb.Available(); err != nil {
		if errors.Is(err, local.ErrMissingBinary) {
			tb.Fatalf("%v: %s", err, InstallHint)
		}
		tb.Fatal(err)
	}
}

// Up starts a MariaDB deployment (after Require) and stops it in Cleanup,
// reporting an error of Down.
func Up(tb testing.TB, cfg sut.Config) *mariadb.Cluster {
	tb.Helper()
	Require(tb)
	c, err := mariadb.Up(context.Background(), cfg)
	if err != nil {
		tb.Fatalf("mariadb up: %v", err)
	}
	tb.Cleanup(func() {
		if err := c.Down(); err != nil {
			tb.Errorf("mariadb down: %v", err)
		}
	})
	return c
}
