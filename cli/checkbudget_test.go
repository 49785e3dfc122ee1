package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockharness/lockharness/history/synth"
)

// --check-timeout bounds the whole check, not only each porcupine search
// (issue 22, row 18: a history of a million keys ran on for minutes under
// --check-timeout 20s). Here a 200,000-event history of fresh keys, which
// no machine reads and checks in 4ms, under --check-timeout 1ms: the check
// stops at 4 × it, says so and how to give it longer, and exits 2 with the
// unfinished checkers unknown; report leaves the run directory as it was.
func TestCheckTimeoutBoundsTheWholeCheck(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "history.jsonl")
	if _, err := synth.WriteFile(path, synth.Config{Shape: synth.ManyKeys, Events: 200_000, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, "check", "--check-timeout", "1ms", path)
	if code != exitError {
		t.Errorf("check exit %d, want %d\nstdout: %s\nstderr: %s", code, exitError, stdout, stderr)
	}
	for _, want := range []string{"the whole check ran past 4ms (4 × --check-timeout 1ms)", "larger --check-timeout"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("check's stderr lacks %q:\n%s", want, stderr)
		}
	}
	if !strings.Contains(stdout, "unknown") {
		t.Errorf("check's summary does not say unknown:\n%s", stdout)
	}

	code, _, stderr = runCLI(t, "report", "--check-timeout", "1ms", dir)
	if code != exitError || !strings.Contains(stderr, "left as it was") || !strings.Contains(stderr, "larger --check-timeout") {
		t.Errorf("report exit %d, want %d with the run left as it was:\n%s", code, exitError, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "results.json")); !os.IsNotExist(err) {
		t.Errorf("report wrote results.json after the check ran past its bound (err %v)", err)
	}
}
