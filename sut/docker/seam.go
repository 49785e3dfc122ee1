package docker

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/lockharness/lockharness/sut"
	redisbackend "github.com/lockharness/lockharness/sut/redis"
)

// The Docker backend behind the harness's seam.
var (
	_ sut.Deployment  = (*Deployment)(nil)
	_ sut.Replication = (*Deployment)(nil)
	_ sut.Hinter      = (*Deployment)(nil)
	_ sut.Killer      = (*Node)(nil)
	_ sut.Pauser      = (*Node)(nil)
	_ sut.Clocked     = (*Node)(nil)
	_ sut.Commander   = (*Node)(nil)
)

// Name is the node's name in its topology.
func (n *Node) Name() string { return n.name }

// Kind is a lock node's or a sentinel's kind.
func (n *Node) Kind() sut.Kind {
	if n.role == RoleSentinel {
		return sut.KindSentinel
	}
	return sut.KindLock
}

// Capabilities: every container can be killed and paused and takes an
// operator's command; its clock can be set when it runs under libfaketime.
func (n *Node) Capabilities() sut.Capabilities {
	cs := sut.Capabilities{sut.CanKill, sut.CanPause, sut.CanCommand}
	if n.Faked() {
		cs = append(cs, sut.CanSetClock)
	}
	return cs
}

// Layout is the topology's shape.
func (d *Deployment) Layout() sut.Layout {
	l := sut.Layout{Clients: d.cfg.Clients, Replicated: d.cfg.Topology == sut.Replicated}
	l.Elected = l.Replicated && len(d.Sentinels) > 0
	for _, n := range d.Nodes {
		l.Nodes = append(l.Nodes, n.name)
	}
	for _, s := range d.Sentinels {
		l.Sentinels = append(l.Sentinels, s.name)
	}
	return l
}

// Capabilities of the deployment: every link can be cut, slowed and made
// to drop replies (the host's toxiproxy), persistence changes with CONFIG
// SET; with an image that has iptables, members can be cut off from each
// other inside the network (the native partition); a replicated topology
// can be failed over by hand, or by its sentinels.
func (d *Deployment) Capabilities() sut.Capabilities {
	cs := sut.Capabilities{sut.CanCutLinks, sut.CanSlowLinks, sut.CanDropReplies, sut.CanSetPersistence}
	if d.canCut() {
		cs = append(cs, sut.CanPartitionNodes)
	}
	if d.cfg.Topology == sut.Replicated {
		cs = append(cs, sut.CanPromote)
		if len(d.Sentinels) > 0 {
			cs = append(cs, sut.CanElect)
		}
	}
	return cs
}

// Hint says how to get a capability this deployment lacks.
func (d *Deployment) Hint(c sut.Capability) string {
	switch c {
	case sut.CanSetClock:
		if err := d.image.Require(NeedFaketime); err != nil {
			return err.Error()
		}
		return "start the containers under libfaketime (docker.Config.Faketime)"
	case sut.CanPromote, sut.CanElect:
		return "use a replicated topology"
	case sut.CanPartitionNodes:
		if err := CanPartitionNodes(d.image); err != nil {
			return err.Error()
		}
	}
	return ""
}

// Node returns a lock node or a sentinel by name.
func (d *Deployment) Node(name string) (sut.Node, error) {
	for _, n := range d.Members() {
		if n.Name() == name {
			return n, nil
		}
	}
	return nil, fmt.Errorf("no node %q in this deployment", name)
}

// Members are the lock nodes, then the sentinels.
func (d *Deployment) Members() []sut.Node {
	out := make([]sut.Node, 0, len(d.Nodes)+len(d.Sentinels))
	for _, n := range d.Nodes {
		out = append(out, n)
	}
	for _, s := range d.Sentinels {
		out = append(out, s)
	}
	return out
}

// Endpoints are the lock nodes as client slot cl reaches them: through its
// own proxies on 127.0.0.1.
func (d *Deployment) Endpoints(cl int) []sut.Endpoint {
	out := make([]sut.Endpoint, 0, len(d.Nodes))
	for _, n := range d.Nodes {
		if a, err := d.ClientAddr(cl, n.name); err == nil {
			out = append(out, sut.Endpoint{Node: n.name, Addr: a})
		}
	}
	return out
}

// Network is the deployment's links.
func (d *Deployment) Network() sut.Network { return network{d} }

type network struct{ d *Deployment }

func (nw network) Links() []sut.Link {
	var out []sut.Link
	for _, l := range nw.d.Links() {
		out = append(out, l)
	}
	return out
}

func (nw network) Link(from, to string) (sut.Link, error) {
	l, err := nw.d.Link(from, to)
	if err != nil {
		return nil, err
	}
	return l, nil
}

// Primary is the node the harness takes as master now.
func (d *Deployment) Primary() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.primary
}

// SetPrimary records node as the master; the configs of every node are
// rendered anew, so a node started again keeps the new roles.
func (d *Deployment) SetPrimary(node string) error {
	if d.cfg.Topology != sut.Replicated {
		return fmt.Errorf("set primary: topology %s has no master", d.cfg.Topology)
	}
	if _, err := d.Container(node); err != nil {
		return fmt.Errorf("set primary: %w", err)
	}
	d.mu.Lock()
	changed := d.primary != node
	d.primary = node
	for _, n := range d.Nodes {
		n.setConfig(d.nodeConfig(n, node))
	}
	dialers := append([]*redisbackend.MasterDialer(nil), d.dialers...)
	d.mu.Unlock()
	if changed {
		for _, md := range dialers {
			md.CloseAll()
		}
	}
	return nil
}

