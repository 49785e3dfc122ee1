package nemesis_test

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/nemesis"
	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/sut/local"
	redisbackend "github.com/lockharness/lockharness/sut/redis"
	"github.com/lockharness/lockharness/sut/redis/redistest"
	"github.com/lockharness/lockharness/sut/rediscluster"
)

// rcFixture is a running Redis Cluster with a runner, a recorder and a
// ClusterClient through client 0's links.
type rcFixture struct {
	c   *rediscluster.Cluster
	r   *nemesis.Runner
	env nemesis.Env
	rec *history.Recorder
	cl  redis.UniversalClient
}

func startRC(t *testing.T) *rcFixture {
	t.Helper()
	redistest.Require(t, "redis-server")
	ctx := context.Background()
	t0 := time.Now()
	c, err := rediscluster.Up(ctx, sut.Config{Clients: 1})
	if err != nil {
		t.Fatalf("redis cluster up: %v", err)
	}
	t.Logf("redis cluster (3 masters + 3 replicas) up in %v", time.Since(t0).Round(time.Millisecond))
	t.Cleanup(func() {
		if err := c.Down(); err != nil {
			t.Errorf("down: %v", err)
		}
	})
	r, err := nemesis.New(nemesis.Config{})
	if err != nil {
		t.Fatal(err)
	}
	rec := history.NewRecorder(history.NewClock(), io.Discard)
	f := &rcFixture{c: c, r: r, rec: rec, env: nemesis.Env{Deployment: c, Recorder: rec}}
	if err := r.Setup(ctx, f.env); err != nil {
		t.Fatal(err)
	}
	nodes := c.ClientNodes(0, sut.ClientOptions{Timeout: 2 * time.Second})
	f.cl = nodes[0].Client
	t.Cleanup(func() {
		sut.CloseClientNodes(nodes)
		if err := r.Heal(context.Background(), f.env); err != nil {
			t.Errorf("final heal: %v", err)
		}
		if err := nemesis.Healthy(context.Background(), c); err != nil {
			t.Errorf("after final heal: %v", err)
		}
		_ = rec.Close()
	})
	return f
}

// step performs s and returns its completion.
func (f *rcFixture) step(t *testing.T, s nemesis.Step, fname string) history.Op {
	t.Helper()
	if err := f.r.Do(context.Background(), f.env, s); err != nil {
		t.Fatalf("%v: %v", s, err)
	}
	op, ok := last(f.rec, fname)
	if !ok || op.Type != history.OK || op.Value == nil || op.Value.Shard == nil {
		t.Fatalf("%s not recorded ok with its slot: %+v", fname, op)
	}
	return op
}

// settle waits until the cluster is consistent again (the old master
// has rejoined as a replica and resynchronised).
func (f *rcFixture) settle(t *testing.T) time.Duration {
	t.Helper()
	return waitFor(t, 30*time.Second, "cluster consistent", func() bool { return f.c.Healthy(context.Background()) == nil })
}

func (f *rcFixture) direct(t *testing.T, node string) *redis.Client {
	t.Helper()
	s, err := f.c.Server(node)
	if err != nil {
		t.Fatal(err)
	}
	return client(t, s, time.Second)
}

const rcKey = "lock-0"

