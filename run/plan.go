package run

import (
	"fmt"
	"slices"
	"strings"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/nemesis"
	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/sut/systems"
)

// Plan is a run resolved from its Config, once: what Validate found out
// on the way is what the run uses (the lock, the node count, the system
// and the backend that starts it, the deployment request, the nemeses),
// so nothing is looked up or built twice. A plan runs once.
type Plan struct {
	// Config is the run's configuration, defaults filled in.
	Config Config
	// Lock is the lock's registry entry.
	Lock locks.Info
	// Nodes is the number of lock nodes.
	Nodes int
	// System is the system the lock runs on; Backend starts it: the
	// system's local backend, or for a Redis lock Config.Backend when set.
	System  sut.System
	Backend sut.Backend
	// Cluster is the deployment request (Config.Cluster with the node
	// and client counts); without a Dir, each run makes a node directory.
	Cluster sut.Config
	// Nemesis runs the run's faults, built from Config.Nemesis.
	Nemesis *nemesis.Runner
	// Require is the exposure the run must reach (Config.Requirements).
	Require []checker.Requirement
}

// NewPlan validates cfg (see Validate) and resolves it into the plan Run
// carries out.
func NewPlan(cfg Config) (*Plan, error) {
	if err := cfg.checkGiven(); err != nil {
		return nil, err
	}
	c := cfg.WithDefaults()
	p := &Plan{Config: c}
	for _, step := range []func() error{
		p.lookupLock, c.checkNumbers, c.checkLimits, p.buildNemesis, p.checkFailpoints, p.checkRenews,
		c.checkWorkload, p.lookupSystem, c.checkClusterFaults, p.resolveNodes, p.checkLockOptions, p.checkStartable,
	} {
		if err := step(); err != nil {
			return nil, err
		}
	}
	p.Require = c.Requirements()
	return p, nil
}

// lookupLock finds the lock in the registry.
func (p *Plan) lookupLock() error {
	info, err := p.Config.Registry.Lookup(p.Config.Lock)
	if err != nil {
		return fieldErr("Lock", p.Config.Lock, err)
	}
	p.Lock = info
	return nil
}

// buildNemesis builds the nemeses (refusing an unknown name) and checks
// the persistence they set and the nemeses a script names.
func (p *Plan) buildNemesis() error {
	c := p.Config
	nem, err := nemesis.New(c.Nemesis)
	if err != nil {
		return fieldErr("Nemesis.Names", c.Nemesis.Names, err)
	}
	if ps := c.Nemesis.Persistence; ps != "" {
		if err := sut.CheckPersistence(ps); err != nil {
			return fieldErr("Nemesis.Persistence", ps, err)
		}
	}
	for _, pat := range c.Nemesis.PartitionPatterns {
		if !slices.Contains(nemesis.KnownPatterns(), pat) {
			return field("Nemesis.PartitionPatterns", c.Nemesis.PartitionPatterns, fmt.Sprintf("unknown partition pattern %q", pat),
				"use some of "+strings.Join(nemesis.KnownPatterns(), ", "))
		}
	}
	for _, m := range c.Nemesis.ClockModes {
		if !slices.Contains(nemesis.ClockModes(), m) {
			return field("Nemesis.ClockModes", c.Nemesis.ClockModes, fmt.Sprintf("unknown clock mode %q", m),
				"use some of "+strings.Join(nemesis.ClockModes(), ", "))
		}
	}
	faults := c.Nemesis.Faults()
	for i, st := range c.Script {
		if _, err := faults.Lookup(st.Nemesis); err != nil {
			return field("Script", st.Nemesis, fmt.Sprintf("script step %d: unknown nemesis %q", i+1, st.Nemesis), "")
		}
	}
	p.Nemesis = nem
	return nil
}

// lookupSystem finds the system the lock runs on and the backend that
// starts it. A lock of another system than Redis runs on that system's
// local processes, as a group of peers.
func (p *Plan) lookupSystem() error {
	c, info := p.Config, p.Lock
	sys := info.SystemName()
	s, err := systems.Builtin().Lookup(sys)
	if err != nil {
		return field("Lock", c.Lock, fmt.Sprintf("lock %s runs on %s, which this harness cannot start (it starts: %s)", info.Name, sys, strings.Join(systems.Builtin().Names(), ", ")), "")
	}
	p.System, p.Backend = s, s.Local
	if sys == locks.SystemRedis {
		if c.Backend != nil {
			p.Backend = c.Backend
		}
		return nil
	}
	if c.Backend != nil {
		// Unsupported as well as a usage error: a catalogue run on another
		// backend skips the scenario instead of failing it.
		return &UsageError{Err: fmt.Errorf("lock %s runs on %s, started as local processes; the backend chosen (--backend, --target) starts Redis: leave it out (%w)", info.Name, sys, sut.ErrUnsupported)}
	}
	if c.Cluster.Topology == sut.Replicated {
		return field("Cluster.Topology", c.Cluster.Topology, fmt.Sprintf("lock %s runs on %s, a group of peers, not a Redis master with replicas", info.Name, sys),
			"leave out {Cluster.Topology replicated} and the failover nemesis")
	}
	if n := c.needs(); c.Cluster.Topology == sut.RedisCluster || n.Has(sut.CanFailoverShard) || n.Has(sut.CanMoveSlots) {
		return field("Cluster.Topology", c.Cluster.Topology, fmt.Sprintf("lock %s runs on %s, not on a Redis Cluster", info.Name, sys),
			"leave out {Cluster.Topology cluster} and the cluster-failover nemesis")
	}
	return nil
}

