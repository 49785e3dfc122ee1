package local

import (
	"context"
	"errors"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/lockharness/lockharness/sut"
)

// sleeper is a Server running sleep(1), ready at once.
func sleeper(t *testing.T) *Server {
	t.Helper()
	bin, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip(err)
	}
	s := &Server{Name: "n1", Dir: t.TempDir(), Binary: bin, Args: []string{"60"}, Output: true,
		Ready: func(context.Context) error { return nil }}
	if err := s.Start(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Kill() })
	return s
}

// An exit the harness did not cause (a kill from outside) is reported to
// the watcher with how it ended; the harness's own Kill, and a restart,
// are not.
func TestWatchExitsReportsOnlyUnplannedExits(t *testing.T) {
	s := sleeper(t)
	exits := make(chan sut.Exit, 4)
	s.WatchExits(func(e sut.Exit) { exits <- e })
	if err := s.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	select {
	case e := <-exits:
		t.Fatalf("a planned kill reported as an exit: %+v", e)
	case <-time.After(200 * time.Millisecond):
	}
	if err := syscall.Kill(s.PID(), syscall.SIGKILL); err != nil { // from outside
		t.Fatal(err)
	}
	select {
	case e := <-exits:
		if e.Node != "n1" || e.How != "signal: killed" {
			t.Fatalf("exit %+v", e)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a kill from outside was not reported")
	}
	if s.Running() {
		t.Error("still running after its exit")
	}
	if err := s.Kill(); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
}
