package cli

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/reports"
)

// The stock harness (cmd/harness, built by TestMain) lists the shipped
// adapters with their language and library version, and runs a shipped
// adapter by name and any adapter by its command line (--lock-cmd), each
// valid without faults on a real Redis.
func TestShippedAdaptersThroughTheCommandLine(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: runs redis-server and Python adapters")
	}
	requireRedis(t)
	t.Parallel()
	if err := exec.Command("/usr/bin/python3", "-c", "import redis").Run(); err != nil {
		t.Fatal("Debian's python3-redis is not installed: apt-get install python3-redis (or make deps)")
	}
	tmp, store := t.TempDir(), t.TempDir()
	_, out, _ := runBin(t, tmp, harnessBin, "locks")
	if !strings.Contains(out, "adapter (python, redis-py 4.") {
		t.Errorf("harness locks does not list redis-py with its language and version:\n%s", out)
	}
	minimal, err := filepath.Abs("../adapters/minimal/adapter.py")
	if err != nil {
		t.Fatal(err)
	}
	for name, args := range map[string][]string{
		"shipped":  {"--lock", "redis-py"},
		"lock-cmd": {"--lock-cmd", "/usr/bin/python3 " + minimal},
	} {
		args = append([]string{"run", "--clients", "3", "--time-limit", "2s", "--recovery", "1s", "--seed", "3",
			"--store", store, "--json"}, args...)
		code, stdout, stderr := runBin(t, tmp, harnessBin, args...)
		var res reports.Results
		if err := json.Unmarshal([]byte(stdout), &res); err != nil {
			t.Fatalf("%s: exit %d, results: %v\n%s", name, code, err, stderr)
		}
		if code != 0 || res.Verdict != checker.Valid || res.Coverage.Grants == 0 {
			t.Errorf("%s: exit %d, verdict %s, %d grants\n%s", name, code, res.Verdict, res.Coverage.Grants, stderr)
		}
	}
}