// checkClusterFaults refuses a Redis Cluster's fault on another topology.
func (c Config) checkClusterFaults() error {
	if n := c.needs(); (n.Has(sut.CanFailoverShard) || n.Has(sut.CanMoveSlots)) && c.Cluster.Topology != sut.RedisCluster {
		return field("Cluster.Topology", c.Cluster.Topology, fmt.Sprintf("the cluster-failover nemesis strikes a Redis Cluster, and the topology is %s", c.Cluster.Topology),
			"use {Cluster.Topology cluster} (or leave {Cluster.Topology} out)")
	}
	return nil
}

// resolveNodes is the number of lock nodes, as the topology and the lock
// allow, and the deployment request made of it.
func (p *Plan) resolveNodes() error {
	var err error
	switch p.Config.Cluster.Topology {
	case sut.RedisCluster:
		p.Nodes, err = p.redisClusterNodes()
	case sut.Replicated:
		p.Nodes, err = p.replicatedNodes()
	default:
		p.Nodes, err = p.independentNodes()
	}
	if err != nil {
		return err
	}
	p.Cluster = p.Config.Cluster
	p.Cluster.Nodes = p.Nodes
	p.Cluster.Clients = p.Config.Workload.Clients
	return nil
}

// redisClusterNodes checks a run on a Redis Cluster: a lock that keeps
// everything under its one key, reached through one ClusterClient, and no
// nemesis that fails over a single master.
func (p *Plan) redisClusterNodes() (int, error) {
	c, info := p.Config, p.Lock
	if !info.Cluster && !locks.RunsOnCluster(info.Name) {
		return 0, field("Lock", c.Lock, fmt.Sprintf("lock %s does not run on a Redis Cluster ({Cluster.Topology cluster})", info.Name),
			fmt.Sprintf("a lock there must keep all it writes under its one key, reached through one ClusterClient; use one of %s, or another topology", strings.Join(locks.ClusterLocks(), ", ")))
	}
	if c.Nodes > 1 {
		return 0, field("Nodes", c.Nodes, fmt.Sprintf("a Redis Cluster is one lock node (a ClusterClient over its masters), got {Nodes %d}", c.Nodes),
			"leave {Nodes} out ({Cluster.Masters} and {Cluster.Replicas} shape the cluster)")
	}
	if c.needs().Replicated {
		return 0, field("Nemesis.Names", c.Nemesis.Names, "the failover nemesis fails over a single master with replicas, and a Redis Cluster elects its own",
			"use {Nemesis.Names cluster-failover}, or {Cluster.Topology replicated}")
	}
	return 1, nil
}

// replicatedNodes checks a run on one master with replicas: a lock over
// independent nodes has no place there.
func (p *Plan) replicatedNodes() (int, error) {
	c, info := p.Config, p.Lock
	if c.Nodes > 1 || info.MinNodes > 1 || (info.MaxNodes == 0 && c.Nodes == 0) {
		return 0, field("Lock", c.Lock, fmt.Sprintf("lock %s runs on independent nodes, but the topology is replicated (one master with replicas, chosen by {Cluster.Topology} or {Nemesis.Names failover})", info.Name),
			"use a single-node lock such as token, or {Cluster.Topology independent}")
	}
	return 1, nil
}

// independentNodes is the node count of a lock over independent nodes:
// Nodes, or the lock's minimum (DefaultNodes for a lock with no maximum).
func (p *Plan) independentNodes() (int, error) {
	c, info := p.Config, p.Lock
	if info.NeedsReplicas {
		return 0, field("Cluster.Topology", c.Cluster.Topology, fmt.Sprintf("lock %s needs a master with replicas", info.Name),
			"add {Cluster.Topology replicated} (or {Nemesis.Names failover})")
	}
	nodes := c.Nodes
	if nodes == 0 {
		nodes = info.MinNodes
		if info.MaxNodes == 0 {
			nodes = max(nodes, DefaultNodes)
		}
	}
	if nodes < info.MinNodes || (info.MaxNodes > 0 && nodes > info.MaxNodes) {
		if info.MaxNodes == info.MinNodes {
			return 0, field("Nodes", nodes, fmt.Sprintf("lock %s uses exactly %d node(s), got {Nodes %d}", info.Name, info.MinNodes, nodes),
				fmt.Sprintf("use {Nodes %d} or leave it out", info.MinNodes))
		}
		return 0, field("Nodes", nodes, fmt.Sprintf("lock %s needs between %d and %d nodes, got {Nodes %d}", info.Name, info.MinNodes, info.MaxNodes, nodes),
			fmt.Sprintf("use {Nodes %d} to %d", info.MinNodes, info.MaxNodes))
	}
	return nodes, nil
}

// checkDeployment refuses a deployment that cannot support one of the
// run's nemeses, naming what is missing (exit 2, before the run starts).
func (c Config) checkDeployment(d sut.Deployment) error {
	faults := c.Nemesis.Faults()
	for _, n := range c.nemesisNames() {
		info, err := faults.Lookup(n)
		if err != nil {
			continue
		}
		if err := sut.Check(d, "the "+n+" nemesis", info.Needs); err != nil {
			return &UsageError{Err: err}
		}
	}
	return nil
}

// grantingNodes is how many nodes grant a lease each, as the history
// records them (Redlock's independent Redis masters), so that a fault on
// one of them can await a holder granted by every one; 1 for a lock whose
// grant is the group's (etcd, ZooKeeper, MariaDB, a replicated or cluster
// Redis deployment), which records no per-node grants.
func (p *Plan) grantingNodes() int {
	if p.Lock.SystemName() != locks.SystemRedis || (p.Cluster.Topology != "" && p.Cluster.Topology != sut.Independent) {
		return 1
	}
	return p.Nodes
}
