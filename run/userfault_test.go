package run_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/nemesis"
	"github.com/lockharness/lockharness/reports"
	"github.com/lockharness/lockharness/run"
	"github.com/lockharness/lockharness/workloads"
)

// note is a fault of a user's own that harms nothing: it notes a period
// in the history, as a fault of kind "noted".
type note struct{}

func (note) Info() nemesis.Info {
	return nemesis.Info{Name: "note", Description: "note a period in the history", Strikes: []string{"start-note"},
		Kinds: []history.FaultKind{{Name: "noted", Label: "noted", Colour: "#17becf"}}}
}

func (note) Generate(_ *rand.Rand, cfg nemesis.Config, _ nemesis.Topology) []nemesis.Step {
	return []nemesis.Step{{Action: "start"}, {At: cfg.Interval, Action: "stop"}}
}

func (note) Setup(context.Context, *nemesis.Exec) error { return nil }

func (note) Do(_ context.Context, x *nemesis.Exec, s nemesis.Step) error {
	if s.Action == "start" {
		return x.Record("start-note", nemesis.Event{Fault: "noted"}, nil, func() (string, error) { return "", nil })
	}
	return x.Record("stop-note", nemesis.Event{Ends: []string{"noted"}}, nil, func() (string, error) { return "", nil })
}

func (note) Reset() {}

// noteRegistry is the built-in faults and note.
func noteRegistry(t *testing.T) *nemesis.Registry {
	t.Helper()
	reg := nemesis.Builtin()
	if err := reg.Register(func() nemesis.Fault { return note{} }); err != nil {
		t.Fatal(err)
	}
	return reg
}

// A run looks its nemeses up in the registry it is given
// (nemesis.Config.Registry), a user's fault among them: named or
// scripted, it is validated, required to strike, and drawn.
func TestUserFaultValidates(t *testing.T) {
	reg := noteRegistry(t)
	p, err := run.NewPlan(run.Config{Lock: "token", Nemesis: nemesis.Config{Names: []string{"note"}, Registry: reg},
		Script: []nemesis.Step{{Nemesis: "note", Action: "start"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Require) != 1 || p.Require[0].Name != "the note nemesis" || !slices.Equal(p.Require[0].Faults, []string{"start-note"}) {
		t.Errorf("requirements %+v", p.Require)
	}
	if err := (run.Config{Lock: "token", Nemesis: nemesis.Config{Names: []string{"note"}}}).Validate(); err == nil {
		t.Error("note validated without the registry that has it")
	}
}

// A run of a user's fault records its actions and the way it is drawn.
func TestUserFaultRuns(t *testing.T) {
	requireRedis(t)
	t.Parallel()
	out, err := run.Run(context.Background(), run.Config{
		Lock: "token", Seed: 2, TimeLimit: 2 * time.Second, Recovery: 500 * time.Millisecond, Store: t.TempDir(), AllowVacuous: true,
		Workload: workloads.Config{Clients: 2, TTL: time.Second, Hold: 100 * time.Millisecond},
		Nemesis:  nemesis.Config{Names: []string{"note"}, Interval: 500 * time.Millisecond, Registry: noteRegistry(t)},
	})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	rec, ok, err := reports.ReadRecord(out.Dir)
	if err != nil || !ok || !slices.ContainsFunc(rec.FaultKinds, func(k history.FaultKind) bool { return k.Name == "noted" }) {
		t.Errorf("run.json's fault kinds lack the user's: %v, %v", ok, err)
	}
	if n := out.Results.Counts["start-note"]["ok"]; n == 0 {
		t.Errorf("no note recorded: %v", out.Results.Counts)
	}
}
