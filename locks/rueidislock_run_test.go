package locks_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/run"
	"github.com/lockharness/lockharness/workloads"
)

// runVerdict runs cfg through run.Run, as harness run does, and returns
// the result; it fails when the run has too few grants to mean anything.
// The run's store is a temporary directory, or, when
// LOCKHARNESS_KEEP_STORE names a directory, a directory under it named
// after the test that is kept when the test fails (its history is what
// explains a rare verdict; see runStore).
func runVerdict(t *testing.T, cfg run.Config, least int) run.Outcome {
	t.Helper()
	cfg.Store = runStore(t)
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

// runStore is the directory a test's run is stored in: t.TempDir(), or,
// with LOCKHARNESS_KEEP_STORE=dir, a new directory under dir that is
// removed when the test passes and kept (its path logged) when it fails.
func runStore(t *testing.T) string {
	t.Helper()
	keep := os.Getenv("LOCKHARNESS_KEEP_STORE")
	if keep == "" {
		return t.TempDir()
	}
	if err := os.MkdirAll(keep, 0o755); err != nil {
		t.Fatalf("LOCKHARNESS_KEEP_STORE=%s: %v (set it to a directory that can be created)", keep, err)
	}
	dir, err := os.MkdirTemp(keep, strings.NewReplacer("/", "-", " ", "_").Replace(t.Name())+"-")
	if err != nil {
		t.Fatalf("LOCKHARNESS_KEEP_STORE=%s: %v", keep, err)
	}
	dir, _ = filepath.Abs(dir)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("run store kept (LOCKHARNESS_KEEP_STORE): %s", dir)
			return
		}
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("removing the run store %s: %v", dir, err)
		}
	})
	return dir
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
