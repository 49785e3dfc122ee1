package reports

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// latest is set only for a run whose report is complete, and a discarded
// run's fallback is the newest complete run.
func TestDiscardRunDirRestoresLatest(t *testing.T) {
	store := t.TempDir()
	first, err := NewRunDir(store, "token", time.Unix(100, 0))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(store, LatestLink)); !os.IsNotExist(err) {
		t.Fatalf("latest points at a run without its report: %v", err)
	}
	if err := os.WriteFile(filepath.Join(first, IndexFile), []byte("report"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := PointLatest(store, first); err != nil {
		t.Fatal(err)
	}
	// A run killed before its report is never what latest falls back to.
	killed, err := NewRunDir(store, "token", time.Unix(150, 0))
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(first, old, old); err != nil {
		t.Fatal(err)
	}
	failed, err := NewRunDir(store, "redlock", time.Unix(200, 0))
	if err != nil {
		t.Fatal(err)
	}
	if err := DiscardRunDir(store, failed); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(failed); !os.IsNotExist(err) {
		t.Fatalf("failed run still there: %v", err)
	}
	got, err := filepath.EvalSymlinks(filepath.Join(store, LatestLink))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := filepath.EvalSymlinks(first)
	if got != want {
		t.Fatalf("latest -> %s, want %s", got, want)
	}
	if err := DiscardRunDir(store, killed); err != nil {
		t.Fatal(err)
	}
	if err := DiscardRunDir(store, first); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(store, LatestLink)); !os.IsNotExist(err) {
		t.Fatalf("latest still there with no run left: %v", err)
	}
}
