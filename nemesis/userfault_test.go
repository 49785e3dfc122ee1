package nemesis_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/nemesis"
	"github.com/lockharness/lockharness/registry"
	"github.com/lockharness/lockharness/reports"
	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/sut/redis/redistest"
)

// cutClient is a fault of a user's own, written outside the package: it
// cuts a client off from every node (every link from that client, through
// the seam), and mends it. It needs nothing the deployment's heal cannot
// undo, so it is no Healer.
type cutClient struct {
	cuts int // actions done by this instance: its state is the Runner's own
}

func (*cutClient) Info() nemesis.Info {
	return nemesis.Info{
		Name:        "cut-client",
		Description: "cut one client off from every node, then mend it",
		Strikes:     []string{"cut-client"},
		Needs:       sut.Needs{Capabilities: []sut.Capability{sut.CanCutLinks}},
		Kinds:       []history.FaultKind{{Name: "client cut", Label: "client cut off", Colour: "#e377c2"}},
	}
}

func (*cutClient) Generate(rng *rand.Rand, cfg nemesis.Config, topo nemesis.Topology) []nemesis.Step {
	c := []string{sut.ClientName(rng.IntN(topo.Clients))}
	return []nemesis.Step{
		{Action: "cut", Targets: c},
		{At: cfg.Interval, Action: "mend", Targets: c},
	}
}

func (*cutClient) Setup(context.Context, *nemesis.Exec) error { return nil }

func (f *cutClient) Do(ctx context.Context, x *nemesis.Exec, s nemesis.Step) error {
	if len(s.Targets) == 0 { // a scripted step left it open
		s.Targets = []string{sut.ClientName(x.Rand().IntN(x.Topology().Clients))}
	}
	var links []sut.Link
	for _, l := range x.Deployment().Network().Links() {
		if slices.Contains(s.Targets, l.From()) {
			links = append(links, l)
		}
	}
	if len(links) == 0 {
		return fmt.Errorf("no links from %v: %w", s.Targets, nemesis.ErrNotDone)
	}
	var names []string
	for _, l := range links {
		names = append(names, l.Name())
	}
	switch s.Action {
	case "cut":
		f.cuts++
		return x.Record("cut-client", nemesis.Event{Fault: "client cut"}, names, func() (string, error) {
			var errs []error
			for _, l := range links {
				errs = append(errs, l.Cut())
			}
			return strings.Join(s.Targets, ", ") + " cut off", errors.Join(errs...)
		})
	case "mend":
		return x.Record("mend-client", nemesis.Event{Ends: []string{"client cut"}}, names, func() (string, error) {
			var errs []error
			for _, l := range links {
				errs = append(errs, l.Uncut(ctx))
			}
			return "", errors.Join(errs...)
		})
	}
	return fmt.Errorf("unknown action %q (want cut or mend)", s.Action)
}

func (f *cutClient) Reset() { f.cuts = 0 }

