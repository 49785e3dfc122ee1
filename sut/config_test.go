package sut_test

import (
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockharness/lockharness/sut"
)

// The layout a config describes is the one the cluster it starts has.
func TestLayout(t *testing.T) {
	for _, cfg := range []sut.Config{
		{Nodes: 3, Clients: 2},
		{Topology: sut.Replicated},
		{Topology: sut.Replicated, Failover: sut.FailoverManual, Replicas: 1},
	} {
		l := cfg.Layout()
		c := cfg.WithDefaults()
		if len(l.Nodes) != c.Nodes || len(l.Sentinels) != c.Sentinels || l.Clients != c.Clients ||
			l.Replicated != (c.Topology == sut.Replicated) || l.Elected != (c.Failover == sut.FailoverSentinel) {
			t.Errorf("%+v: layout %+v", cfg, l)
		}
	}
	if got := (sut.Config{}).Provide(sut.Needs{Replicated: true, Capabilities: []sut.Capability{sut.CanSetClock}}); got.Topology != sut.Replicated || !got.Faketime {
		t.Errorf("provided %+v", got)
	}
	if got := (sut.Config{Topology: sut.Independent}).Provide(sut.Needs{Replicated: true}); got.Topology != sut.Independent {
		t.Errorf("Provide overrode the chosen topology: %+v", got)
	}
}

// The generic rules of a deployment request, whatever the system.
func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		cfg  sut.Config
		want string
	}{
		{sut.Config{}, ""},
		{sut.Config{Topology: sut.Replicated, Failover: sut.FailoverManual}, ""},
		{sut.Config{Topology: sut.RedisCluster}, ""},
		{sut.Config{Topology: "ring"}, `unknown topology "ring" (want independent, replicated or cluster)`},
		{sut.Config{Masters: 3}, "masters and the cluster node timeout shape a Redis Cluster, and the topology is independent"},
		{sut.Config{ClusterNodeTimeout: time.Second}, "shape a Redis Cluster"},
		{sut.Config{Nodes: -1}, "nodes must be at least 1, got -1"},
		{sut.Config{Clients: -2}, "clients must be at least 1, got -2"},
		{sut.Config{Persistence: "rdb"}, `unknown persistence "rdb" (want none, aof-everysec or aof-always)`},
		{sut.Config{Topology: sut.Replicated, Replicas: -1}, "replicated topology needs at least 1 replica, got -1"},
		{sut.Config{Topology: sut.Replicated, Sentinels: -1}, "sentinel failover needs at least 1 sentinel, got -1"},
		{sut.Config{Topology: sut.Replicated, Failover: sut.FailoverManual, Sentinels: 2}, "manual failover runs no sentinels, got 2"},
		{sut.Config{Topology: sut.Replicated, Failover: "raft"}, `unknown failover "raft" (want sentinel or manual)`},
		{sut.Config{BasePort: 65534}, "base port 65534 out of range"},
		{sut.Config{Topology: sut.Replicated, Replicas: 100000}, "100004 servers (100001 nodes, 3 sentinels) is more than a deployment the harness starts may have (100"},
		{sut.Config{Nodes: sut.MaxServers}, ""},
		{sut.Config{Nodes: sut.MaxServers + 1}, "101 servers"},
	} {
		err := tc.cfg.WithDefaults().Validate()
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: %v, want %q", tc.cfg, err, tc.want)
		}
	}
	for _, p := range []string{"", sut.PersistNone, sut.PersistAOFEverysec, sut.PersistAOFAlways} {
		if err := sut.CheckPersistence(p); err != nil {
			t.Errorf("persistence %q: %v", p, err)
		}
	}
}

// The defaults of each topology.
func TestConfigDefaults(t *testing.T) {
	c := sut.Config{}.WithDefaults()
	if c.Topology != sut.Independent || c.Nodes != 1 || c.Clients != 1 || c.Persistence != sut.PersistNone || c.Sentinels != 0 {
		t.Errorf("independent: %+v", c)
	}
	c = sut.Config{Topology: sut.Replicated, Nodes: 9}.WithDefaults()
	if c.Replicas != 2 || c.Nodes != 3 || c.Failover != sut.FailoverSentinel || c.Sentinels != 3 ||
		c.SentinelDownAfter != time.Second || c.SentinelFailoverTimeout != 3*time.Second {
		t.Errorf("replicated: %+v", c)
	}
	c = sut.Config{Topology: sut.Replicated, Failover: sut.FailoverManual}.WithDefaults()
	if c.Sentinels != 0 {
		t.Errorf("manual failover: %+v", c)
	}
	c = sut.Config{Topology: sut.RedisCluster, Masters: 4, Replicas: 2}.WithDefaults()
	if c.Nodes != 12 || c.ClusterNodeTimeout != 5*time.Second {
		t.Errorf("cluster: %+v", c)
	}
}

// A client node of another system than Redis is an address and a
// timeout; closing client nodes closes the Redis clients there are.
func TestClientNodes(t *testing.T) {
	if o := (sut.ClientOptions{}).WithDefaults(); o.Timeout != 500*time.Millisecond || o.PoolSize != 4 || o.MaxRetries != 0 {
		t.Errorf("client defaults %+v", o)
	}
	eps := []sut.Endpoint{{Node: "n2", Addr: "127.0.0.1:2"}, {Node: "n1", Addr: "127.0.0.1:1"}}
	nodes := sut.AddressNodes(eps, sut.ClientOptions{Timeout: time.Second})
	if len(nodes) != 2 || nodes[0].Name != "n2" || nodes[0].Addr != eps[0].Addr || nodes[0].Timeout != time.Second || nodes[0].Client != nil {
		t.Errorf("nodes %+v", nodes)
	}
	if nodes := sut.AddressNodes(eps, sut.ClientOptions{}); nodes[1].Timeout != 500*time.Millisecond {
		t.Errorf("the default timeout: %+v", nodes[1])
	}
	cl := redis.NewClient(&redis.Options{Addr: "127.0.0.1:0"})
	sut.CloseClientNodes(append(nodes, sut.ClientNode{Name: "r", Client: cl}))
	if err := cl.Close(); err == nil {
		t.Error("the Redis client was not closed")
	}
}
