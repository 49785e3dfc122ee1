package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A store on a filesystem that fills up: the run stops at the first history
// write that fails, long before its time limit, exit 2 with an error that
// names the problem (no space) and the way out (--store); what was written
// is kept and still checkable, and no server is left running. The small
// filesystem is a tmpfs, which needs root (CI runs as root); elsewhere the
// test says so and skips.
func TestStoreOnAFullFilesystem(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: runs redis-server")
	}
	requireRedis(t)
	t.Parallel()
	store, tmp := t.TempDir(), t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", store).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a small tmpfs for the store (needs root): %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", store).Run() })

	cmd := exec.Command(harnessBin, "run", "--lock", "token", "--time-limit", "60s", "--recovery", "1s", "--store", store, "--seed", "3")
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp) // node files are not in the store
	start := time.Now()
	out, _ := cmd.CombinedOutput()
	took := time.Since(start)
	if code := cmd.ProcessState.ExitCode(); code != 2 {
		t.Fatalf("exit code %d on a full store, want 2; output:\n%s", code, out)
	}
	if took > 30*time.Second {
		t.Errorf("the run went on for %v after its store filled up (time limit 60s)", took.Round(time.Second))
	}
	msg := string(out)
	for _, want := range []string{"no space left on device", "--store", "kept"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error does not say %q:\n%s", want, msg)
		}
	}
	hist, _ := filepath.Glob(filepath.Join(store, "token", "*", "history.jsonl"))
	if len(hist) != 1 {
		t.Fatalf("histories in the store: %v, want the run's one", hist)
	}
	if fi, err := os.Stat(hist[0]); err != nil || fi.Size() == 0 {
		t.Fatalf("what was written is not kept: %v %v", fi, err)
	}
	// The kept prefix is a history: check reads it, its cut-off last line
	// aside (a reader error names a line).
	code, stdout, stderr := runCLI(t, "check", hist[0])
	if strings.Contains(stderr, ": line ") || !strings.Contains(stdout, "lock-promise") {
		t.Errorf("the kept history is not checkable (exit %d): %s%s", code, stdout, stderr)
	}
	if left := serversUnder(t, tmp); len(left) != 0 {
		for _, pid := range left {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		t.Errorf("%d redis-server processes left after the failed run", len(left))
	}
}
