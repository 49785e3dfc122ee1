package nemesis_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/nemesis"
	"github.com/lockharness/lockharness/sut"
	redisbackend "github.com/lockharness/lockharness/sut/redis"
)

// A lock written on the master while the replication link is frozen is
// missing on the promoted replica, every time, and a second client gets it.
func TestFailoverManualLosesLock(t *testing.T) {
	t.Parallel()
	f := start(t, sut.Config{Topology: sut.Replicated, Failover: sut.FailoverManual, Clients: 2},
		nemesis.Config{Names: []string{"failover"}, Seed: 7}, nil)
	ctx := context.Background()
	a := f.c.ClientNodes(0, sut.ClientOptions{})[0].Client
	b := f.c.ClientNodes(1, sut.ClientOptions{})[0].Client
	t.Cleanup(func() { _ = a.Close(); _ = b.Close() })
	for i := 0; i < 5; i++ {
		old := f.c.Master()
		f.do(t, nemesis.Step{Nemesis: "failover", Action: "cut", Targets: []string{"replica"},
			Params: map[string]string{"pick": "0"}})
		key := "lock"
		// A client's first command after a move may meet its closed
		// pooled connection (the command was never sent).
		if err := retry(func() error { return a.Do(ctx, "set", key, "tokA", "px", 30000, "nx").Err() }); err != nil {
			t.Fatalf("round %d: client A's acquire: %v", i, err)
		}
		t0 := time.Now()
		f.do(t, nemesis.Step{Nemesis: "failover", Action: "promote"})
		promoted := time.Since(t0)
		nm := f.c.Master()
		if nm == old {
			t.Fatalf("round %d: master did not move", i)
		}
		if exists(t, client(t, nm, time.Second), key) {
			t.Fatalf("round %d: the lock reached the promoted replica %s through a frozen link", i, nm.Name)
		}
		// Client B follows the new master and gets the lock A still holds
		// on the old one.
		if err := retry(func() error { return b.Do(ctx, "set", key, "tokB", "px", 30000, "nx").Err() }); err != nil {
			t.Fatalf("round %d: client B's acquire on the new master: %v", i, err)
		}
		if v, _ := client(t, old, time.Second).Get(ctx, key).Result(); v != "tokA" {
			t.Fatalf("round %d: old master has %q, want tokA", i, v)
		}
		f.do(t, nemesis.Step{Nemesis: "failover", Action: "demote"})
		// After the demotion the old master resyncs from the new one.
		waitFor(t, 10*time.Second, "topology healthy", func() bool { return nemesis.Healthy(ctx, f.c) == nil })
		t.Logf("round %d: %s promoted in %v, lock lost", i, nm.Name, promoted.Round(time.Microsecond))
		if err := retry(func() error { return b.Del(ctx, key).Err() }); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 5*time.Second, "delete replicated", func() bool { return !exists(t, client(t, old, time.Second), key) })
	}
	for _, fn := range []string{"cut-replication", "promote", "demote"} {
		if op, ok := last(f.rec, fn); !ok || op.Type != history.OK {
			t.Fatalf("%s recorded as %+v", fn, op)
		}
	}
}

// Sentinel promotes a replica after the master is paused, and demotes the
// old master after it comes back.
func TestFailoverSentinel(t *testing.T) {
	t.Parallel()
	f := start(t, sut.Config{Topology: sut.Replicated},
		nemesis.Config{Names: []string{"failover"}}, nil)
	ctx := context.Background()
	old := f.c.Master()
	t0 := time.Now()
	f.do(t, nemesis.Step{Nemesis: "failover", Action: "start", Targets: []string{"master"}, Params: map[string]string{"how": "pause"}})
	promoted := time.Since(t0)
	op, _ := last(f.rec, "await-promotion")
	if op.Type != history.OK {
		t.Fatalf("await-promotion: %+v", op)
	}
	nm := f.c.Master()
	if nm == old {
		t.Fatal("no replica promoted")
	}
	if ri, err := redisbackend.ReplicationOf(ctx, nm); err != nil || ri.Role != "master" {
		t.Fatalf("%s after promotion: %+v %v", nm.Name, ri, err)
	}
	t.Logf("sentinel: %s paused, %s promoted after %v (%s)", old.Name, nm.Name, promoted.Round(time.Millisecond), op.Value.Detail)
	// A client asking Sentinel now writes to the new master.
	cl := f.c.ClientNodes(0, sut.ClientOptions{Timeout: time.Second})[0].Client
	t.Cleanup(func() { _ = cl.Close() })
	waitFor(t, 5*time.Second, "client reaches the new master", func() bool {
		return cl.Set(ctx, "after", "1", 0).Err() == nil
	})
	if !exists(t, client(t, nm, time.Second), "after") {
		t.Fatal("the client's write did not land on the new master")
	}
	t0 = time.Now()
	f.do(t, nemesis.Step{Nemesis: "failover", Action: "stop"})
	op, _ = last(f.rec, "heal-master")
	if op.Type != history.OK {
		t.Fatalf("heal-master: %+v", op)
	}
	if ri, err := redisbackend.ReplicationOf(ctx, old); err != nil || ri.Role != "slave" {
		t.Fatalf("old master %s after heal: %+v %v", old.Name, ri, err)
	}
	t.Logf("sentinel: old master %s demoted %v after SIGCONT (%s)", old.Name, time.Since(t0).Round(time.Millisecond), op.Value.Detail)
}

func retry(fn func() error) error {
	var err error
	for try := 0; try < 3; try++ {
		if err = fn(); err == nil {
			return nil
		}
	}
	return err
}

