package locks_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/run"
	"github.com/lockharness/lockharness/workloads"
)

// runVerdict runs cfg through run.Run, as harness run does, and returns
// the result; it fails when the run has too few grants to mean anything.
func runVerdict(t *testing.T, cfg run.Config, least int) run.Outcome {
	t.Helper()
	cfg.Store = t.TempDir()
	out, err := run.Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if n := out.Results.Counts["acquire"]["ok"]; n < least {
		t.Errorf("only %d grants, want %d: %v", n, least, out.Results.Counts)
	}
	t.Logf("%s: %s; counts %v", cfg.Lock, out.Results.Verdict, out.Results.Counts)
	return out
}

// rueidislock through the whole run: valid with no faults; and valid when
// holders pause for 1.5 validities between read and write, because an
// in-process pause stops the workload's goroutine, not the library's
// extension goroutine: the key is extended (each extension a renewal in
// the history, moving the deadline on) and nobody else gets in.
func TestRueidislockRuns(t *testing.T) {
	needRedis(t)
	t.Parallel()
	for _, pause := range []time.Duration{0, 1500 * time.Millisecond} {
		t.Run(pause.String(), func(t *testing.T) {
			out := runVerdict(t, run.Config{
				Lock: "rueidislock", Seed: 5, TimeLimit: 4 * time.Second, Recovery: time.Second,
				Workload: workloads.Config{Clients: 5, Keys: 2, TTL: time.Second, ClientPause: pause},
			}, 20)
			if out.Results.Verdict != checker.Valid {
				t.Fatalf("verdict %s, want valid: %+v", out.Results.Verdict, out.Results.Violations)
			}
			if pause > 0 && out.Results.Counts["renew"]["ok"] == 0 {
				t.Errorf("no renewals recorded under pauses longer than the validity: %v", out.Results.Counts)
			}
		})
	}
}
