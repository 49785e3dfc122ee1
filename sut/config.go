package sut

import (
	"fmt"
	"time"
)

// Topologies.
const (
	// Independent is N independent masters (what Redlock needs).
	Independent = "independent"
	// Replicated is one master with replicas, failed over by Sentinel or by
	// the harness.
	Replicated = "replicated"
	// RedisCluster is a Redis Cluster: Masters masters sharing the 16384
	// hash slots, each with Replicas replicas (package sut/rediscluster).
	RedisCluster = "cluster"
)

// Failover modes of a replicated topology.
const (
	// FailoverSentinel: Sentinel watches the master and promotes a replica;
	// clients find the master through Sentinel.
	FailoverSentinel = "sentinel"
	// FailoverManual: no Sentinel; the harness promotes a replica and moves
	// the clients (a nemesis decides when).
	FailoverManual = "manual"
)

// Persistence modes of the lock nodes.
const (
	PersistNone        = "none"
	PersistAOFEverysec = "aof-everysec"
	PersistAOFAlways   = "aof-always"
)

// Config is the deployment a run asks for, the request every backend
// reads: each takes the fields that apply to its system (for a system
// other than Redis: Nodes, Clients, Dir, Faketime, ExtraConfig) and
// refuses what it cannot start. The zero value, after WithDefaults, is one
// independent node and one client.
type Config struct {
	// Nodes is the number of independent Redis masters the lock uses. A
	// replicated topology has 1+Replicas nodes and ignores it.
	Nodes int
	// Clients is the number of client slots; each slot gets its own proxy to
	// every node, so one client can be cut off while another is not.
	Clients int
	// Dir is the parent of the per-node directories. Empty: a new temporary
	// directory, removed by Down.
	Dir string
	// BasePort, when non-zero, puts node i on BasePort+i, the storage node
	// on BasePort+Nodes+1 and the sentinels after it; otherwise ports are
	// chosen free.
	BasePort int
	// RedisServer is the redis-server binary; empty means look it up on PATH.
	RedisServer string
	// ExtraConfig is appended to every lock node's config (for example
	// "appendonly yes").
	ExtraConfig string

	// Topology is Independent (default), Replicated or RedisCluster.
	Topology string
	// Replicas is the number of replicas of a replicated topology (default
	// 2), or of each master of a Redis Cluster (default 1).
	Replicas int
	// Masters is the number of masters of a Redis Cluster (default 3).
	Masters int
	// ClusterNodeTimeout is a Redis Cluster's cluster-node-timeout: how
	// long a node may not answer before the others fail it over (default
	// 5s).
	ClusterNodeTimeout time.Duration
	// Sentinels is the number of sentinels with FailoverSentinel (default 3).
	Sentinels int
	// Failover is FailoverSentinel (default) or FailoverManual.
	Failover string
	// RedisSentinel is the redis-sentinel binary; empty means look it up.
	RedisSentinel string
	// SentinelDownAfter is Sentinel's down-after-milliseconds (default 1s).
	SentinelDownAfter time.Duration
	// SentinelFailoverTimeout is Sentinel's failover-timeout (default 3s).
	SentinelFailoverTimeout time.Duration

	// Faketime runs every lock node under libfaketime with its own control
	// file, so clock faults can skew or drift one node's clock.
	Faketime bool
	// Persistence of the lock nodes: PersistNone (default),
	// PersistAOFEverysec or PersistAOFAlways. It decides what a node killed
	// and restarted remembers.
	Persistence string
}

// WithDefaults fills in unset fields.
func (c Config) WithDefaults() Config {
	if c.Topology == "" {
		c.Topology = Independent
	}
	if c.Clients == 0 {
		c.Clients = 1
	}
	if c.Persistence == "" {
		c.Persistence = PersistNone
	}
	if c.Topology == Replicated {
		if c.Replicas == 0 {
			c.Replicas = 2
		}
		c.Nodes = 1 + c.Replicas
		if c.Failover == "" {
			c.Failover = FailoverSentinel
		}
		if c.Failover == FailoverSentinel && c.Sentinels == 0 {
			c.Sentinels = 3
		}
		if c.SentinelDownAfter == 0 {
			c.SentinelDownAfter = time.Second
		}
		if c.SentinelFailoverTimeout == 0 {
			c.SentinelFailoverTimeout = 3 * time.Second
		}
	}
	if c.Topology == RedisCluster {
		c = c.clusterDefaults()
	}
	if c.Nodes == 0 {
		c.Nodes = 1
	}
	return c
}

