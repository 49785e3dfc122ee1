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

// The measured effect of stale-replica: n2 misses the master's writes and
// still reports itself a replica, while n3 keeps replicating, so WAIT 1
// acknowledges a write n2 does not have; stop lets n2 catch up.
func TestStaleReplica(t *testing.T) {
	t.Parallel()
	f := start(t, sut.Config{Topology: sut.Replicated, Failover: sut.FailoverManual, Replicas: 2},
		nemesis.Config{Names: []string{"stale-replica"}}, nil)
	ctx := context.Background()
	n1, _ := f.c.Server("n1")
	n2, _ := f.c.Server("n2")
	n3, _ := f.c.Server("n3")
	m := client(t, n1, 2*time.Second)
	r2, r3 := client(t, n2, time.Second), client(t, n3, time.Second)
	f.do(t, nemesis.Step{Nemesis: "stale-replica", Action: "start", Targets: []string{"n2"}, Params: map[string]string{"priority": "10"}})
	if op, _ := last(f.rec, "start-stale-replica"); op.Type != history.OK {
		t.Fatalf("start-stale-replica recorded as %+v", op)
	}
	// WAIT on the connection of the write.
	conn := m.Conn()
	defer conn.Close()
	if err := conn.Set(ctx, "lock-0", "x", 30*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	acked, err := conn.Wait(ctx, 1, time.Second).Result()
	if err != nil || acked < 1 {
		t.Fatalf("WAIT 1: %d, %v; want an acknowledgement from n3", acked, err)
	}
	waitFor(t, 2*time.Second, "n3 has the write", func() bool { return exists(t, r3, "lock-0") })
	time.Sleep(300 * time.Millisecond)
	if exists(t, r2, "lock-0") {
		t.Fatal("the stale replica n2 received the write")
	}
	info, err := r2.Info(ctx, "replication").Result()
	if err != nil || !strings.Contains(info, "role:slave") || !strings.Contains(info, "master_link_status:down") {
		t.Fatalf("n2 should still be a replica with its link down: %v %s", err, info)
	}
	if p, _ := r2.ConfigGet(ctx, "replica-priority").Result(); p["replica-priority"] != "10" {
		t.Fatalf("replica-priority of n2: %v", p)
	}
	f.do(t, nemesis.Step{Nemesis: "stale-replica", Action: "stop", Targets: []string{"n2"}})
	took := waitFor(t, 5*time.Second, "n2 catches up after stop", func() bool { return exists(t, r2, "lock-0") })
	t.Logf("n2 caught up %v after stop", took.Round(time.Millisecond))
	if p, _ := r2.ConfigGet(ctx, "replica-priority").Result(); p["replica-priority"] != "100" {
		t.Fatalf("replica-priority of n2 after stop: %v", p)
	}
}
