package nemesis_test

import (
	"context"
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
