package nemesis_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lockharness/lockharness/nemesis"
	"github.com/lockharness/lockharness/sut"
)

func allNames() []string {
	var out []string
	for _, i := range nemesis.Known() {
		out = append(out, i.Name)
	}
	return out
}

func TestSameSeedSameSchedule(t *testing.T) {
	for _, topo := range []sut.Config{
		{Nodes: 5, Clients: 3},
		{Topology: sut.Replicated, Clients: 2},
		{Topology: sut.Replicated, Failover: sut.FailoverManual},
	} {
		cfg := nemesis.Config{Names: allNames(), Interval: time.Second, Seed: 42,
			Topology: nemesis.TopologyOf(topo.Layout()), Failpoints: []string{"after-set"}}
		a, err := nemesis.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := nemesis.New(cfg)
		sa, sb := a.Schedule(2*time.Minute), b.Schedule(2*time.Minute)
		if len(sa) < 20 {
			t.Fatalf("only %d steps in 2 minutes at 1s interval", len(sa))
		}
		if !reflect.DeepEqual(sa, sb) {
			t.Fatalf("same seed, different schedules:\n%v\n%v", sa, sb)
		}
		cfg.Seed = 43
		c, _ := nemesis.New(cfg)
		if reflect.DeepEqual(sa, c.Schedule(2*time.Minute)) {
			t.Fatal("seeds 42 and 43 gave the same schedule")
		}
		seen := map[string]bool{}
		var prev time.Duration
		for _, s := range sa {
			if s.At < prev {
				t.Fatalf("schedule goes back in time at %v", s)
			}
			prev = s.At
			seen[s.Nemesis] = true
		}
		if len(seen) < 6 {
			t.Errorf("only %d of %d nemeses drawn in 2 minutes: %v", len(seen), len(cfg.Names), seen)
		}
	}
}

