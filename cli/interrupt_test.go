package cli

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// feedHistory opens the FIFO at path for writing and writes events to it:
// lines of them, then (stall) holds it open without writing more, or
// (!stall) keeps writing until the reader goes away. It signals on started
// once the first lines are written.
func feedHistory(path string, lines int, stall bool, started chan<- struct{}) {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		close(started)
		return
	}
	defer f.Close()
	for i := 0; ; i++ {
		p := i % 8
		line := fmt.Sprintf(`{"index":%d,"time":%d,"process":%d,"type":"invoke","f":"read","key":"lock-0"}`+"\n"+
			`{"index":%d,"time":%d,"process":%d,"type":"ok","f":"read","key":"lock-0","value":{"counter":0}}`+"\n",
			2*i, 10*i+1, p, 2*i+1, 10*i+2, p)
		if _, err := f.WriteString(line); err != nil {
			return // the reader is gone
		}
		if i == lines {
			close(started)
			if stall {
				time.Sleep(time.Minute)
				return
			}
		}
	}
}

// interrupt starts the harness with args, waits for started, sends sig,
// and returns the exit code, stderr, and how long the harness took to stop.
func interrupt(t *testing.T, sig syscall.Signal, started <-chan struct{}, args ...string) (int, string, time.Duration) {
	t.Helper()
	cmd := exec.Command(harnessBin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	select {
	case <-started:
	case <-time.After(30 * time.Second):
		t.Fatal("the harness never read the history")
	}
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	at := time.Now()
	waited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(30 * time.Second):
		t.Fatalf("still running 30s after %v; stderr: %s", sig, stderr.String())
	}
	return cmd.ProcessState.ExitCode(), stderr.String(), time.Since(at)
}

// Ctrl-C (and SIGTERM) stop `harness check` and `harness report` while
// they read a history, whether the history keeps coming or its writer
// stalls (a read that blocks): exit 130 (143), the message says what was
// interrupted, and report leaves the run directory as it was. The
// histories come through a FIFO, so no check can finish before the signal.
func TestInterruptCheckAndReport(t *testing.T) {
	cases := []struct {
		name   string
		sig    syscall.Signal
		report bool
		stall  bool
		code   int
	}{
		{"check streaming SIGINT", syscall.SIGINT, false, false, 130},
		{"check stalled SIGINT", syscall.SIGINT, false, true, 130},
		{"check streaming SIGTERM", syscall.SIGTERM, false, false, 143},
		{"report streaming SIGINT", syscall.SIGINT, true, false, 130},
		{"report stalled SIGINT", syscall.SIGINT, true, true, 130},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			fifo := filepath.Join(dir, "history.jsonl")
			if err := syscall.Mkfifo(fifo, 0o644); err != nil {
				t.Skipf("no FIFOs here: %v", err)
			}
			old := map[string]string{"results.json": `{"verdict":"valid"}`, "index.html": "<html>old report</html>"}
			for name, body := range old {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			started := make(chan struct{})
			go feedHistory(fifo, 20000, c.stall, started)
			args := []string{"check", fifo}
			if c.report {
				args = []string{"report", dir}
			}
			code, stderr, took := interrupt(t, c.sig, started, args...)
			t.Logf("stopped %v after the signal", took.Round(time.Millisecond))
			if code != c.code {
				t.Errorf("exit %d, want %d; stderr: %s", code, c.code, stderr)
			}
			if !strings.Contains(stderr, "interrupted by SIG") {
				t.Errorf("stderr does not say it was interrupted: %s", stderr)
			}
			for name, body := range old {
				if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(b) != body {
					t.Errorf("%s changed: %q, %v", name, b, err)
				}
			}
		})
	}
}
