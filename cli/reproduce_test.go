package cli

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lockharness/lockharness/reports"
)

// The reproduce line a run records is the command line it was given, as a
// shell reads it back: a --store with a space, ';' and non-ASCII stays one
// argument and runs nothing else (issue 22 row 14: it was the arguments
// joined with spaces).
func TestReproduceLineIsShellQuoted(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs redis-server on PATH")
	}
	requireRedis(t)
	t.Parallel()
	store := filepath.Join(t.TempDir(), "my store; touch pwned ü")
	args := []string{"run", "--lock", "token", "--time-limit", "1s", "--recovery", "200ms", "--store", store, "--seed", "3"}
	cmd := exec.Command(harnessBin, args...)
	if out, err := cmd.CombinedOutput(); cmd.ProcessState.ExitCode() != 0 {
		t.Fatalf("run: %v\n%s", err, out)
	}
	b, err := os.ReadFile(filepath.Join(store, "latest", reports.ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	var res reports.Results
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sh := exec.Command("sh", "-c", `printf '%s\0' `+res.Meta.Command)
	sh.Dir = dir
	out, err := sh.Output()
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	if want := append([]string{"harness"}, args...); !slices.Equal(got, want) {
		t.Errorf("the recorded command %s\nreads back as %q\nwant %q", res.Meta.Command, got, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "pwned")); err == nil {
		t.Errorf("pasting the reproduce line ran a second command")
	}
}