func TestNoNemesisNoSchedule(t *testing.T) {
	r, err := nemesis.New(nemesis.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if s := r.Schedule(time.Hour); len(s) != 0 {
		t.Fatalf("empty config scheduled %v", s)
	}
}

func TestUnknownNemesis(t *testing.T) {
	_, err := nemesis.New(nemesis.Config{Names: []string{"partition", "meteor"}})
	var ue *nemesis.UnknownError
	if !errors.As(err, &ue) || ue.Name != "meteor" {
		t.Fatalf("got %v, want UnknownError for meteor", err)
	}
	if !strings.Contains(err.Error(), "partition") || len(ue.Known) != len(nemesis.Known()) {
		t.Fatalf("error does not list the known nemeses: %v", err)
	}
}

func TestKnownDescribed(t *testing.T) {
	want := []string{"client-crash", "client-pause", "clock", "cluster-failover", "data-loss", "failover", "kill", "kill-connection", "latency", "lose-replies", "memory-pressure", "native-partition", "partition", "pause", "renewer-stall", "script-flush", "stale-replica"}
	if got := allNames(); !reflect.DeepEqual(got, want) {
		t.Fatalf("known %v, want %v", got, want)
	}
	for _, i := range nemesis.Known() {
		if i.Description == "" {
			t.Errorf("%s has no description", i.Name)
		}
	}
}

// The partition patterns cut what they say, in every topology.
func TestPartitionPatterns(t *testing.T) {
	topo := nemesis.TopologyOf(sut.Config{Nodes: 5, Clients: 2}.Layout())
	r, err := nemesis.New(nemesis.Config{Names: []string{"partition"}, Seed: 1, Topology: topo,
		PartitionPatterns: []string{nemesis.PatternClientSplit}})
	if err != nil {
		t.Fatal(err)
	}
	s := r.Schedule(10 * time.Second)[0]
	want := []string{"c0->n4", "c0->n5", "c1->n1", "c1->n2"}
	if !reflect.DeepEqual(s.Targets, want) {
		t.Fatalf("client split cuts %v, want %v (c0 reaches n1-n3, c1 n3-n5)", s.Targets, want)
	}
	for seed := uint64(0); seed < 50; seed++ {
		r, _ := nemesis.New(nemesis.Config{Names: []string{"partition"}, Seed: seed,
			Topology: nemesis.TopologyOf(sut.Config{Topology: sut.Replicated, Clients: 2}.Layout())})
		for _, s := range r.Schedule(30 * time.Second) {
			if s.Action == "start" && len(s.Targets) == 0 && s.Params["pattern"] != nemesis.PatternMajoritiesRing {
				t.Fatalf("seed %d: %s cuts nothing", seed, s)
			}
		}
	}
}

// The holder pattern is drawn only when named: its steps name no links
// (the holder's are found when it strikes), and seeds drawn before it
// existed keep their schedules.
func TestPartitionPatternHolder(t *testing.T) {
	topo := nemesis.TopologyOf(sut.Config{Nodes: 1, Clients: 5}.Layout())
	r, err := nemesis.New(nemesis.Config{Names: []string{"partition"}, Seed: 1, Topology: topo,
		PartitionPatterns: []string{nemesis.PatternHolder, nemesis.PatternHalves}})
	if err != nil {
		t.Fatal(err)
	}
	steps := r.Schedule(10 * time.Second)
	if len(steps) == 0 {
		t.Fatal("no steps")
	}
	for _, s := range steps {
		if s.Params["pattern"] != nemesis.PatternHolder || len(s.Targets) != 0 {
			t.Fatalf("one node, patterns holder and halves: %s, want the holder pattern with no links named", s)
		}
	}
	for seed := uint64(0); seed < 50; seed++ {
		r, _ := nemesis.New(nemesis.Config{Names: []string{"partition"}, Seed: seed, Topology: topo})
		for _, s := range r.Schedule(30 * time.Second) {
			if s.Params["pattern"] == nemesis.PatternHolder {
				t.Fatalf("seed %d drew the holder pattern unasked: %s", seed, s)
			}
		}
	}
}

// ClockModes [bump] turns every strobe and drift into a bump of the same
// node by the delta drawn: the rest of each seed's draws do not move.
func TestClockModes(t *testing.T) {
	topo := nemesis.TopologyOf(sut.Config{Nodes: 5, Clients: 2}.Layout())
	for seed := uint64(0); seed < 30; seed++ {
		all, _ := nemesis.New(nemesis.Config{Names: []string{"clock"}, Seed: seed, Topology: topo})
		bumps, _ := nemesis.New(nemesis.Config{Names: []string{"clock"}, Seed: seed, Topology: topo, ClockModes: []string{"bump"}})
		a, b := all.Schedule(20*time.Second), bumps.Schedule(20*time.Second)
		if len(a) != len(b) {
			t.Fatalf("seed %d: %d steps with every mode, %d with bumps", seed, len(a), len(b))
		}
		for i := range a {
			if a[i].At != b[i].At || !reflect.DeepEqual(a[i].Targets, b[i].Targets) {
				t.Fatalf("seed %d step %d: %s with every mode, %s with bumps", seed, i, a[i], b[i])
			}
			if b[i].Action != "bump" && b[i].Action != "reset" {
				t.Fatalf("seed %d step %d: %s, want a bump or a reset", seed, i, b[i])
			}
			if a[i].Action == "bump" && !reflect.DeepEqual(a[i].Params, b[i].Params) {
				t.Fatalf("seed %d step %d: the bump %s became %s", seed, i, a[i], b[i])
			}
		}
	}
}

// A killed node restarts RestartDelay after the kill (antirez's delayed
// restart); a paused one resumes PauseDuration after the pause.
func TestScheduleDurations(t *testing.T) {
	r, err := nemesis.New(nemesis.Config{Names: []string{"kill", "pause"}, Seed: 9, Interval: time.Second,
		RestartDelay: 3 * time.Second, PauseDuration: 2 * time.Second, Topology: nemesis.TopologyOf(sut.Config{Nodes: 3}.Layout())})
	if err != nil {
		t.Fatal(err)
	}
	steps := r.Schedule(time.Minute)
	for i := 0; i+1 < len(steps); i += 2 {
		a, b := steps[i], steps[i+1]
		want := map[string]time.Duration{"kill": 3 * time.Second, "pause": 2 * time.Second}[a.Action]
		if b.At-a.At != want || !reflect.DeepEqual(a.Targets, b.Targets) {
			t.Fatalf("%v then %v: want the heal %v later on the same node", a, b, want)
		}
		if i+2 < len(steps) && steps[i+2].At-b.At != time.Second {
			t.Fatalf("%v then %v: want Interval of quiet between faults", b, steps[i+2])
		}
	}
}
