package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Bad input to harness replay is refused before anything runs, exit 2,
// naming the problem and the way out.
func TestReplayBadInput(t *testing.T) {
	store := t.TempDir()
	notRun := filepath.Join(store, "not-a-run")
	if err := os.MkdirAll(notRun, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"replay", "--times", "0", "store/latest"}, "give at least one replay"},
		{[]string{"replay", "--times", "3", "--min", "4", "store/latest"}, "--min between 0 and --times"},
		{[]string{"replay"}, "give run directories (store/latest) or --scenarios"},
		{[]string{"replay", "--scenarios", "all", "store/latest"}, "one of the two"},
		{[]string{"replay", "--scenarios", "token-release"}, "replay measures INVALID runs"},
		{[]string{"replay", "--scenarios", "no-such-scenario"}, "no-such-scenario"},
		{[]string{"replay", "--store", store, filepath.Join(store, "missing")}, "is not a run directory"},
		{[]string{"replay", "--store", store, notRun}, "has no readable"},
	} {
		code, _, stderr := runCLI(t, c.args...)
		if code != exitError || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 saying %q", c.args, code, stderr, c.want)
		}
	}
}

// harness replay --scenarios runs the scenario once, replays the schedule
// its run wrote, and counts the replays that broke the lock the same way:
// wrong-release strikes by its schedule, so every replay does.
func TestReplayScenario(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a scenario and two replays against real Redis")
	}
	requireRedis(t)
	t.Parallel()
	code, stdout, stderr := runCLI(t, "replay", "--scenarios", "wrong-release", "--times", "2", "--store", t.TempDir(), "--json")
	if code != exitValid {
		t.Fatalf("exit %d, stderr:\n%s\nstdout:\n%s", code, stderr, stdout)
	}
	var rows []replayRow
	if err := json.Unmarshal([]byte(stdout), &rows); err != nil {
		t.Fatalf("--json: %v\n%s", err, stdout)
	}
	if len(rows) != 1 || rows[0].Target != "lock-promise/overlap" || rows[0].Reproduced != 2 || rows[0].Times != 2 || !rows[0].Pass {
		t.Fatalf("rows %+v, want wrong-release reproducing lock-promise/overlap in 2 of 2", rows)
	}
	replays, err := filepath.Glob(filepath.Join(rows[0].Dir, "replay", "*", "*", "schedule.yaml"))
	if err != nil || len(replays) != 2 {
		t.Errorf("replays in %s/replay: %v %v, want 2 runs", rows[0].Dir, replays, err)
	}
}
