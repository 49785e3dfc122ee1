package local

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"

	"github.com/lockharness/lockharness/sut"
)

// Group is what every local backend's deployment repeats, to be embedded
// in it: its servers (the lock nodes n1…), the Redis storage node, the
// links with the proxy server that runs them, the servers' directory, and
// the start, heal, health check and teardown that go with them. The
// deployment that embeds it adds what is its system's own: how a server
// is started (program, arguments, config), its Hint, and its Heal and
// Healthy, which are g.HealAll and g.CheckHealthy of itself:
//
//	func (c *Cluster) Heal(ctx context.Context) (string, error) { return c.HealAll(ctx, c) }
//	func (c *Cluster) Healthy(ctx context.Context) error         { return c.CheckHealthy(ctx, c) }
//
// A backend's start, in order: set the fields below, Open (directory,
// proxies), HoldPorts, make the servers and their links (AddLink) on
// those ports, Start; and on error Down, which undoes whatever was done.
// RetryBusyPorts around it starts it over when a free port was taken.
//
// The methods of a sut.Deployment it provides (Layout, Capabilities,
// Node, Members, Network, Endpoints, ClientNodes, StorageAddr, Down) are
// those of a deployment whose lock nodes are its Servers and whose every
// link is a proxy; the embedding deployment overrides what differs.
type Group struct {
	// What names the deployment in errors ("etcd cluster").
	What string
	// Noun is what one server is called in errors ("member").
	Noun string
	// Clients is the number of client slots.
	Clients int
	// Peers: the servers talk among themselves (sut.Layout.Peers).
	Peers bool
	// ReadyTimeout bounds a start, and the wait for every server to serve
	// again after a heal.
	ReadyTimeout time.Duration
	// AsNode is server s behind the seam, as the backend's node type.
	AsNode func(s *Server) sut.Node
	// Serving, when set, says whether the server at addr serves (a leader
	// known, a group joined), beyond answering: HealAll waits for it and
	// CheckHealthy asks it. Without it a server serves when its Ready
	// probe answers.
	Serving func(ctx context.Context, addr string) error

	// Dir holds every server's directory (Open).
	Dir string
	// Servers are the lock nodes n1…, in name order.
	Servers []*Server
	// Storage is the Redis server holding the protected resource; no
	// fault reaches it.
	Storage *Server
	// Proxies runs the links' proxies (Open).
	Proxies *toxiproxy.ApiServer
	// Links are the group's links by name (Open).
	Links *LinkSet

	tempDir  bool
	held     []net.Listener
	onDown   []func()
	downOnce sync.Once
	downErr  error
}

// Open makes the group's directory, dir made absolute or, when dir is
// empty, a new temporary directory named after prefix that Down removes
// (WorkDir), and the proxy server its links run on.
func (g *Group) Open(dir, prefix string) error {
	var err error
	if g.Dir, g.tempDir, err = WorkDir(dir, prefix); err != nil {
		return err
	}
	g.Proxies = NewProxyServer()
	g.Links = NewLinkSet(g.What)
	return nil
}

// HoldPorts picks n free loopback ports and keeps their listeners open
// until Start (or Down), so that no proxy takes a server's port.
func (g *Group) HoldPorts(n int) ([]int, error) {
	ports, held, err := FreePorts(n)
	if err != nil {
		return nil, err
	}
	g.held = append(g.held, held...)
	return ports, nil
}

// releasePorts closes the listeners HoldPorts kept open.
func (g *Group) releasePorts() {
	for _, l := range g.held {
		_ = l.Close()
	}
	g.held = nil
}

// AddLink starts a proxy for the link from → to, forwarding to upstream
// (host:port), and puts it among the group's links.
func (g *Group) AddLink(from, to, upstream string) (*Link, error) {
	l, err := NewLink(g.Proxies, from, to, "127.0.0.1:0", upstream)
	if err != nil {
		return nil, err
	}
	g.Links.Add(l)
	return l, nil
}

// OnDown has Down call f before it stops the servers (a helper process to
// stop, a connection pool to close).
func (g *Group) OnDown(f func()) { g.onDown = append(g.onDown, f) }

