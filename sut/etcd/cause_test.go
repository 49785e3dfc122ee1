package etcd_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/sut/etcd"
	"github.com/lockharness/lockharness/sut/local"
)

// A member that cannot open its database (here a file that is not one;
// under `ulimit -v` the mmap fails the same way) dies of a Go panic whose
// stack fills the end of its log: the start error must carry the panic's
// cause line, not the last frames of the stack.
func TestStartErrorCarriesThePanicLine(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd")
	}
	if _, err := local.LookBinary("etcd", etcd.InstallHint); err != nil {
		t.Skip(err)
	}
	t.Parallel()
	dir := t.TempDir()
	snap := filepath.Join(dir, "n1", "data", "member", "snap")
	if err := os.MkdirAll(snap, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(snap, "db"), []byte(strings.Repeat("not a bolt database\n", 500)), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	c, err := etcd.Up(ctx, sut.Config{Nodes: 1, Dir: dir})
	if err == nil {
		_ = c.Down()
		t.Fatal("etcd started over a database that is not one")
	}
	msg := err.Error()
	// etcd logs the cause as a structured record ("level":"panic", its
	// "error" field) and as the runtime's bare "panic: failed to open
	// database"; the error must carry the field that says why.
	if !strings.Contains(msg, "panic: failed to open database: invalid database") {
		t.Fatalf("the error does not say why etcd stopped: %v", err)
	}
}
