package run

import (
	"reflect"
	"testing"
	"time"

	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/nemesis"
	"github.com/lockharness/lockharness/schedule"
	"github.com/lockharness/lockharness/sut"
)

// awaitHolders makes the steps that strike wait for a holder with half
// its lease left, and a step on one node of a multi-node lock for a
// holder granted by every node, a pause of a holder for one whose lease
// outlasts its hold, a kill for one with nine tenths of its lease left;
// the heals that give back what a holder needs (a link, a node) never
// wait for one, but the heal of a holder partition, which the other
// clients hold through, does; and the drawn schedule is not changed.
func TestAwaitHolders(t *testing.T) {
	drawn := []nemesis.Step{
		{At: 2 * time.Second, Nemesis: "kill", Action: "kill", Targets: []string{"n3"}},
		{At: 2 * time.Second, Nemesis: "kill", Action: "restart", Targets: []string{"n3"}},
		{At: 4 * time.Second, Nemesis: "clock", Action: "bump", Targets: []string{"n2"}, Params: map[string]string{"delta": "-3s"}},
		{At: 6 * time.Second, Nemesis: "clock", Action: "reset", Targets: []string{"n2"}},
		{At: 8 * time.Second, Nemesis: "partition", Action: "start", Targets: []string{"c0->n1", "c1->n1"}},
		{At: 10 * time.Second, Nemesis: "partition", Action: "stop", Targets: []string{"c0->n1", "c1->n1"}},
		{At: 12 * time.Second, Nemesis: "client-pause", Action: "holder"},
		{At: 14 * time.Second, Nemesis: "failover", Action: "promote", Targets: []string{"master"}},
		{At: 16 * time.Second, Nemesis: "partition", Action: "start", Params: map[string]string{"pattern": nemesis.PatternHolder}},
		{At: 18 * time.Second, Nemesis: "partition", Action: "stop", Params: map[string]string{"pattern": nemesis.PatternHolder}},
	}
	half := &nemesis.Await{LeaseLeft: 500 * time.Millisecond}
	pause := &nemesis.Await{LeaseLeft: 650 * time.Millisecond} // the hold and a quarter of the lease
	all := &nemesis.Await{LeaseLeft: 500 * time.Millisecond, Granted: []string{"n1", "n2", "n3", "n4", "n5"}}
	// A kill waits for nine tenths of the lease: the node must be back
	// while the held-back holder's lease runs.
	kill := &nemesis.Await{LeaseLeft: 900 * time.Millisecond}
	// The reset of n2's clock: a holder granted by the other four keeps a
	// majority whatever the jump back does to n2.
	others := &nemesis.Await{LeaseLeft: 500 * time.Millisecond, Granted: []string{"n1", "n3", "n4", "n5"}}
	killAll := &nemesis.Await{LeaseLeft: 900 * time.Millisecond, Granted: []string{"n1", "n2", "n3", "n4", "n5"}}
	for _, tc := range []struct {
		nodes int
		want  []*nemesis.Await
	}{
		{5, []*nemesis.Await{killAll, nil, all, others, half, nil, pause, half, half, half}},
		{1, []*nemesis.Await{kill, nil, half, half, half, nil, pause, half, half, half}},
	} {
		got := awaitHolders(drawn, tc.nodes, time.Second, 400*time.Millisecond)
		for i, s := range got {
			if !reflect.DeepEqual(s.Await, tc.want[i]) {
				t.Errorf("%d nodes, step %d (%s): await %+v, want %+v", tc.nodes, i, s, s.Await, tc.want[i])
			}
			if s.At != drawn[i].At || s.Action != drawn[i].Action || drawn[i].Await != nil {
				t.Errorf("%d nodes, step %d: %s, drawn %s", tc.nodes, i, s, drawn[i])
			}
		}
	}
}

// A random run whose faults awaited holders writes the script it drew
// (the times drawn, the awaits), so that its replay waits as it did; one
// without awaits writes the times its steps struck.
func TestScheduleOfAwaitedRandomRun(t *testing.T) {
	step := nemesis.Step{At: 2 * time.Second, Nemesis: "kill", Action: "kill", Targets: []string{"n1"}, Await: &nemesis.Await{LeaseLeft: time.Second}}
	for _, await := range []bool{true, false} {
		e := &executed{start: time.Now()}
		e.done(schedule.StepOf(step), e.start.Add(2600*time.Millisecond), 600*time.Millisecond, "process 1 on lock-0", nil)
		s := e.schedule(Config{Lock: "token", Nemesis: nemesis.Config{Names: []string{"kill"}}, AwaitHolders: await}, nil)
		if len(s.Steps) != 1 || len(s.Nemesis.Names) != 0 {
			t.Fatalf("await %v: %+v", await, s)
		}
		want := 2600 * time.Millisecond
		if await {
			want = 2 * time.Second
		}
		if got := s.Steps[0]; got.At != want || got.Await == nil || got.Struck != 2600*time.Millisecond {
			t.Errorf("await %v: step %+v, want at %v", await, got, want)
		}
	}
}

// A fault on one node awaits a grant by every node only where each node
// grants (Redlock's independent masters): a consensus group's grant is the
// group's, and a kill of one ZooKeeper node awaiting "granted by n1, n2,
// n3" never struck (the matrix's kazoo and Curator kill cells came out
// vacuous, 2026-11-27).
func TestGrantingNodes(t *testing.T) {
	for _, tc := range []struct {
		lock     locks.Info
		topology string
		nodes    int
		want     int
	}{
		{locks.Info{Name: "redlock"}, "", 5, 5},
		{locks.Info{Name: "redlock"}, sut.Independent, 5, 5},
		{locks.Info{Name: "token"}, sut.Replicated, 3, 1},
		{locks.Info{Name: "zk", System: locks.SystemZooKeeper}, "", 3, 1},
		{locks.Info{Name: "etcd", System: locks.SystemEtcd}, "", 3, 1},
	} {
		p := &Plan{Lock: tc.lock, Nodes: tc.nodes, Cluster: sut.Config{Topology: tc.topology}}
		if got := p.grantingNodes(); got != tc.want {
			t.Errorf("%s on %d nodes (%q): %d granting nodes, want %d", tc.lock.Name, tc.nodes, tc.topology, got, tc.want)
		}
	}
}

// undoOf finds the step that ends a fault: the next step of its nemesis,
// on its targets, with an ending action; a fault without one (a client
// pause) has none, and an ending step ends nothing after it.
func TestUndoOf(t *testing.T) {
	steps := []nemesis.Step{
		{At: 2 * time.Second, Nemesis: "clock", Action: "strobe", Targets: []string{"n1"}},
		{At: 2 * time.Second, Nemesis: "client-pause", Action: "holder"},
		{At: 4 * time.Second, Nemesis: "clock", Action: "reset", Targets: []string{"n1"}},
		{At: 6 * time.Second, Nemesis: "partition", Action: "start", Params: map[string]string{"pattern": nemesis.PatternHolder}},
		{At: 6 * time.Second, Nemesis: "client-pause", Action: "holder"},
		{At: 8 * time.Second, Nemesis: "partition", Action: "stop", Params: map[string]string{"pattern": nemesis.PatternHolder}},
	}
	for i, want := range []int{2, -1, -1, 5, -1, -1} {
		j, ok := undoOf(steps, i)
		if !ok {
			j = -1
		}
		if j != want {
			t.Errorf("undo of step %d (%s): %d, want %d", i, steps[i], j, want)
		}
	}
}
