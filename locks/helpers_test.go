package locks_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/redis/go-redis/v9"
	"github.com/rs/zerolog"

	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/sut/local"
	redisbackend "github.com/lockharness/lockharness/sut/redis"
	"github.com/lockharness/lockharness/sut/redis/redistest"
)

// needRedis skips under -short and fails, saying how to install it, when
// redis-server is missing.
func needRedis(tb testing.TB) { redistest.Require(tb) }

// up starts an independent-masters cluster, stopped in Cleanup.
func up(tb testing.TB, nodes, clients int) *redisbackend.Cluster {
	tb.Helper()
	return redistest.Up(tb, sut.Config{Nodes: nodes, Clients: clients})
}

// nodesOf returns fresh go-redis clients for client slot cl, closed in
// Cleanup. Each call makes new clients: one per simulated process.
func nodesOf(tb testing.TB, c *redisbackend.Cluster, cl int) []sut.ClientNode {
	tb.Helper()
	ns := c.ClientNodes(cl, sut.ClientOptions{})
	tb.Cleanup(func() { sut.CloseClientNodes(ns) })
	return ns
}

// newLock builds an instance of the named lock over nodes, seeded by seed.
func newLock(tb testing.TB, name string, nodes []sut.ClientNode, seed uint64, opts locks.Options) locks.Lock {
	tb.Helper()
	info, err := locks.WithDeliberateBugs().Lookup(name)
	if err != nil {
		tb.Fatal(err)
	}
	opts.Rand = rand.New(rand.NewPCG(seed, 42))
	l, err := info.New(nodes, opts)
	if err != nil {
		tb.Fatalf("new %s: %v", name, err)
	}
	if cl, ok := l.(locks.Closer); ok {
		tb.Cleanup(func() { _ = cl.Close() })
	}
	return l
}

// untilDefinite runs op again while its outcome is unknown, a few times, and
// returns its last error. On a loaded machine a node may not answer within
// Redlock's per-node timeout (a twentieth of the TTL): the lock then rightly
// says the outcome is unknown, which is not what a test of a definite answer
// is about.
func untilDefinite(op func() error) error {
	var err error
	for range 5 {
		if err = op(); locks.Outcome(err) != history.Info {
			return err
		}
	}
	return err
}

// direct is a client to a node's own address, bypassing every proxy: the
// test's view of what the node holds.
func direct(tb testing.TB, s *local.Server) *redis.Client {
	tb.Helper()
	cl := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1})
	tb.Cleanup(func() { _ = cl.Close() })
	return cl
}

// multiNode reports whether the lock spreads over several nodes.
func multiNode(name string) bool { return name == "redlock" || name == "redsync" }