// A FORCE failover of the key's master while its replica lags behind
// (its replication link slowed) loses the write the replica had not
// received; a graceful one waits for it. The history says which node
// took over which slot, and the new master says it is one.
func TestClusterFailoverForceLosesWhatGracefulKeeps(t *testing.T) {
	f := startRC(t)
	ctx := context.Background()
	slot := f.c.Slot(rcKey)
	for _, tc := range []struct {
		mode string
		want string
	}{{sut.FailoverForce, "v1"}, {sut.FailoverGraceful, "v2"}} {
		sh, err := f.c.Shard(ctx, slot)
		if err != nil || len(sh.Replicas) == 0 {
			t.Fatalf("shard of slot %d: %+v %v", slot, sh, err)
		}
		if err := f.cl.Set(ctx, rcKey, "v1", time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		rep := f.direct(t, sh.Replicas[0])
		waitFor(t, 5*time.Second, "v1 replicated", func() bool { return readReplica(ctx, rep, rcKey) == "v1" })
		lag, err := f.c.Network().Link(rediscluster.PeersFrom, sh.Master)
		if err != nil {
			t.Fatal(err)
		}
		if err := lag.Slow(1500*time.Millisecond, 0); err != nil {
			t.Fatal(err)
		}
		if err := f.cl.Set(ctx, rcKey, "v2", time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		op := f.step(t, nemesis.Step{Nemesis: "cluster-failover", Action: "failover",
			Params: map[string]string{"key": rcKey, "mode": tc.mode}}, "cluster-failover")
		ch := op.Value.Shard
		if ch.Slot != slot || ch.From != sh.Master || ch.To != sh.Replicas[0] || ch.Mode != tc.mode || ch.Took <= 0 {
			t.Fatalf("recorded %+v, want slot %d from %s to %s", ch, slot, sh.Master, sh.Replicas[0])
		}
		t.Logf("CLUSTER FAILOVER %q of %s to %s: %v", tc.mode, sh.Master, ch.To, time.Duration(ch.Took).Round(time.Millisecond))
		if ri, err := redisbackend.RoleAt(ctx, ch.To, f.mustServer(t, ch.To).Addr()); err != nil || ri.Role != sut.RoleMaster {
			t.Fatalf("%s after failover: %+v %v", ch.To, ri, err)
		}
		if got, err := f.direct(t, ch.To).Get(ctx, rcKey).Result(); got != tc.want {
			t.Errorf("CLUSTER FAILOVER %q: new master %s has %q (%v), want %q", tc.mode, ch.To, got, err, tc.want)
		}
		lag.Heal(ctx)
		t.Logf("consistent again %v later", f.settle(t).Round(time.Millisecond))
		// The client's map still names the old master, now a replica,
		// which answers MOVED. (Until the old master hears of the
		// failover it still answers as master, with what it has: the
		// window the lock scenarios are about.)
		if got, err := f.cl.Get(ctx, rcKey).Result(); got != tc.want {
			t.Errorf("client reads %q (%v) after the failover, want %q", got, err, tc.want)
		}
	}
}

// readReplica reads key on a cluster replica (READONLY first: a replica
// otherwise redirects to its master).
func readReplica(ctx context.Context, cl *redis.Client, key string) string {
	pipe := cl.Pipeline()
	pipe.ReadOnly(ctx)
	get := pipe.Get(ctx, key)
	_, _ = pipe.Exec(ctx)
	return get.Val()
}

func (f *rcFixture) mustServer(t *testing.T, name string) *local.Server {
	t.Helper()
	s, err := f.c.Server(name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A slot move takes the key with its TTL to the next master; the
// client, whose map still names the old owner, is redirected (MOVED).
func TestClusterMoveSlot(t *testing.T) {
	f := startRC(t)
	ctx := context.Background()
	if err := f.cl.Set(ctx, rcKey, "tok", 30*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	op := f.step(t, nemesis.Step{Nemesis: "cluster-failover", Action: "move-slot", Params: map[string]string{"key": rcKey}}, "move-slot")
	ch := op.Value.Shard
	t.Logf("slot %d moved %s -> %s with %d key(s) in %v", ch.Slot, ch.From, ch.To, ch.Keys, time.Duration(ch.Took).Round(time.Millisecond))
	if ch.From == ch.To || ch.Keys != 1 {
		t.Fatalf("recorded %+v", ch)
	}
	ttl, err := f.direct(t, ch.To).PTTL(ctx, rcKey).Result()
	if err != nil || ttl <= 20*time.Second || ttl > 30*time.Second {
		t.Fatalf("key on %s has PTTL %v (%v), want its TTL kept", ch.To, ttl, err)
	}
	if n, _ := f.direct(t, ch.From).Exists(ctx, rcKey).Result(); n != 0 {
		t.Fatalf("key still on %s", ch.From)
	}
	if got, err := f.cl.Get(ctx, rcKey).Result(); got != "tok" {
		t.Fatalf("client reads %q (%v) after the move", got, err)
	}
	f.settle(t)
	// Without a key and no clients to take one from, nothing happens.
	err = f.r.Do(ctx, f.env, nemesis.Step{Nemesis: "cluster-failover", Action: "failover"})
	if o, _ := last(f.rec, "cluster-failover"); !errors.Is(err, nemesis.ErrNotDone) || o.Type != history.Fail {
		t.Fatalf("failover without a key: %v, recorded %+v", err, o)
	}
}

// The nemesis is refused on a deployment without slots.
func TestClusterFailoverNeedsRedisCluster(t *testing.T) {
	f := start(t, sut.Config{Nodes: 1}, nemesis.Config{}, nil)
	r, err := nemesis.New(nemesis.Config{Names: []string{"cluster-failover"}})
	if err != nil {
		t.Fatal(err)
	}
	err = r.Setup(context.Background(), f.env)
	if !errors.Is(err, sut.ErrUnsupported) {
		t.Fatalf("setup on independent nodes: %v", err)
	}
	t.Log(err)
}
