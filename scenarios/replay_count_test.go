package scenarios

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/lockharness/lockharness/checker"
	lockrun "github.com/lockharness/lockharness/run"
	"github.com/lockharness/lockharness/schedule"
)

// The counts of a run's replays: a replay reproduces when it shows the
// run's target kind, whatever else it shows; the stricter counts want the
// run's kinds exactly and its verdicts; a replay that failed counts in
// none.
func TestReplaysCount(t *testing.T) {
	vs := []checker.Violation{
		{Checker: checker.Resource, Kind: "lost-update", Fatal: true, Start: 0, End: 10},
		{Checker: checker.LockPromise, Kind: "overlap", Fatal: true, Start: 0, End: 5},
		{Checker: checker.Resource, Kind: "stale-write", Fatal: false},
		{Checker: checker.LockPromise, Kind: "overlap", Fatal: true, Start: 1, End: 2},
	}
	if got := FatalKinds(vs); !slices.Equal(got, []string{"lock-promise/overlap", "resource/lost-update"}) {
		t.Errorf("FatalKinds = %v", got)
	}
	target, ok := RunTarget(vs)
	if !ok || target.String() != "lock-promise/overlap" {
		t.Errorf("RunTarget = %v %v, want lock-promise/overlap (lock-promise first)", target, ok)
	}
	if _, ok := RunTarget(vs[2:3]); ok {
		t.Error("RunTarget of a run without a fatal violation found one")
	}
	inv := map[string]checker.Verdict{checker.LockPromise: checker.Invalid, checker.Resource: checker.Invalid, checker.Liveness: checker.Valid}
	other := map[string]checker.Verdict{checker.LockPromise: checker.Invalid, checker.Resource: checker.Valid, checker.Liveness: checker.Valid}
	r := Replays{Target: target, Kinds: FatalKinds(vs), Verdicts: inv, Runs: []Replayed{
		{Kinds: []string{"lock-promise/overlap", "resource/lost-update"}, Verdicts: inv, Target: true},
		{Kinds: []string{"lock-promise/overlap"}, Verdicts: other, Target: true},
		{Kinds: nil, Verdicts: map[string]checker.Verdict{}},
		{Err: errors.New("no servers"), Verdicts: inv, Kinds: []string{"lock-promise/overlap", "resource/lost-update"}},
	}}
	if r.Reproduced() != 2 || r.SameKinds() != 1 || r.SameVerdicts() != 1 {
		t.Errorf("reproduced %d, same kinds %d, same verdicts %d; want 2, 1, 1", r.Reproduced(), r.SameKinds(), r.SameVerdicts())
	}
	if !(Expect{Liveness: checker.Invalid}).Invalid() || (Expect{checker.Valid, checker.Valid, checker.Valid}).Invalid() {
		t.Error("Expect.Invalid")
	}
}

// The schedule a scenario's run writes (run.ScheduleOf, its schedule.yaml)
// reads back, as `harness run --schedule` reads it with the built-in
// locks only, into the scenario's lock: abandoned-wait-orphan-lock's lock
// is one of the deliberately buggy variants, so its schedule.yaml must
// name that registry, or its replay is refused ("unknown lock").
func TestEveryScenarioScheduleReplays(t *testing.T) {
	for _, s := range Catalogue() {
		var b strings.Builder
		if err := schedule.Write(&b, lockrun.ScheduleOf(s.RunConfig("store").WithDefaults())); err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
		sch, err := schedule.Parse(strings.NewReader(b.String()), schedule.Env{})
		if err != nil {
			t.Errorf("%s: its run's schedule.yaml does not read back: %v", s.Name, err)
			continue
		}
		cfg, err := lockrun.FromSchedule(sch, schedule.Env{})
		if err != nil {
			t.Errorf("%s: %v", s.Name, err)
			continue
		}
		if _, err := cfg.Registry.Lookup(s.Lock); err != nil || cfg.Lock != s.Lock {
			t.Errorf("%s: the replay runs lock %q: %v", s.Name, cfg.Lock, err)
		}
	}
}
