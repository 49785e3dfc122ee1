package rediscluster_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/sut/redis/redistest"
	"github.com/lockharness/lockharness/sut/rediscluster"
)

// BenchmarkRedisClusterUp is how long a Redis Cluster of 3 masters and 3
// replicas takes from nothing to consistent (every node says ok, every
// replica in sync).
func BenchmarkRedisClusterUp(b *testing.B) {
	redistest.Require(b, "redis-server")
	for i := 0; i < b.N; i++ {
		c, err := rediscluster.Up(context.Background(), sut.Config{})
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		_ = c.Down()
		b.StartTimer()
	}
}

// BenchmarkRedisClusterFailover is one CLUSTER FAILOVER of lock-0's
// master to its replica, from the command to the replica reporting
// itself master of the slot, in each mode (the replica in sync). Between
// two the cluster settles, untimed, and twice the node timeout passes: a
// master refuses to vote again about the same master's slots before that
// (so graceful and FORCE failovers of the same pair in quick succession
// time out; TAKEOVER needs no vote).
func BenchmarkRedisClusterFailover(b *testing.B) {
	redistest.Require(b, "redis-server")
	ctx := context.Background()
	const timeout = time.Second
	c, err := rediscluster.Up(ctx, sut.Config{ClusterNodeTimeout: timeout})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Down() })
	for _, mode := range []string{sut.FailoverGraceful, sut.FailoverForce, sut.FailoverTakeover} {
		b.Run("mode="+mode, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				settle(b, c)
				time.Sleep(2 * timeout)
				sh, err := c.Shard(ctx, c.Slot("lock-0"))
				if err != nil || len(sh.Replicas) == 0 {
					b.Fatalf("%+v %v", sh, err)
				}
				b.StartTimer()
				if err := c.Failover(ctx, sh.Replicas[0], mode); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRedisClusterMoveSlot is one slot move of lock-0's slot, with
// its one key, to the next master.
func BenchmarkRedisClusterMoveSlot(b *testing.B) {
	redistest.Require(b, "redis-server")
	ctx := context.Background()
	c, err := rediscluster.Up(ctx, sut.Config{Clients: 1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Down() })
	nodes := c.ClientNodes(0, sut.ClientOptions{Timeout: time.Second})
	b.Cleanup(func() { sut.CloseClientNodes(nodes) })
	slot := c.Slot("lock-0")
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		settle(b, c)
		if err := nodes[0].Client.Set(ctx, "lock-0", "tok", time.Minute).Err(); err != nil {
			b.Fatal(err)
		}
		sh, err := c.Shard(ctx, slot)
		if err != nil {
			b.Fatal(err)
		}
		to := map[string]string{"n1": "n2", "n2": "n3", "n3": "n1"}[sh.Master]
		b.StartTimer()
		if n, err := c.MoveSlot(ctx, slot, to); err != nil || n != 1 {
			b.Fatalf("moved %d: %v", n, err)
		}
	}
}

func settle(b *testing.B, c *rediscluster.Cluster) {
	b.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for c.Healthy(context.Background()) != nil {
		if time.Now().After(deadline) {
			b.Fatal(c.Healthy(context.Background()))
		}
		time.Sleep(20 * time.Millisecond)
	}
}
