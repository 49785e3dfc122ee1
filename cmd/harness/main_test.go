package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/reports"
)

// buildHarness builds this command, as a user gets it.
func buildHarness(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "harness")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build harness: %v\n%s", err, out)
	}
	return bin
}

// harness runs bin with TMPDIR under tmp and returns its exit code, stdout
// and stderr.
func harness(t *testing.T, tmp, bin string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("harness %v: %v", args, err)
	}
	return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
}

// The stock harness lists the shipped adapters with their language and
// library version, and runs a shipped adapter by name and any adapter by
// its command line (--lock-cmd), each valid without faults on a real Redis.
func TestShippedAdaptersThroughTheCommandLine(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: builds the harness and runs redis-server and Python adapters")
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server not installed (apt-get install redis-server)")
	}
	if err := exec.Command("/usr/bin/python3", "-c", "import redis").Run(); err != nil {
		t.Skip("Debian's python3-redis not installed (apt-get install python3-redis)")
	}
	bin := buildHarness(t)
	tmp, store := t.TempDir(), t.TempDir()

	_, out, _ := harness(t, tmp, bin, "locks")
	if !strings.Contains(out, "redis-py") || !strings.Contains(out, "adapter (python, redis-py 4.") {
		t.Errorf("harness locks does not list redis-py with its language and version:\n%s", out)
	}
	minimal, err := filepath.Abs("../../adapters/minimal/adapter.py")
	if err != nil {
		t.Fatal(err)
	}
	for name, args := range map[string][]string{
		"shipped":  {"--lock", "redis-py"},
		"lock-cmd": {"--lock-cmd", "/usr/bin/python3 " + minimal},
	} {
		args = append([]string{"run", "--clients", "3", "--time-limit", "2s", "--recovery", "1s", "--seed", "3",
			"--store", store, "--json"}, args...)
		code, stdout, stderr := harness(t, tmp, bin, args...)
		var res reports.Results
		if err := json.Unmarshal([]byte(stdout), &res); err != nil {
			t.Fatalf("%s: exit %d, results: %v\n%s", name, code, err, stderr)
		}
		if code != 0 || res.Verdict != checker.Valid || res.Coverage.Grants == 0 {
			t.Errorf("%s: exit %d, verdict %s, %d grants\n%s", name, code, res.Verdict, res.Coverage.Grants, stderr)
		}
	}
}