// withReplica attaches a replica to node n of c whose replication link goes
// through a toxiproxy proxy of the test's own, and waits until it is in
// sync. It returns the proxy (cut it to freeze replication) and the replica.
func withReplica(tb testing.TB, n *local.Server) (*toxiproxy.Proxy, *local.Server) {
	tb.Helper()
	ctx := context.Background()
	// A full sync waits repl-diskless-sync-delay (5s by default) for more
	// replicas to join; there is only one.
	if err := direct(tb, n).ConfigSet(ctx, "repl-diskless-sync-delay", "0").Err(); err != nil {
		tb.Fatalf("config master: %v", err)
	}
	zerolog.SetGlobalLevel(zerolog.Disabled)
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	p := toxiproxy.NewProxy(srv, "r1_n1", "127.0.0.1:0", n.Addr())
	if err := srv.Collection.Add(p, true); err != nil {
		tb.Fatalf("replication proxy: %v", err)
	}
	tb.Cleanup(func() { srv.Collection.Clear() })
	_, portStr, _ := strings.Cut(p.Listen, ":")
	port, err := local.FreePort()
	if err != nil {
		tb.Fatal(err)
	}
	bin, err := redisbackend.LookBinary("redis-server")
	if err != nil {
		tb.Fatal(err)
	}
	dir := tb.TempDir()
	r := redisbackend.NewServer("r1", port, bin, dir)
	r.Config = redisbackend.RedisConfig(port, dir, "r1") + fmt.Sprintf("replicaof 127.0.0.1 %s\n", portStr)
	if err := r.Start(ctx, true); err != nil {
		tb.Fatalf("start replica: %v", err)
	}
	tb.Cleanup(func() { _ = r.Kill() })
	rc := direct(tb, r)
	deadline := time.Now().Add(10 * time.Second)
	for {
		info, err := rc.Info(ctx, "replication").Result()
		if err == nil && strings.Contains(info, "master_link_status:up") {
			break
		}
		if time.Now().After(deadline) {
			tb.Fatalf("replica never came in sync: %v %s", err, info)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The master counts the replica for WAIT only once it is online, after
	// the replica's first acknowledgement (sent once a second).
	pipe := direct(tb, n).Pipeline()
	pipe.Set(ctx, "replica-check", "1", 0)
	acks := pipe.Do(ctx, "wait", 1, 5000)
	if _, err := pipe.Exec(ctx); err != nil || acks.Val() != int64(1) {
		tb.Fatalf("replica never acknowledged a write: %d acks, %v", acks.Val(), err)
	}
	return p, r
}

// cut freezes both directions of a proxy (timeout toxic, timeout 0).
func cut(tb testing.TB, p *toxiproxy.Proxy) {
	tb.Helper()
	for _, stream := range []string{"upstream", "downstream"} {
		j := fmt.Sprintf(`{"name":"cut-%s","type":"timeout","stream":%q,"attributes":{"timeout":0}}`, stream, stream)
		if _, err := p.Toxics.AddToxicJson(strings.NewReader(j)); err != nil {
			tb.Fatalf("cut: %v", err)
		}
	}
}

// nodeClients returns a direct client to every lock node of c.
func nodeClients(tb testing.TB, c *redisbackend.Cluster) []*redis.Client {
	tb.Helper()
	out := make([]*redis.Client, len(c.Nodes))
	for i, n := range c.Nodes {
		out[i] = direct(tb, n)
	}
	return out
}

// handOver checks a lock the consensus systems and MariaDB share: while a
// holds la on key, b is refused at once; once a releases, b's waiting
// acquire gets it (see checkFencesAndRelease).
func handOver(t *testing.T, ctx context.Context, a, b locks.Lock, key string, la locks.Lease, fenced bool) {
	t.Helper()
	if _, err := b.Acquire(ctx, key, locks.AcquireOptions{}); !errors.Is(err, locks.ErrNotAcquired) {
		t.Fatalf("second acquire: %v, want not acquired", err)
	}
	if err := a.Release(ctx, la); err != nil {
		t.Fatal(err)
	}
	lb, err := b.Acquire(ctx, key, locks.AcquireOptions{Wait: 2 * time.Second})
	if err != nil {
		t.Fatalf("acquire after release: %v", err)
	}
	checkFencesAndRelease(t, ctx, b, la, lb, fenced)
}

// checkFencesAndRelease checks that a fenced lock's token grew from la to
// lb and an unfenced one gave none, then that b releases lb once and only
// once.
func checkFencesAndRelease(t *testing.T, ctx context.Context, b locks.Lock, la, lb locks.Lease, fenced bool) {
	t.Helper()
	if fenced && (la.Fence <= 0 || lb.Fence <= la.Fence) {
		t.Errorf("fences %d then %d, want growing", la.Fence, lb.Fence)
	}
	if !fenced && (la.Fence != 0 || lb.Fence != 0) {
		t.Errorf("unfenced lock gave fences %d, %d", la.Fence, lb.Fence)
	}
	if err := b.Release(ctx, lb); err != nil {
		t.Fatal(err)
	}
	if err := b.Release(ctx, lb); err == nil {
		t.Error("second release of the same lease succeeded")
	}
}
