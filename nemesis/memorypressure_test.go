package nemesis_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/nemesis"
	"github.com/lockharness/lockharness/sut"
)

// The measured effect of memory-pressure: under allkeys-lru a lock key set
// before the fault (with a TTL far away) is evicted by the filler, and
// another client's SET NX succeeds; stop restores the limit and deletes the
// filler; the final heal restores a node left under pressure.
func TestMemoryPressureEvictsLockKeys(t *testing.T) {
	t.Parallel()
	f := start(t, sut.Config{Nodes: 2}, nemesis.Config{Names: []string{"memory-pressure"}}, nil)
	ctx := context.Background()
	n1, _ := f.c.Server("n1")
	cl := client(t, n1, 2*time.Second)
	setLock(t, cl, "lock-0", 30*time.Second)
	f.do(t, nemesis.Step{Nemesis: "memory-pressure", Action: "start", Targets: []string{"n1"}})
	op, _ := last(f.rec, "start-memory-pressure")
	if op.Type != history.OK || !strings.Contains(op.Value.Detail, "allkeys-lru") {
		t.Fatalf("start-memory-pressure recorded as %+v", op)
	}
	t.Logf("%s", op.Value.Detail)
	if exists(t, cl, "lock-0") {
		t.Fatal("the lock key survived the memory pressure")
	}
	if ok, err := cl.SetNX(ctx, "lock-0", "other", 30*time.Second).Result(); err != nil || !ok {
		t.Fatalf("another client's SET NX after the eviction: %v %v, want granted", ok, err)
	}
	f.do(t, nemesis.Step{Nemesis: "memory-pressure", Action: "stop", Targets: []string{"n1"}})
	if mm, _ := cl.ConfigGet(ctx, "maxmemory").Result(); mm["maxmemory"] != "0" {
		t.Fatalf("maxmemory after stop: %v", mm)
	}
	if keys, _ := cl.Keys(ctx, "filler:*").Result(); len(keys) != 0 {
		t.Fatalf("%d filler keys left after stop", len(keys))
	}
	// Left under pressure: the final heal restores it.
	n2, _ := f.c.Server("n2")
	f.do(t, nemesis.Step{Nemesis: "memory-pressure", Action: "start", Targets: []string{"n2"}})
	if err := f.r.Heal(ctx, f.env); err != nil {
		t.Fatal(err)
	}
	heal, _ := last(f.rec, history.FFinalHeal)
	if mm, _ := client(t, n2, time.Second).ConfigGet(ctx, "maxmemory").Result(); mm["maxmemory"] != "0" || !strings.Contains(heal.Value.Detail, "memory limit restored on n2") {
		t.Errorf("maxmemory of n2 after the final heal: %v (heal: %s)", mm, heal.Value.Detail)
	}
}

// Under noeviction nothing is evicted: the filler runs into the limit, the
// limit is halved so that every write needing memory is refused, and the
// lock key set before the fault survives; stop restores the limit and the
// policy the node had.
func TestMemoryPressureNoevictionRefusesWrites(t *testing.T) {
	t.Parallel()
	f := start(t, sut.Config{Nodes: 1}, nemesis.Config{Names: []string{"memory-pressure"}}, nil)
	ctx := context.Background()
	n1, _ := f.c.Server("n1")
	cl := client(t, n1, 2*time.Second)
	setLock(t, cl, "lock-0", 30*time.Second)
	f.do(t, nemesis.Step{Nemesis: "memory-pressure", Action: "start", Targets: []string{"n1"},
		Params: map[string]string{"policy": "noeviction", "headroom": "1048576", "fill": "16777216"}})
	op, _ := last(f.rec, "start-memory-pressure")
	if op.Type != history.OK || !strings.Contains(op.Value.Detail, "noeviction") ||
		!strings.HasSuffix(op.Value.Detail, "0 keys evicted, writes refused (OOM)") {
		t.Fatalf("start-memory-pressure recorded as %+v", op)
	}
	t.Logf("%s", op.Value.Detail)
	if !exists(t, cl, "lock-0") {
		t.Fatal("the lock key was evicted under noeviction")
	}
	if err := cl.Set(ctx, "lock-1", "other", 30*time.Second).Err(); err == nil || !strings.Contains(err.Error(), "OOM") {
		t.Fatalf("a write under noeviction at the limit: %v, want OOM", err)
	}
	f.do(t, nemesis.Step{Nemesis: "memory-pressure", Action: "stop", Targets: []string{"n1"}})
	cfg, _ := cl.ConfigGet(ctx, "maxmemory*").Result()
	if cfg["maxmemory"] != "0" || cfg["maxmemory-policy"] != "noeviction" {
		t.Fatalf("after stop: %v, want maxmemory 0 and the node's own policy", cfg)
	}
	if keys, _ := cl.Keys(ctx, "filler:*").Result(); len(keys) != 0 {
		t.Fatalf("%d filler keys left after stop", len(keys))
	}
}
