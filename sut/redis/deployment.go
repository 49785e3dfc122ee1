package redis

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/sut/local"
)

// The local backend behind the seam: *Cluster is a sut.Deployment whose
// nodes are redis-server and redis-sentinel processes on this host, its
// links toxiproxy proxies embedded in this process.
var (
	_ sut.Deployment  = (*Cluster)(nil)
	_ sut.Replication = (*Cluster)(nil)
	_ sut.Persister   = (*Cluster)(nil)
	_ sut.Hinter      = (*Cluster)(nil)
	_ sut.Killer      = node{}
	_ sut.Pauser      = node{}
	_ sut.Clocked     = node{}
	_ sut.Commander   = node{}
)

// Layout is the running topology's shape.
func (c *Cluster) Layout() sut.Layout { return c.Config().Layout() }

// Capabilities are what the local backend can do to the deployment: every
// link is a proxy (cut, slow), persistence changes with CONFIG SET, and a
// replicated topology can be failed over by hand or, with Sentinel, by
// election.
func (c *Cluster) Capabilities() sut.Capabilities {
	cs := sut.Capabilities{sut.CanCutLinks, sut.CanSlowLinks, sut.CanDropReplies, sut.CanSetPersistence}
	if c.Replicated() {
		cs = append(cs, sut.CanPromote)
		if len(c.Sentinels) > 0 {
			cs = append(cs, sut.CanElect)
		}
	}
	return cs
}

// Hint says how to get a capability the local backend lacks.
func (c *Cluster) Hint(cp sut.Capability) string {
	switch cp {
	case sut.CanSetClock:
		return "start the nodes under libfaketime (sut.Config.Faketime; `harness run` does it for --nemesis clock)"
	case sut.CanPromote:
		return "use a replicated topology (--topology replicated)"
	case sut.CanElect:
		return "use a replicated topology with Sentinel (--topology replicated --failover sentinel)"
	case sut.CanKillConnections:
		return "a Redis lock is a key, not a session: ending a connection frees nothing (use a MySQL lock, e.g. --lock mysql-for-update)"
	case sut.CanPartitionNodes:
		return "local processes share the host's network, where only the harness's proxies cut links: use --backend docker (nemesis partition cuts the proxies here)"
	case sut.CanFailoverShard, sut.CanMoveSlots:
		return "use a Redis Cluster (--topology cluster)"
	}
	return ""
}

// Node returns a lock node or a sentinel by name, behind the seam (local.Server
// returns its process).
func (c *Cluster) Node(name string) (sut.Node, error) {
	for _, s := range c.Nodes {
		if s.Name == name {
			return node{Server: s, kind: sut.KindLock}, nil
		}
	}
	for _, s := range c.Sentinels {
		if s.Name == name {
			return node{Server: s, kind: sut.KindSentinel}, nil
		}
	}
	return nil, fmt.Errorf("no node %q in this topology", name)
}

// Members are the lock nodes, then the sentinels.
func (c *Cluster) Members() []sut.Node {
	out := make([]sut.Node, 0, len(c.Nodes)+len(c.Sentinels))
	for _, s := range c.Nodes {
		out = append(out, node{Server: s, kind: sut.KindLock})
	}
	for _, s := range c.Sentinels {
		out = append(out, node{Server: s, kind: sut.KindSentinel})
	}
	return out
}

// Network is the cluster's links.
func (c *Cluster) Network() sut.Network { return network{c} }

// Persistence is the lock nodes' persistence mode now.
func (c *Cluster) Persistence() string { return c.Config().Persistence }

type network struct{ c *Cluster }

func (n network) Links() []sut.Link {
	ls := n.c.Links()
	out := make([]sut.Link, len(ls))
	for i, l := range ls {
		out[i] = l
	}
	return out
}

func (n network) Link(from, to string) (sut.Link, error) {
	l, err := n.c.Link(from, to)
	if err != nil {
		return nil, err
	}
	return l, nil
}

// NewNode is redis-server (or redis-sentinel) s behind the seam, a node of
// kind (NewNode(s, sut.KindLock) for a Redis Cluster's node).
func NewNode(s *local.Server, kind sut.Kind) sut.Node { return node{Server: s, kind: kind} }

// node is a local.Server behind the seam: a process that can be killed,
// restarted, paused and, under libfaketime, have its clock set.
type node struct {
	*local.Server
	kind sut.Kind
}

func (n node) Name() string   { return n.Server.Name }
func (n node) Kind() sut.Kind { return n.kind }

func (n node) Capabilities() sut.Capabilities {
	cs := sut.Capabilities{sut.CanKill, sut.CanPause, sut.CanCommand}
	if n.Faked() {
		cs = append(cs, sut.CanSetClock)
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
	cl := NewRedisClient(n.Addr(), sut.ClientOptions{Timeout: time.Second, PoolSize: 1})
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
func ServerOf(n sut.Node) (*local.Server, bool) {
	ln, ok := n.(node)
	return ln.Server, ok
}
