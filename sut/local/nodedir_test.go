package local

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// The sweep removes the node directories of processes that are gone (a
// SIGKILLed harness) and leaves those of live ones (a concurrent run).
func TestSweepNodeDirs(t *testing.T) {
	tmp := t.TempDir()
	// pid_max is at most 2^22 on Linux: this process cannot exist.
	dead := filepath.Join(tmp, fmt.Sprintf("%s%d-123", nodeDirPrefix, 1<<22+7))
	alive := filepath.Join(tmp, fmt.Sprintf("%s%d-456", nodeDirPrefix, os.Getppid()))
	other := filepath.Join(tmp, "lockharness-unrelated")
	for _, d := range []string{dead, alive, other} {
		if err := os.MkdirAll(filepath.Join(d, "n1"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "n1", "faketime"), []byte("+0s x1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if n := SweepNodeDirs(tmp); n != 1 {
		t.Errorf("swept %d directories, want 1", n)
	}
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("a dead process's node directory is still there: %v", err)
	}
	for _, d := range []string{alive, other} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s was removed: %v", d, err)
		}
	}
}

// A harness that exited but was never reaped (a zombie, where nothing
// reaps orphans) is gone: its directory is swept.
func TestSweepNodeDirsOfZombie(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Skip(err)
	}
	defer func() { _ = cmd.Wait() }()
	pid := cmd.Process.Pid
	for i := 0; !zombie(pid); i++ { // it exits at once; until Wait it is a zombie
		if i == 500 {
			t.Fatal("the child never became a zombie")
		}
		time.Sleep(10 * time.Millisecond)
	}
	tmp := t.TempDir()
	d := filepath.Join(tmp, fmt.Sprintf("%s%d-1", nodeDirPrefix, pid))
	if err := os.Mkdir(d, 0o755); err != nil {
		t.Fatal(err)
	}
	if n := SweepNodeDirs(tmp); n != 1 {
		t.Errorf("swept %d, want the zombie's directory", n)
	}
}
