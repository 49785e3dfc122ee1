package run_test

import (
	"strings"
	"testing"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/nemesis"
	"github.com/lockharness/lockharness/run"
	"github.com/lockharness/lockharness/workloads"
)

// The faults a matrix cell strikes a holder with decide its verdict, not
// the machine's timing: a partition of the holder's client alone, healed
// while another client holds, delivers the cut holder's late release
// after that grant (set-nx-ex's plain DEL deletes it: invalid; token's
// compare-and-delete refuses it: valid), and a kill holds the struck
// holder's release until the node is back, empty, inside its lease
// (token: invalid).
func TestHolderFaultsDecideTheVerdict(t *testing.T) {
	requireRedis(t)
	t.Parallel()
	for _, tc := range []struct {
		lock, nemesis string
		want          checker.Verdict
	}{
		{"set-nx-ex", "partition", checker.Invalid},
		{"token", "partition", checker.Valid},
		{"token", "kill", checker.Invalid},
	} {
		t.Run(tc.lock+"/"+tc.nemesis, func(t *testing.T) {
			t.Parallel()
			res := mustRun(t, run.Config{
				Lock: tc.lock, Seed: 1, TimeLimit: 6 * time.Second, Recovery: time.Second, AwaitHolders: true,
				Workload: workloads.Config{Clients: 5, Keys: 1, TTL: time.Second, Hold: 400 * time.Millisecond},
				Nemesis: nemesis.Config{Names: []string{tc.nemesis}, Interval: 2 * time.Second,
					PartitionPatterns: []string{nemesis.PatternHolder}},
			})
			if got := res.Checkers["lock-promise"].Verdict; got != tc.want {
				t.Fatalf("lock promise %s, want %s; violations %+v", got, tc.want, res.Violations)
			}
		})
	}
}

// An unknown partition pattern is refused before anything starts, naming
// the patterns there are.
func TestUnknownPartitionPattern(t *testing.T) {
	_, err := run.NewPlan(run.Config{Lock: "token", Nemesis: nemesis.Config{Names: []string{"partition"}, PartitionPatterns: []string{"holders"}}})
	if err == nil {
		t.Fatal("pattern holders accepted")
	}
	for _, want := range []string{`"holders"`, nemesis.PatternHolder, nemesis.PatternIsolate} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
}

// An unknown clock mode is refused before anything starts.
func TestUnknownClockMode(t *testing.T) {
	_, err := run.NewPlan(run.Config{Lock: "token", Nemesis: nemesis.Config{Names: []string{"clock"}, ClockModes: []string{"jump"}}})
	if err == nil || !strings.Contains(err.Error(), `"jump"`) || !strings.Contains(err.Error(), "strobe") {
		t.Fatalf("clock mode jump: %v", err)
	}
}
