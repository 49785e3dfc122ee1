package rediscluster_test

import (
	"context"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/sut"
	redisbackend "github.com/lockharness/lockharness/sut/redis"
	"github.com/lockharness/lockharness/sut/redis/redistest"
	"github.com/lockharness/lockharness/sut/rediscluster"
)

func TestKeySlot(t *testing.T) {
	for key, want := range map[string]int{
		"123456789":            0x31C3, // CRC16/XMODEM's check value
		"lock-0":               1955,
		"foo":                  12182,
		"{user1000}.following": rediscluster.KeySlot("user1000"),
		"{}x":                  rediscluster.KeySlot("{}x"), // an empty tag hashes the whole key
	} {
		if got := rediscluster.KeySlot(key); got != want {
			t.Errorf("KeySlot(%q) = %d, want %d", key, got, want)
		}
	}
	if rediscluster.KeySlot("{}x") == rediscluster.KeySlot("") {
		t.Error("an empty hash tag must not count")
	}
}

func TestParseClusterNodes(t *testing.T) {
	txt := "07c37dfeb235213a872192d90877d0cd55635b91 127.0.0.1:30004@31004 slave e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 0 1426238317239 4 connected\n" +
		"e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 127.0.0.1:30001@31001 myself,master - 0 0 1 connected 0-5460 [5461->-292f8b365bb7edb5e285caf0b7e6ddc7265d2f4f]\n" +
		"292f8b365bb7edb5e285caf0b7e6ddc7265d2f4f 127.0.0.1:30003@31003 master - 0 1426238318243 3 connected 5461 5462-10922 [100-<-e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca]\n"
	ns, err := rediscluster.ParseClusterNodes(txt)
	if err != nil {
		t.Fatal(err)
	}
	if len(ns) != 3 {
		t.Fatalf("%d nodes", len(ns))
	}
	if r := ns[0]; r.Master() || r.MasterID != "e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca" || r.ConfigEpoch != 4 || !r.Connected {
		t.Errorf("replica line: %+v", r)
	}
	if m := ns[1]; !m.Myself() || !m.Master() || !m.Serves(5460) || m.Serves(5461) || m.Migrating[5461] != ns[2].ID {
		t.Errorf("myself line: %+v", m)
	}
	if m := ns[2]; !m.Serves(5461) || !m.Serves(10922) || m.Importing[100] != ns[1].ID || len(m.Slots) != 2 {
		t.Errorf("third line: %+v", m)
	}
	if _, err := rediscluster.ParseClusterNodes("abc 1.2.3.4:1@2 master"); err == nil {
		t.Error("a short line parsed")
	}
}

func TestRedisClusterConfig(t *testing.T) {
	c := sut.Config{Topology: sut.RedisCluster}.WithDefaults()
	if c.Masters != 3 || c.Replicas != 1 || c.Nodes != 6 || c.ClusterNodeTimeout != 5*time.Second {
		t.Fatalf("defaults: %+v", c)
	}
	if l := c.Layout(); len(l.Nodes) != 6 || l.Replicated || l.Elected {
		t.Fatalf("layout: %+v", l)
	}
	for _, bad := range []sut.Config{
		{Topology: sut.RedisCluster, Masters: 2},
		{Topology: sut.RedisCluster, Failover: sut.FailoverSentinel},
		{Topology: sut.Independent, Masters: 3},
	} {
		bad = bad.WithDefaults()
		err := bad.Validate()
		if bad.Topology == sut.RedisCluster {
			err = errors.Join(rediscluster.Validate(bad), err)
		}
		if err == nil {
			t.Errorf("%+v validated", bad)
		}
	}
	// Issue 22 row 15: the limit is named, not the port it ran into.
	for _, c := range []sut.Config{
		{Topology: sut.RedisCluster, Masters: 100000},
		{Topology: sut.RedisCluster, Replicas: 100000},
		{Topology: sut.RedisCluster, Masters: math.MaxInt, Replicas: math.MaxInt},
		{Topology: sut.RedisCluster, Masters: 30, Replicas: 3},
	} {
		err := rediscluster.Validate(c.WithDefaults())
		if err == nil || !strings.Contains(err.Error(), "more than the harness starts (100: masters × (1 + replicas))") {
			t.Errorf("masters %d, replicas %d: %v", c.Masters, c.Replicas, err)
		}
	}
	if err := rediscluster.Validate(sut.Config{Topology: sut.RedisCluster, Masters: 50}.WithDefaults()); err != nil {
		t.Errorf("50 masters with 1 replica each: %v", err)
	}
	if got := rediscluster.ClusterMaster(5, 3, 1); got != "n2" {
		t.Errorf("n5 follows %s", got)
	}
	if got := rediscluster.InitialSlotMaster(rediscluster.KeySlot("lock-0"), 3); got != "n1" {
		t.Errorf("lock-0 starts on %s", got)
	}
	if p := (sut.Config{}).Provide(sut.Needs{Capabilities: []sut.Capability{sut.CanFailoverShard}}); p.Topology != sut.RedisCluster {
		t.Errorf("a shard failover is provided %q", p.Topology)
	}
}

