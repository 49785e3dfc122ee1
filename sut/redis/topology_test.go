package redis_test

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/sut/local"
	redisbackend "github.com/lockharness/lockharness/sut/redis"
	"github.com/lockharness/lockharness/sut/redis/redistest"
)

// up starts a cluster for a test and stops it in Cleanup.
func up(t *testing.T, cfg sut.Config) *redisbackend.Cluster { return redistest.Up(t, cfg) }

func TestReplicatedSentinel(t *testing.T) {
	c := up(t, sut.Config{Topology: sut.Replicated, Clients: 2})
	ctx := context.Background()
	if len(c.Nodes) != 3 || len(c.Sentinels) != 3 {
		t.Fatalf("%d nodes, %d sentinels; want 3 and 3", len(c.Nodes), len(c.Sentinels))
	}
	// Replication goes through the master's announced address, where the
	// sentinels reach it too.
	l, err := c.ReplicationLink("n2", "n1")
	if err != nil {
		t.Fatal(err)
	}
	ri, err := c.Role(ctx, "n2")
	if err != nil {
		t.Fatal(err)
	}
	if ri.Role != "slave" || ri.MasterAddr != l.Addr() || !ri.LinkUp {
		t.Fatalf("n2 replication %+v, want slave of %s with link up", ri, l.Addr())
	}
	if m, err := c.Elected(ctx); err != nil || m != "n1" {
		t.Fatalf("sentinel master %q, %v; want n1", m, err)
	}
	nodes := c.ClientNodes(1, sut.ClientOptions{Timeout: time.Second})
	defer sut.CloseClientNodes(nodes)
	if len(nodes) != 1 || nodes[0].Name != redisbackend.MasterNodeName {
		t.Fatalf("client nodes %v, want one named master", nodes)
	}
	if err := nodes[0].Client.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	// The client reached the master through its own link: cutting that
	// link cuts the client off.
	cl, err := c.Link("c1", "n1")
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.Cut(); err != nil {
		t.Fatal(err)
	}
	fresh := c.ClientNodes(1, sut.ClientOptions{Timeout: 300 * time.Millisecond})
	defer sut.CloseClientNodes(fresh)
	if err := fresh[0].Client.Get(ctx, "k").Err(); err == nil {
		t.Fatal("GET through a blackholed client link succeeded")
	}
	cl.Heal(ctx)
	if v, err := fresh[0].Client.Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Fatalf("after heal: %q, %v", v, err)
	}
}

func TestReplicatedManual(t *testing.T) {
	c := up(t, sut.Config{Topology: sut.Replicated, Failover: sut.FailoverManual, Replicas: 1})
	ctx := context.Background()
	// Each replica follows the master through its own link.
	l, err := c.Link("n2", "n1")
	if err != nil {
		t.Fatal(err)
	}
	if ri, err := c.Role(ctx, "n2"); err != nil || ri.MasterAddr != l.Addr() || !ri.LinkUp {
		t.Fatalf("n2 replication %+v %v, want a replica of %s", ri, err, l.Addr())
	}
	nodes := c.ClientNodes(0, sut.ClientOptions{})
	defer sut.CloseClientNodes(nodes)
	cli := nodes[0].Client
	if err := cli.Set(ctx, "k", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Promote(ctx, "n2"); err != nil {
		t.Fatal(err)
	}
	if err := c.SetPrimary("n2"); err != nil {
		t.Fatal(err)
	}
	if err := c.Follow(ctx, "n1", "n2"); err != nil {
		t.Fatal(err)
	}
	// The client's next command goes to n2 (its pooled connection to n1 was
	// closed); the first one may see the closed connection.
	for i := 0; i < 3; i++ {
		if err = cli.Set(ctx, "k", "2", 0).Err(); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	ri, err := c.Role(ctx, "n2")
	if err != nil || ri.Role != "master" {
		t.Fatalf("n2: %+v %v", ri, err)
	}
	n2 := redisbackend.NewRedisClient(c.Nodes[1].Addr(), sut.ClientOptions{})
	defer n2.Close()
	if v, err := n2.Get(ctx, "k").Result(); err != nil || v != "2" {
		t.Fatalf("n2 has k=%q (%v), want 2", v, err)
	}
}

func TestFaketimeClock(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil && !testing.Short() {
		t.Fatalf("gcc missing: %s", local.FaketimeHint)
	}
	c := up(t, sut.Config{Nodes: 2, Faketime: true})
	ctx := context.Background()
	n1, n2 := c.Nodes[0], c.Nodes[1]
	for _, n := range c.Nodes {
		if _, err := n.ConfirmClock(ctx, 50*time.Millisecond, 2*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range c.Nodes {
		cl := redisbackend.NewRedisClient(n.Addr(), sut.ClientOptions{})
		defer cl.Close()
		if err := cl.Do(ctx, "set", "lock", "tok", "px", 30000).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := n1.SetClock(time.Minute, 1); err != nil {
		t.Fatal(err)
	}
	obs, err := n1.ConfirmClock(ctx, 100*time.Millisecond, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if obs < 59*time.Second {
		t.Fatalf("observed skew %v after +1m", obs)
	}
	c1 := redisbackend.NewRedisClient(n1.Addr(), sut.ClientOptions{})
	defer c1.Close()
	c2 := redisbackend.NewRedisClient(n2.Addr(), sut.ClientOptions{})
	defer c2.Close()
	if n, _ := c1.Exists(ctx, "lock").Result(); n != 0 {
		t.Fatal("lock still on n1 after its clock jumped past the TTL")
	}
	if n, _ := c2.Exists(ctx, "lock").Result(); n != 1 {
		t.Fatal("lock gone from n2, whose clock did not move")
	}
	// Drift: the skew grows at rate−1 per second, with no jump at the start.
	if err := n1.SetClock(0, 3); err != nil {
		t.Fatal(err)
	}
	if _, err := n1.ConfirmClock(ctx, 20*time.Millisecond, 3*time.Second); err != nil {
		t.Fatal(err)
	}
	// The skew grows by 2 s per real second between the two readings; a
	// loaded machine may sleep longer than asked, so the expectation is
	// taken from the real time that passed, not from the sleep.
	t0 := time.Now()
	a, rttA, _ := n1.ServerTime(ctx, time.Second)
	time.Sleep(300 * time.Millisecond)
	b, rttB, _ := n1.ServerTime(ctx, time.Second)
	elapsed := time.Since(t0) - rttA/2 - rttB/2
	if grew, want := b-a, 2*elapsed; (grew - want).Abs() > 100*time.Millisecond+rttA+rttB {
		t.Fatalf("skew grew %v in %v at rate 3, want ≈%v", grew, elapsed.Round(time.Millisecond), want.Round(time.Millisecond))
	}
	// Restarting keeps the clock as set, relative to the new process.
	if err := n1.SetClock(-time.Minute, 1); err != nil {
		t.Fatal(err)
	}
	if err := n1.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if obs, err := n1.ConfirmClock(ctx, 100*time.Millisecond, 3*time.Second); err != nil || obs > -59*time.Second {
		t.Fatalf("after restart: skew %v, %v", obs, err)
	}
	_ = redis.Nil
}