// Start frees the held ports, starts the storage node, then every server,
// and waits until all of them are ready (WaitAllReady, ReadyTimeout).
func (g *Group) Start(ctx context.Context) error {
	g.releasePorts()
	all := append([]*Server{g.Storage}, g.Servers...)
	for _, s := range all {
		if err := s.Start(ctx, false); err != nil {
			return err
		}
	}
	return WaitAllReady(ctx, all, g.ReadyTimeout)
}

// Names are the servers' names, in order.
func (g *Group) Names() []string { return Names(g.Servers) }

// Layout is the group's shape: its servers as lock nodes, and the client
// slots.
func (g *Group) Layout() sut.Layout {
	return sut.Layout{Nodes: g.Names(), Clients: g.Clients, Peers: g.Peers}
}

// Capabilities: every link is a proxy.
func (g *Group) Capabilities() sut.Capabilities {
	return sut.Capabilities{sut.CanCutLinks, sut.CanSlowLinks, sut.CanDropReplies}
}

// Node returns a server by name.
func (g *Group) Node(name string) (sut.Node, error) {
	if s, ok := FindServer(g.Servers, name); ok {
		return g.AsNode(s), nil
	}
	return nil, fmt.Errorf("no %s %q in this %s", g.Noun, name, g.What)
}

// Members are the servers in name order.
func (g *Group) Members() []sut.Node {
	out := make([]sut.Node, len(g.Servers))
	for i, s := range g.Servers {
		out[i] = g.AsNode(s)
	}
	return out
}

// Network is the group's links.
func (g *Group) Network() sut.Network { return g.Links }

// Endpoints are the servers as client slot cl reaches them.
func (g *Group) Endpoints(cl int) []sut.Endpoint { return g.Links.Endpoints(cl, g.Names()...) }

// ClientNodes are the servers as client slot cl reaches them: addresses
// for the client the lock builds, and the per-request timeout.
func (g *Group) ClientNodes(cl int, o sut.ClientOptions) []sut.ClientNode {
	return sut.AddressNodes(g.Endpoints(cl), o)
}

// StorageAddr is the Redis storage node's address (direct, never faulted).
func (g *Group) StorageAddr() string { return g.Storage.Addr() }

// HealAll undoes every fault of d, the deployment g is embedded in
// (sut.HealAll), then waits until every server serves again: a restarted
// or reconnected server has caught up (Serving, asked every 50ms until
// ReadyTimeout; without it, each server's WaitReady).
func (g *Group) HealAll(ctx context.Context, d sut.Deployment) (string, error) {
	did, err := sut.HealAll(ctx, d)
	if err != nil {
		return did, err
	}
	if g.Serving != nil {
		return did, WaitEach(ctx, g.Servers, g.ReadyTimeout, g.Serving)
	}
	for _, s := range g.Servers {
		if err := s.WaitReady(ctx, g.ReadyTimeout); err != nil {
			return did, err
		}
	}
	return did, nil
}

// CheckHealthy reports what is still broken on d, the deployment g is
// embedded in: a faulted link, a server down or paused (sut.CheckHealthy),
// and a server that does not serve (Serving, or its Ready probe).
func (g *Group) CheckHealthy(ctx context.Context, d sut.Deployment) error {
	errs := []error{sut.CheckHealthy(ctx, d)}
	for _, s := range g.Servers {
		if g.Serving != nil {
			errs = append(errs, g.Serving(ctx, s.Addr()))
		} else {
			errs = append(errs, s.Ready(ctx))
		}
	}
	return errors.Join(errs...)
}

// Down runs what OnDown registered, stops every proxy and kills every
// server, then removes the directory Open made. It is safe to call more
// than once, and on a group that did not finish starting.
func (g *Group) Down() error {
	g.downOnce.Do(func() {
		g.releasePorts()
		for _, f := range g.onDown {
			f()
		}
		g.downErr = StopAll(g.Proxies, append(append([]*Server(nil), g.Servers...), g.Storage), g.Dir, g.tempDir)
	})
	return g.downErr
}
