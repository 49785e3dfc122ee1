package run_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/nemesis"
	"github.com/lockharness/lockharness/reports"
	"github.com/lockharness/lockharness/run"
	"github.com/lockharness/lockharness/sut"
	redisbackend "github.com/lockharness/lockharness/sut/redis"
	"github.com/lockharness/lockharness/workloads"
)

// A server the harness started, killed from outside in the middle of a
// run without any nemesis: the final heal brings it back, and the run used
// to say VALID without a word. Now the exit is an event of the history and
// of the run's record, the verdict is unknown with the exit named as its
// reason ("n1 exited unexpectedly at 1.5 s"), and the lock's own checks
// still say what they found.
func TestAServerKilledFromOutsideDisturbsTheRun(t *testing.T) {
	requireRedis(t)
	if testing.Short() {
		t.Skip("a 3s run")
	}
	t.Parallel()
	killed := make(chan error, 1)
	killer := func(ctx context.Context, cfg sut.Config) (sut.Deployment, error) {
		c, err := redisbackend.Up(ctx, cfg)
		if err != nil {
			return nil, err
		}
		pid := c.Nodes[0].PID()
		// Well inside the 3s run phase, which starts a few ms from now.
		time.AfterFunc(1500*time.Millisecond, func() { killed <- syscall.Kill(pid, syscall.SIGKILL) })
		return c, nil
	}
	store := t.TempDir()
	out, err := run.Run(context.Background(), run.Config{
		Lock: "token", Seed: 3, TimeLimit: 3 * time.Second, Recovery: 500 * time.Millisecond, Store: store, Backend: killer,
		Workload: workloads.Config{Clients: 2, Keys: 1, TTL: time.Second},
	})
	if err := <-killed; err != nil {
		t.Fatalf("kill from outside: %v", err)
	}
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	res := out.Results
	if res.Verdict != checker.Unknown || !strings.HasPrefix(res.Reason, checker.DisturbedPrefix+"n1 exited unexpectedly at ") {
		t.Fatalf("verdict %s (%s), want unknown naming n1's exit", res.Verdict, res.Reason)
	}
	if d := res.Coverage.Disturbed; len(d) != 1 || !strings.HasPrefix(d[0], "n1 exited unexpectedly at 1.") {
		t.Errorf("coverage says %q", d)
	}
	if !strings.Contains(strings.Join(reports.Evidence(res.Coverage), "\n"), "n1 exited unexpectedly") {
		t.Errorf("the evidence the summary and the report print does not name the exit: %q", reports.Evidence(res.Coverage))
	}
	rec, ok, err := reports.ReadRecord(out.Dir)
	if err != nil || !ok || len(rec.UnplannedExits) != 1 || !strings.Contains(rec.UnplannedExits[0], "signal: killed") {
		t.Errorf("run.json records exits %q (%v, %v)", rec.UnplannedExits, ok, err)
	}
	b, err := os.ReadFile(filepath.Join(out.Dir, reports.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"f":"`+history.FServerExit+`"`) {
		t.Error("the history does not record the exit")
	}
}

// The nemesis's own kills are planned: a run of the kill nemesis is not
// disturbed by them.
func TestPlannedKillsDoNotDisturb(t *testing.T) {
	requireRedis(t)
	if testing.Short() {
		t.Skip("a 4s run")
	}
	t.Parallel()
	out, err := run.Run(context.Background(), run.Config{
		Lock: "token", Seed: 5, TimeLimit: 4 * time.Second, Recovery: 500 * time.Millisecond, Store: t.TempDir(),
		Workload: workloads.Config{Clients: 2, Keys: 1, TTL: time.Second}, AllowVacuous: true,
		Nemesis: nemesis.Config{Names: []string{"kill"}, Interval: time.Second},
	})
	if err != nil && !errors.Is(err, run.ErrInterrupted) {
		t.Fatalf("run: %v", err)
	}
	if d := out.Results.Coverage.Disturbed; len(d) > 0 || strings.HasPrefix(out.Results.Reason, checker.DisturbedPrefix) {
		t.Fatalf("planned kills reported as unplanned exits: %q (%s)", d, out.Results.Reason)
	}
	if out.Results.Coverage.Faults["kill"].TookEffect == 0 {
		t.Fatalf("no kill took effect: %+v", out.Results.Coverage.Faults)
	}
}