func (c Config) clusterDefaults() Config {
	if c.Masters == 0 {
		c.Masters = 3
	}
	if c.Replicas == 0 {
		c.Replicas = 1
	}
	if c.ClusterNodeTimeout == 0 {
		c.ClusterNodeTimeout = 5 * time.Second
	}
	c.Nodes = c.Masters * (1 + c.Replicas)
	return c
}

// MaxServers bounds the servers of one deployment (nodes and sentinels):
// each is a process with a proxy per client and node, so a hundred already
// ask more of a small machine than a lock test needs, and far beyond it
// the ports run out (the error then named only the port).
const MaxServers = 100

// Validate rejects configurations that no backend can start. What only one
// system can judge (a Redis Cluster's shape) is that system's
// (System.Validate; System.Check runs both).
func (c Config) Validate() error {
	switch c.Topology {
	case Independent, Replicated, RedisCluster:
	default:
		return fmt.Errorf("unknown topology %q (want %s, %s or %s)", c.Topology, Independent, Replicated, RedisCluster)
	}
	if c.Topology != RedisCluster && (c.Masters != 0 || c.ClusterNodeTimeout != 0) {
		return fmt.Errorf("masters and the cluster node timeout shape a Redis Cluster, and the topology is %s: add --topology %s or drop --masters", c.Topology, RedisCluster)
	}
	if c.Nodes < 1 {
		return fmt.Errorf("nodes must be at least 1, got %d", c.Nodes)
	}
	if n := c.Nodes + c.Sentinels; n > MaxServers {
		return fmt.Errorf("%d servers (%d nodes, %d sentinels) is more than a deployment the harness starts may have (%d: each is a server process with a proxy per client, on a port of its own)", n, c.Nodes, c.Sentinels, MaxServers)
	}
	if c.Clients < 1 {
		return fmt.Errorf("clients must be at least 1, got %d", c.Clients)
	}
	if err := CheckPersistence(c.Persistence); err != nil {
		return err
	}
	if c.Topology == Replicated {
		if c.Replicas < 1 {
			return fmt.Errorf("replicated topology needs at least 1 replica, got %d", c.Replicas)
		}
		switch c.Failover {
		case FailoverSentinel:
			if c.Sentinels < 1 {
				return fmt.Errorf("sentinel failover needs at least 1 sentinel, got %d", c.Sentinels)
			}
		case FailoverManual:
			if c.Sentinels != 0 {
				return fmt.Errorf("manual failover runs no sentinels, got %d", c.Sentinels)
			}
		default:
			return fmt.Errorf("unknown failover %q (want %s or %s)", c.Failover, FailoverSentinel, FailoverManual)
		}
	}
	if c.BasePort < 0 || c.BasePort > 65535-c.Nodes-c.Sentinels-1 {
		return fmt.Errorf("base port %d out of range", c.BasePort)
	}
	return nil
}

// CheckPersistence refuses a persistence mode that is none of
// PersistNone, PersistAOFEverysec and PersistAOFAlways ("" is PersistNone).
func CheckPersistence(mode string) error {
	switch mode {
	case "", PersistNone, PersistAOFEverysec, PersistAOFAlways:
		return nil
	}
	return fmt.Errorf("unknown persistence %q (want %s, %s or %s)", mode, PersistNone, PersistAOFEverysec, PersistAOFAlways)
}

// Layout is the shape of the Redis deployment c starts (defaults filled
// in), so a fault schedule can be drawn before it runs.
func (c Config) Layout() Layout {
	c = c.WithDefaults()
	l := Layout{Clients: c.Clients, Replicated: c.Topology == Replicated}
	l.Elected = l.Replicated && c.Failover == FailoverSentinel
	for i := 0; i < c.Nodes; i++ {
		l.Nodes = append(l.Nodes, fmt.Sprintf("n%d", i+1))
	}
	for i := 0; i < c.Sentinels; i++ {
		l.Sentinels = append(l.Sentinels, fmt.Sprintf("s%d", i+1))
	}
	return l
}

// Provide returns c arranged to meet needs where the local backend can and
// the user has not chosen otherwise: a replicated topology when one is
// needed and none was named, every lock node under libfaketime when clocks
// are set. Whatever it cannot arrange, Check refuses once the deployment
// is up.
func (c Config) Provide(needs Needs) Config {
	if needs.Replicated && c.Topology == "" {
		c.Topology = Replicated
	}
	if (needs.Has(CanFailoverShard) || needs.Has(CanMoveSlots)) && c.Topology == "" {
		c.Topology = RedisCluster
	}
	if needs.Has(CanSetClock) {
		c.Faketime = true
	}
	return c
}