// Promote makes node a master (REPLICAOF NO ONE) over a direct connection.
func (d *Deployment) Promote(ctx context.Context, node string) error {
	n, err := d.Container(node)
	if err != nil {
		return fmt.Errorf("promote: %w", err)
	}
	if err := n.do(ctx, "replicaof", "no", "one"); err != nil {
		return fmt.Errorf("promote %s: %w", node, err)
	}
	return nil
}

// Follow makes node a replica of primary, through its replication link.
func (d *Deployment) Follow(ctx context.Context, node, primary string) error {
	n, err := d.Container(node)
	if err != nil {
		return fmt.Errorf("follow: %w", err)
	}
	l := d.replicationLink(node, primary)
	if l == nil {
		return fmt.Errorf("%s follow %s: no replication link", node, primary)
	}
	host, port, _ := strings.Cut(l.Addr(), ":")
	if err := n.do(ctx, "replicaof", host, port); err != nil {
		return fmt.Errorf("%s follow %s: %w", node, primary, err)
	}
	return nil
}

// ReplicationLink is the link replica follows primary through.
func (d *Deployment) ReplicationLink(replica, primary string) (sut.Link, error) {
	l := d.replicationLink(replica, primary)
	if l == nil {
		return nil, fmt.Errorf("no replication link from %s to %s", replica, primary)
	}
	return l, nil
}

// Role is node's replication role as it reports it.
func (d *Deployment) Role(ctx context.Context, node string) (sut.RoleInfo, error) {
	n, err := d.Container(node)
	if err != nil {
		return sut.RoleInfo{}, err
	}
	return redisbackend.RoleAt(ctx, node, n.Addr())
}

// Elected is the master the majority of the sentinels that answered name.
func (d *Deployment) Elected(ctx context.Context) (string, error) {
	if len(d.Sentinels) == 0 {
		return "", fmt.Errorf("elected master: topology has no sentinels")
	}
	var ss []redisbackend.SentinelAddr
	for _, s := range d.Sentinels {
		ss = append(ss, redisbackend.SentinelAddr{Name: s.name, Addr: s.Addr()})
	}
	announced := d.Announced()
	return redisbackend.ElectedBy(ctx, ss, redisbackend.MasterName, func(a string) (string, bool) {
		name, ok := announced[a]
		return name, ok
	})
}

// do runs one command on the node over a direct connection: the harness
// acting as the operator, never through a faulted link.
func (n *Node) do(ctx context.Context, args ...any) error {
	cl := redisbackend.NewRedisClient(n.Addr(), sut.ClientOptions{Timeout: time.Second, PoolSize: 1})
	defer cl.Close()
	return cl.Do(ctx, args...).Err()
}

func (n *Node) setConfig(c string) {
	n.mu.Lock()
	n.config = c
	n.mu.Unlock()
}

var _ sut.Persister = (*Deployment)(nil)

// Persistence is the lock nodes' persistence mode now.
func (d *Deployment) Persistence() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cfg.Persistence
}

// SetPersistence switches every lock node to mode while it runs (CONFIG
// SET), waits until the AOF it starts is written, and keeps the mode in the
// nodes' configs, so a node started again after docker kill loads what it
// persisted (its data directory is on the host).
func (d *Deployment) SetPersistence(ctx context.Context, mode string) error {
	if _, err := redisbackend.PersistenceConfig(mode); err != nil {
		return err
	}
	for _, n := range d.Nodes {
		if err := n.setPersistence(ctx, mode); err != nil {
			return err
		}
	}
	d.mu.Lock()
	d.cfg.Persistence = mode
	primary := d.primary
	if primary == "" {
		primary = d.Nodes[0].name
	}
	for _, n := range d.Nodes {
		n.setConfig(d.nodeConfig(n, primary))
	}
	d.mu.Unlock()
	return nil
}

func (n *Node) setPersistence(ctx context.Context, mode string) error {
	cl := redisbackend.NewRedisClient(n.Addr(), sut.ClientOptions{Timeout: 2 * time.Second, PoolSize: 1})
	defer cl.Close()
	var err error
	switch mode {
	case sut.PersistNone:
		err = cl.ConfigSet(ctx, "appendonly", "no").Err()
	default:
		err = cl.ConfigSet(ctx, "appendfsync", strings.TrimPrefix(mode, "aof-")).Err()
		if err == nil {
			err = cl.ConfigSet(ctx, "appendonly", "yes").Err()
		}
	}
	if err != nil {
		return fmt.Errorf("set persistence %s on %s: %w", mode, n.name, err)
	}
	// Turning AOF on starts a rewrite; until it is done a crash loses
	// everything written before.
	return retry(ctx, 10*time.Second, 10*time.Millisecond, func() error {
		txt, err := cl.Info(ctx, "persistence").Result()
		if err != nil {
			return fmt.Errorf("set persistence %s on %s: %w", mode, n.name, err)
		}
		if !strings.Contains(txt, "aof_rewrite_in_progress:0") || !strings.Contains(txt, "aof_rewrite_scheduled:0") {
			return fmt.Errorf("set persistence %s on %s: AOF rewrite still running", mode, n.name)
		}
		return nil
	})
}

// Command sends an operator's command over a direct connection to the
// container's address (no proxy, no fault) and returns the answer as text.
func (n *Node) Command(ctx context.Context, args ...string) (string, error) {
	cl := redisbackend.NewRedisClient(n.Addr(), sut.ClientOptions{Timeout: 2 * time.Second, PoolSize: 1})
	defer cl.Close()
	a := make([]any, len(args))
	for i, s := range args {
		a[i] = s
	}
	v, err := cl.Do(ctx, a...).Result()
	if err != nil {
		return "", fmt.Errorf("%s on %s: %w", strings.Join(args, " "), n.name, err)
	}
	return fmt.Sprint(v), nil
}
