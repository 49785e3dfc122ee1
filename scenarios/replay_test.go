package scenarios

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/lockharness/lockharness/checker"
	lockrun "github.com/lockharness/lockharness/run"
	"github.com/lockharness/lockharness/schedule"
	"github.com/lockharness/lockharness/sut/redis/redistest"
)

// fatalKinds are the kinds of the violations that broke a checker.
func fatalKinds(r checker.Result) []string {
	var out []string
	for _, v := range r.Violations {
		if v.Fatal && !slices.Contains(out, v.Kind) {
			out = append(out, v.Kind)
		}
	}
	slices.Sort(out)
	return out
}

// TestReplayScheduleGivesTheSameViolation runs wrong-release, a
// deterministic INVALID scenario, then runs the schedule.yaml its run
// wrote, as `harness run --schedule DIR/schedule.yaml` does: the replay
// breaks the lock the same way (the same violation kinds, the same
// verdicts), and the recorded schedule says when its step struck and
// which holder its await found.
func TestReplayScheduleGivesTheSameViolation(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a scenario and its replay against real Redis")
	}
	redistest.Require(t, "redis-server")
	s, err := Lookup("wrong-release")
	if err != nil {
		t.Fatal(err)
	}
	o, err := Run(context.Background(), s, Options{Store: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if !o.Pass() {
		t.Fatalf("the scenario itself gave %s, want %s", o.ObservedString(), s.Expect)
	}
	f, err := os.Open(filepath.Join(o.Dir, lockrun.ScheduleFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sch, err := schedule.Parse(f, schedule.Env{})
	if err != nil {
		t.Fatalf("the run's schedule.yaml: %v", err)
	}
	if len(sch.Steps) != len(s.Run.Script) || sch.Steps[0].Struck == 0 || sch.Steps[0].NotDone != "" {
		t.Fatalf("recorded steps %+v, want the script's %d with when each struck", sch.Steps, len(s.Run.Script))
	}
	cfg, err := lockrun.FromSchedule(sch, schedule.Env{})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Store = t.TempDir()
	out, err := lockrun.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	got, want := fatalKinds(out.Results.Result), fatalKinds(o.Result)
	if len(want) == 0 || !slices.Equal(got, want) {
		t.Errorf("replay broke the lock with %v, the scenario with %v", got, want)
	}
	for _, n := range Checkers() {
		if out.Results.Checkers[n].Verdict != o.Observed[n] {
			t.Errorf("replay: %s %s, the scenario %s", n, out.Results.Checkers[n].Verdict, o.Observed[n])
		}
	}
}
