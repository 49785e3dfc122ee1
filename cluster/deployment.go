package cluster

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/lockharness/lockharness/deploy"
)

// Layout is the shape of the deployment c starts (defaults filled in), so
// a fault schedule can be drawn before it runs.
func (c Config) Layout() deploy.Layout {
	c = c.WithDefaults()
	l := deploy.Layout{Clients: c.Clients, Replicated: c.Topology == Replicated}
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
// are set. Whatever it cannot arrange, deploy.Check refuses once the
// deployment is up.
func (c Config) Provide(needs deploy.Needs) Config {
	if needs.Replicated && c.Topology == "" {
		c.Topology = Replicated
	}
	if (needs.Has(deploy.CanFailoverShard) || needs.Has(deploy.CanMoveSlots)) && c.Topology == "" {
		c.Topology = RedisCluster
	}
	if needs.Has(deploy.CanSetClock) {
		c.Faketime = true
	}
	return c
}

// The local backend behind the seam: *Cluster is a deploy.Deployment whose
// nodes are redis-server and redis-sentinel processes on this host, its
// links toxiproxy proxies embedded in this process.
var (
	_ deploy.Deployment  = (*Cluster)(nil)
	_ deploy.Replication = (*Cluster)(nil)
	_ deploy.Persister   = (*Cluster)(nil)
	_ deploy.Hinter      = (*Cluster)(nil)
	_ deploy.Killer      = node{}
	_ deploy.Pauser      = node{}
	_ deploy.Clocked     = node{}
	_ deploy.Commander   = node{}
)

// Layout is the running topology's shape.
func (c *Cluster) Layout() deploy.Layout { return c.Config().Layout() }

// Capabilities are what the local backend can do to the deployment: every
// link is a proxy (cut, slow), persistence changes with CONFIG SET, and a
// replicated topology can be failed over by hand or, with Sentinel, by
// election.
func (c *Cluster) Capabilities() deploy.Capabilities {
	cs := deploy.Capabilities{deploy.CanCutLinks, deploy.CanSlowLinks, deploy.CanDropReplies, deploy.CanSetPersistence}
	if c.Replicated() {
		cs = append(cs, deploy.CanPromote)
		if len(c.Sentinels) > 0 {
			cs = append(cs, deploy.CanElect)
		}
	}
	return cs
}

// Hint says how to get a capability the local backend lacks.
func (c *Cluster) Hint(cp deploy.Capability) string {
	switch cp {
	case deploy.CanSetClock:
		return "start the nodes under libfaketime (cluster Config.Faketime; `harness run` does it for --nemesis clock)"
	case deploy.CanPromote:
		return "use a replicated topology (--topology replicated)"
	case deploy.CanElect:
		return "use a replicated topology with Sentinel (--topology replicated --failover sentinel)"
	case deploy.CanKillConnections:
		return "a Redis lock is a key, not a session: ending a connection frees nothing (use a MySQL lock, e.g. --lock mysql-for-update)"
	case deploy.CanPartitionNodes:
		return "local processes share the host's network, where only the harness's proxies cut links: use --backend docker (nemesis partition cuts the proxies here)"
	case deploy.CanFailoverShard, deploy.CanMoveSlots:
		return "use a Redis Cluster (--topology cluster)"
	}
	return ""
}

// Node returns a lock node or a sentinel by name, behind the seam (Server
// returns its process).
func (c *Cluster) Node(name string) (deploy.Node, error) {
	for _, s := range c.Nodes {
		if s.Name == name {
			return node{Server: s, kind: deploy.KindLock}, nil
		}
	}
	for _, s := range c.Sentinels {
		if s.Name == name {
			return node{Server: s, kind: deploy.KindSentinel}, nil
		}
	}
	return nil, fmt.Errorf("no node %q in this topology", name)
}

// Members are the lock nodes, then the sentinels.
func (c *Cluster) Members() []deploy.Node {
	out := make([]deploy.Node, 0, len(c.Nodes)+len(c.Sentinels))
	for _, s := range c.Nodes {
		out = append(out, node{Server: s, kind: deploy.KindLock})
	}
	for _, s := range c.Sentinels {
		out = append(out, node{Server: s, kind: deploy.KindSentinel})
	}
	return out
}

// Network is the cluster's links.
func (c *Cluster) Network() deploy.Network { return network{c} }

// Persistence is the lock nodes' persistence mode now.
func (c *Cluster) Persistence() string { return c.Config().Persistence }

type network struct{ c *Cluster }

func (n network) Links() []deploy.Link {
	ls := n.c.Links()
	out := make([]deploy.Link, len(ls))
	for i, l := range ls {
		out[i] = l
	}
	return out
}

func (n network) Link(from, to string) (deploy.Link, error) {
	l, err := n.c.Link(from, to)
	if err != nil {
		return nil, err
	}
	return l, nil
}

// node is a Server behind the seam: a process that can be killed,
// restarted, paused and, under libfaketime, have its clock set.
type node struct {
	*Server
	kind deploy.Kind
}

func (n node) Name() string      { return n.Server.Name }
func (n node) Kind() deploy.Kind { return n.kind }

func (n node) Capabilities() deploy.Capabilities {
	cs := deploy.Capabilities{deploy.CanKill, deploy.CanPause, deploy.CanCommand}
	if n.Faked() {
		cs = append(cs, deploy.CanSetClock)
	}
	return cs
}

func (n node) Kill(context.Context) error      { return n.Server.Kill() }
func (n node) Start(ctx context.Context) error { return n.Server.Start(ctx, true) }
func (n node) Pause(context.Context) error     { return n.Server.Pause() }
func (n node) Resume(context.Context) error    { return n.Server.Resume() }

// Command sends a command to the node over a direct connection (not
// through any link) and returns its reply as text.
func (n node) Command(ctx context.Context, args ...string) (string, error) {
	cl := NewRedisClient(n.Addr(), ClientOptions{Timeout: time.Second, PoolSize: 1})
	defer cl.Close()
	a := make([]any, len(args))
	for i, x := range args {
		a[i] = x
	}
	v, err := cl.Do(ctx, a...).Result()
	if err != nil {
		return "", fmt.Errorf("%s on %s: %w", strings.Join(args, " "), n.Server.Name, err)
	}
	return fmt.Sprint(v), nil
}

// ServerOf is the process behind a node of a local cluster.
func ServerOf(n deploy.Node) (*Server, bool) {
	ln, ok := n.(node)
	return ln.Server, ok
}