// One Redis Cluster, looked at from every side: its shape as the nodes
// report it, per-client links, commands never sent twice, ASK during a
// slot move, a killed master healed, and nothing left after Down.
func TestRedisCluster(t *testing.T) {
	redistest.Require(t, "redis-server")
	ctx := context.Background()
	t0 := time.Now()
	c, err := rediscluster.Up(ctx, sut.Config{Clients: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("up in %v", time.Since(t0).Round(time.Millisecond))
	t.Cleanup(func() { _ = c.Down() })
	if err := c.Healthy(ctx); err != nil {
		t.Fatalf("healthy after up: %v", err)
	}
	direct := func(name string) *redis.Client {
		s, err := c.Server(name)
		if err != nil {
			t.Fatal(err)
		}
		cl := redisbackend.NewRedisClient(s.Addr(), sut.ClientOptions{Timeout: time.Second, PoolSize: 1})
		t.Cleanup(func() { _ = cl.Close() })
		return cl
	}
	for _, k := range []string{"lock-0", "lock-1", "fence:lock-0"} {
		if got, err := direct("n1").ClusterKeySlot(ctx, k).Result(); err != nil || int(got) != rediscluster.KeySlot(k) {
			t.Errorf("CLUSTER KEYSLOT %s = %d (%v), KeySlot %d", k, got, err, rediscluster.KeySlot(k))
		}
	}
	const key = "lock-0"
	slot := c.Slot(key)
	sh, err := c.Shard(ctx, slot)
	if err != nil || sh.Master != "n1" || len(sh.Replicas) != 1 || sh.Replicas[0] != "n4" {
		t.Fatalf("shard of slot %d: %+v %v", slot, sh, err)
	}
	if ms, err := c.Masters(ctx); err != nil || strings.Join(ms, ",") != "n1,n2,n3" {
		t.Fatalf("masters %v %v", ms, err)
	}

	c0 := c.ClientNodes(0, sut.ClientOptions{Timeout: 300 * time.Millisecond})
	c1 := c.ClientNodes(1, sut.ClientOptions{Timeout: time.Second})
	t.Cleanup(func() { sut.CloseClientNodes(c0); sut.CloseClientNodes(c1) })
	if len(c0) != 1 || c0[0].Name != rediscluster.ClusterNodeName {
		t.Fatalf("client nodes %+v", c0)
	}
	if err := c1[0].Client.Set(ctx, key, "t1", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if got, err := c0[0].Client.Get(ctx, key).Result(); got != "t1" {
		t.Fatalf("c0 reads %q %v", got, err)
	}

	// c0's replies from the key's master are lost: its SET runs once,
	// its outcome is unknown, and c1 is not touched.
	l, err := c.Network().Link("c0", "n1")
	if err != nil {
		t.Fatal(err)
	}
	calls := func() int {
		txt, _ := direct("n1").Info(ctx, "commandstats").Result()
		for _, line := range strings.Split(txt, "\n") {
			if rest, ok := strings.CutPrefix(line, "cmdstat_set:calls="); ok {
				n, _ := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
				return n
			}
		}
		return 0
	}
	before := calls()
	if err := l.(sut.ReplyDropper).DropReplies(); err != nil {
		t.Fatal(err)
	}
	err = c0[0].Client.Set(ctx, key, "t2", time.Minute).Err()
	var unknown *rediscluster.OutcomeUnknownError
	if !errors.As(err, &unknown) || locks.Outcome(err) != history.Info {
		t.Fatalf("SET with its reply lost: %v (%T), outcome %v", err, err, locks.Outcome(err))
	}
	if got, err := c1[0].Client.Get(ctx, key).Result(); got != "t2" {
		t.Fatalf("c1 reads %q %v (the lost reply's SET ran once)", got, err)
	}
	if n := calls() - before; n != 1 {
		t.Fatalf("n1 ran SET %d times for one SET whose reply was lost", n)
	}
	if err := l.Uncut(ctx); err != nil {
		t.Fatal(err)
	}

	// A slot half moved: the key is on n2, n1 answers ASK, the client
	// follows it.
	n1, n2 := direct("n1"), direct("n2")
	id := func(cl *redis.Client) string { v, _ := cl.Do(ctx, "cluster", "myid").Text(); return v }
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(n2.Do(ctx, "cluster", "setslot", slot, "importing", id(n1)).Err())
	must(n1.Do(ctx, "cluster", "setslot", slot, "migrating", id(n2)).Err())
	s2, _ := c.Server("n2")
	must(n1.Do(ctx, "migrate", "127.0.0.1", s2.Port, key, 0, 2000).Err())
	if err := n1.Get(ctx, key).Err(); err == nil || !strings.HasPrefix(err.Error(), "ASK ") {
		t.Fatalf("n1 on a migrated key: %v, want ASK", err)
	}
	if got, err := c1[0].Client.Get(ctx, key).Result(); got != "t2" {
		t.Fatalf("client through ASK reads %q %v", got, err)
	}
	if err := c.Healthy(ctx); err == nil || !strings.Contains(err.Error(), "half moved") {
		t.Fatalf("healthy with a slot half moved: %v", err)
	}
	// Heal ends it (SETSLOT STABLE); here it is finished instead.
	for _, cl := range []*redis.Client{n2, n1} {
		must(cl.Do(ctx, "cluster", "setslot", slot, "node", id(n2)).Err())
	}

	// A master killed and restarted by the heal: the cluster is whole
	// again (the restarted node keeps its identity in nodes.conf).
	nd, err := c.Node("n3")
	if err != nil {
		t.Fatal(err)
	}
	k, err := sut.As[sut.Killer](nd, sut.CanKill)
	if err != nil {
		t.Fatal(err)
	}
	must(k.Kill(ctx))
	t0 = time.Now()
	did, err := c.Heal(ctx)
	if err != nil || !strings.Contains(did, "restarted n3") {
		t.Fatalf("heal: %q %v", did, err)
	}
	t.Logf("heal after a master's crash: %q in %v", did, time.Since(t0).Round(time.Millisecond))
	if err := c.Healthy(ctx); err != nil {
		t.Fatalf("after heal: %v", err)
	}

	if err := c.Down(); err != nil {
		t.Fatal(err)
	}
	for _, s := range append(c.Nodes, c.Storage) {
		if s.Running() {
			t.Errorf("%s still running after Down", s.Name)
		}
	}
}