// A fault of the user's registers next to the built-in ones and is found;
// a Runner given that registry draws it into its schedule, does it on a
// real deployment (a client through the cut link times out, the others
// do not), records it with the kind it declared, and the final heal
// undoes it. The report's reading of that history, with the registry's
// fault kinds in the record, draws it as the fault said.
func TestUserFault(t *testing.T) {
	reg := nemesis.Builtin()
	if err := reg.Register(func() nemesis.Fault { return &cutClient{} }); err != nil {
		t.Fatal(err)
	}
	if err := reg.Register(func() nemesis.Fault { return &cutClient{} }); !errors.Is(err, registry.ErrDuplicate) {
		t.Errorf("cut-client twice: %v", err)
	}
	if info, err := reg.Lookup("cut-client"); err != nil || info.Strikes[0] != "cut-client" {
		t.Errorf("lookup: %+v, %v", info, err)
	}
	if !slices.Contains(reg.Names(), "cut-client") || len(reg.All()) != len(nemesis.Known())+1 {
		t.Errorf("names %v", reg.Names())
	}
	kinds := reg.FaultKinds()
	if len(kinds) != len(nemesis.FaultKinds())+1 || kinds[len(kinds)-1].Name != "client cut" {
		t.Errorf("fault kinds end with %+v, want the built-in ones then client cut", kinds[len(kinds)-1])
	}
	// The built-in registry and a Runner without the user's do not know it.
	var ue *nemesis.UnknownError
	if _, err := nemesis.Lookup("cut-client"); !errors.As(err, &ue) {
		t.Errorf("the built-in registry found cut-client: %v", err)
	}
	if _, err := nemesis.New(nemesis.Config{Names: []string{"cut-client"}}); !errors.As(err, &ue) || ue.Kind != "nemesis" {
		t.Errorf("a runner of the built-in faults took cut-client: %v", err)
	}

	if testing.Short() {
		t.Skip("-short: starts redis-server")
	}
	c := redistest.Up(t, sut.Config{Nodes: 2, Clients: 2})
	cfg := nemesis.Config{Names: []string{"cut-client"}, Registry: reg, Seed: 3, Interval: 300 * time.Millisecond}
	r, err := nemesis.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rec := history.NewRecorder(history.NewClock(), io.Discard)
	env := nemesis.Env{Deployment: c, Recorder: rec}
	ctx := context.Background()
	if err := r.Setup(ctx, env); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := r.Heal(ctx, env); err != nil {
			t.Errorf("final heal: %v", err)
		}
		if err := nemesis.Healthy(ctx, c); err != nil {
			t.Errorf("after the final heal: %v", err)
		}
	}()
	steps := r.Schedule(time.Second)
	if len(steps) != 3 || steps[0].Nemesis != "cut-client" || steps[0].Action != "cut" || steps[1].Action != "mend" {
		t.Fatalf("schedule %v", steps)
	}

	// A scripted cut of c1: it really cuts c1 off, and only c1.
	if err := r.Do(ctx, env, nemesis.Step{Nemesis: "cut-client", Action: "cut", Targets: []string{"c1"}}); err != nil {
		t.Fatal(err)
	}
	for _, cl := range []string{"c0", "c1"} {
		l, err := c.Link(cl, "n2")
		if err != nil {
			t.Fatal(err)
		}
		err = proxied(t, l.Addr(), 200*time.Millisecond).Ping(ctx).Err()
		if cut := cl == "c1"; cut != (err != nil) {
			t.Errorf("%s->n2 after cutting c1: %v", cl, err)
		}
	}
	if err := r.Do(ctx, env, nemesis.Step{Nemesis: "cut-client", Action: "mend", Targets: []string{"c1"}}); err != nil {
		t.Fatal(err)
	}

	// The random schedule: cut at 300ms, mend at 600ms, cut at 900ms,
	// left for the final heal. With the scripted pair above: three cuts,
	// two mends.
	rctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if err := r.Run(rctx, env); err != nil {
		t.Fatal(err)
	}
	var cuts, mends int
	for _, op := range rec.Ops() {
		if op.Type != history.OK {
			continue
		}
		switch op.F {
		case "cut-client":
			cuts++
			if op.Value.Fault != "client cut" || len(op.Value.Targets) != 2 {
				t.Errorf("cut-client recorded as %+v", op.Value)
			}
		case "mend-client":
			mends++
			if !slices.Equal(op.Value.Ends, []string{"client cut"}) {
				t.Errorf("mend-client recorded as %+v", op.Value)
			}
		}
	}
	if cuts != 3 || mends != 2 {
		t.Errorf("%d cuts and %d mends recorded, want 3 and 2", cuts, mends)
	}

	// Drawn as it said: its colour and its words, from the record's kinds.
	faults := reports.Faults(reports.Record{FaultKinds: reg.FaultKinds()}, rec.Ops())
	if len(faults) != 3 {
		t.Fatalf("faults %+v, want three windows", faults)
	}
	for _, f := range faults {
		if f.Family != "client cut" || f.Kind.Colour != "#e377c2" || f.Kind.Label != "client cut off" {
			t.Errorf("fault %+v, not drawn as cut-client says", f)
		}
	}
	if !faults[0].Stopped || faults[2].Stopped {
		t.Errorf("the first cut was mended, the last one left open: %+v", faults)
	}
}