// The manual failover's steps act on the nodes they name, when they name
// them; a demote or a heal with nothing to undo certainly did not happen
// (ErrNotDone, recorded as fail); a promote without a cut before it takes
// the first replica; an action it does not know is refused.
func TestFailoverManualNamedNodesAndNothingToDo(t *testing.T) {
	t.Parallel()
	f := start(t, sut.Config{Topology: sut.Replicated, Failover: sut.FailoverManual, Nodes: 3, Clients: 1},
		nemesis.Config{Names: []string{"failover"}, Seed: 7}, nil)
	ctx := context.Background()
	notDone := func(s nemesis.Step, fn string) {
		t.Helper()
		err := f.r.Do(ctx, f.env, s)
		if op, _ := last(f.rec, fn); !errors.Is(err, nemesis.ErrNotDone) || op.Type != history.Fail || len(op.Value.Targets) != 0 {
			t.Fatalf("%s with nothing to do: %v, recorded %+v", s.Action, err, op)
		}
	}
	notDone(nemesis.Step{Nemesis: "failover", Action: "demote"}, "demote")
	notDone(nemesis.Step{Nemesis: "failover", Action: "stop"}, "heal-master")
	if err := f.r.Do(ctx, f.env, nemesis.Step{Nemesis: "failover", Action: "swap"}); err == nil || !strings.Contains(err.Error(), `unknown action "swap"`) {
		t.Fatalf("an unknown action: %v", err)
	}

	// Without a cut first: the first replica is promoted, and nothing is
	// left to uncut.
	f.do(t, nemesis.Step{Nemesis: "failover", Action: "promote"})
	if op, _ := last(f.rec, "promote"); op.Type != history.OK || op.Value.Targets[0] != "n2" || op.Value.Detail != "REPLICAOF NO ONE; clients moved from n1" {
		t.Fatalf("promote without a cut recorded as %+v", op)
	}
	f.do(t, nemesis.Step{Nemesis: "failover", Action: "demote"})
	if op, _ := last(f.rec, "demote"); op.Type != history.OK || op.Value.Targets[0] != "n1" || op.Value.Detail != "follows n2" {
		t.Fatalf("demote after the promote recorded as %+v", op)
	}
	waitFor(t, 10*time.Second, "topology healthy", func() bool { return nemesis.Healthy(ctx, f.c) == nil })

	// Named: cut n3's link to the master (n2 now), promote n3, demote n2
	// by name.
	f.do(t, nemesis.Step{Nemesis: "failover", Action: "cut", Targets: []string{"n3"}})
	if op, _ := last(f.rec, "cut-replication"); op.Type != history.OK || len(op.Value.Targets) != 1 || op.Value.Targets[0] != "n3->n2" {
		t.Fatalf("cut of n3 recorded as %+v", op)
	}
	f.do(t, nemesis.Step{Nemesis: "failover", Action: "promote", Targets: []string{"n3"}})
	if m := f.c.Master().Name; m != "n3" {
		t.Fatalf("master after promoting n3: %s", m)
	}
	if l, _ := f.c.Link("n3", "n2"); l.IsCut() {
		t.Fatal("the frozen link stayed cut after the promotion")
	}
	f.do(t, nemesis.Step{Nemesis: "failover", Action: "demote", Targets: []string{"n2"}})
	if op, _ := last(f.rec, "demote"); op.Type != history.OK || op.Value.Detail != "follows n3" || op.Value.Targets[0] != "n2" {
		t.Fatalf("demote of n2 recorded as %+v", op)
	}
	waitFor(t, 10*time.Second, "topology healthy", func() bool { return nemesis.Healthy(ctx, f.c) == nil })
}

// Sentinel promotes a replica after the master is isolated (every link to
// and from it cut), and demotes the old master once its links are back.
func TestFailoverSentinelIsolate(t *testing.T) {
	t.Parallel()
	f := start(t, sut.Config{Topology: sut.Replicated},
		nemesis.Config{Names: []string{"failover"}}, nil)
	ctx := context.Background()
	old := f.c.Master()
	f.do(t, nemesis.Step{Nemesis: "failover", Action: "start", Targets: []string{"master"}, Params: map[string]string{"how": "isolate"}})
	op, _ := last(f.rec, "isolate-master")
	if op.Type != history.OK || op.Value.Fault != "master isolated" || op.Value.Detail != "every link to and from it blackholed" {
		t.Fatalf("isolate-master recorded as %+v", op)
	}
	for _, l := range f.c.Network().Links() {
		if (l.From() == old.Name || l.To() == old.Name) && !l.IsCut() {
			t.Errorf("link %s of the isolated master is not cut", l.Name())
		}
	}
	if op, _ := last(f.rec, "await-promotion"); op.Type != history.OK {
		t.Fatalf("await-promotion: %+v", op)
	}
	if nm := f.c.Master(); nm == old {
		t.Fatal("no replica promoted")
	}
	f.do(t, nemesis.Step{Nemesis: "failover", Action: "stop"})
	op, _ = last(f.rec, "heal-master")
	if op.Type != history.OK || !strings.Contains(op.Value.Detail, old.Name+" demoted by Sentinel") {
		t.Fatalf("heal-master: %+v", op)
	}
	for _, l := range f.c.Network().Links() {
		if l.IsCut() {
			t.Errorf("link %s still cut after the heal", l.Name())
		}
	}
	if ri, err := redisbackend.ReplicationOf(ctx, old); err != nil || ri.Role != "slave" {
		t.Fatalf("old master %s after heal: %+v %v", old.Name, ri, err)
	}
}
