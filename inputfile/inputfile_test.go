package inputfile

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

var kind = Kind{Name: "target file", Flag: "--target", Max: 1 << 10}

// Only regular files are read; everything else is refused at once, naming
// what it is and what to give instead, and a FIFO with no writer does not
// block (it did: only SIGKILL ended `harness run --target FIFO`).
func TestRefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	for _, c := range []struct{ path, want string }{
		{fifo, "is a named pipe (FIFO), not a regular file: give the path of the target file"},
		{"/dev/zero", "--target /dev/zero is a character device, not a regular file"},
		{dir, "is a directory, not a regular file"},
		{sock, "no such device or address"}, // a socket cannot be opened at all
		{filepath.Join(dir, "none"), "--target " + filepath.Join(dir, "none") + ": no such file or directory"},
	} {
		done := make(chan error, 1)
		go func() { _, err := Read(context.Background(), c.path, kind); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: %v, want %q", c.path, err, c.want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: Read blocked", c.path)
		}
	}
}

// A file larger than its kind's bound is refused before it is read, naming
// both sizes; a link to a regular file is read; a file of the bound is read.
func TestBoundsTheSize(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, make([]byte, 3<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Read(context.Background(), big, kind)
	if err == nil || !strings.Contains(err.Error(), "--target "+big+" is 3.0 MiB, more than a target file may be (1.0 KiB)") {
		t.Errorf("big file: %v", err)
	}
	ok := filepath.Join(dir, "ok")
	if err := os.WriteFile(ok, []byte(strings.Repeat("x", 1<<10)), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(ok, link); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{ok, link} {
		if b, err := Read(context.Background(), p, kind); err != nil || len(b) != 1<<10 {
			t.Errorf("%s: %d bytes, %v", p, len(b), err)
		}
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := Read(context.Background(), empty, kind); err != nil || len(b) != 0 {
		t.Errorf("empty: %q, %v", b, err)
	}
	// With no bound (a history, read as a stream), Open takes any size.
	f, err := Open(big, Kind{Name: "history"})
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// A cancelled context stops the read.
func TestReadIsCancellable(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("rules: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Read(ctx, p, kind); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled read: %v", err)
	}
}
