package sut_test

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/lockharness/lockharness/sut"
)

// A fake deployment for the seam's own logic (Check, As, HealAll,
// CheckHealthy): the seam runs no server, so neither do its tests. What
// runs real servers is tested with each backend.

// fakeLink is a link whose faults are names in a list.
type fakeLink struct {
	from, to string
	faults   []string
}

func (l *fakeLink) Name() string { return sut.LinkName(l.from, l.to) }
func (l *fakeLink) From() string { return l.from }
func (l *fakeLink) To() string   { return l.to }
func (l *fakeLink) Addr() string { return "addr-of-" + l.Name() }
func (l *fakeLink) Cut() error   { l.faults = append(l.faults, "cut"); return nil }
func (l *fakeLink) Uncut(context.Context) error {
	l.faults = slices.DeleteFunc(l.faults, isCut)
	return nil
}
func (l *fakeLink) IsCut() bool { return slices.ContainsFunc(l.faults, isCut) }
func (l *fakeLink) Slow(time.Duration, time.Duration) error {
	l.faults = append(l.faults, "slow")
	return nil
}
func (l *fakeLink) Unslow(context.Context) error {
	l.faults = slices.DeleteFunc(l.faults, isSlow)
	return nil
}
func (l *fakeLink) Heal(context.Context) { l.faults = nil }
func (l *fakeLink) Faults() []string     { return slices.Clone(l.faults) }

func isCut(f string) bool  { return f == "cut" }
func isSlow(f string) bool { return f == "slow" }

// fakeNode is a process that can be killed, paused and have its clock
// set, when its capabilities say so.
type fakeNode struct {
	name    string
	kind    sut.Kind
	caps    sut.Capabilities
	dead    bool
	paused  bool
	clock   sut.Clock
	started int // restarts
}

func (n *fakeNode) Name() string                   { return n.name }
func (n *fakeNode) Kind() sut.Kind                 { return n.kind }
func (n *fakeNode) Capabilities() sut.Capabilities { return n.caps }
func (n *fakeNode) Kill(context.Context) error     { n.dead = true; return nil }
func (n *fakeNode) Start(context.Context) error    { n.dead = false; n.started++; return nil }
func (n *fakeNode) Running() bool                  { return !n.dead }
func (n *fakeNode) Pause(context.Context) error    { n.paused = true; return nil }
func (n *fakeNode) Resume(context.Context) error   { n.paused = false; return nil }
func (n *fakeNode) Paused() bool                   { return n.paused }
func (n *fakeNode) Clock() sut.Clock               { return n.clock }
func (n *fakeNode) SetClock(skew time.Duration, rate float64) error {
	n.clock = sut.Clock{Skew: skew, Rate: rate, Since: time.Now()}
	return nil
}

// ConfirmClock reads what was set: a fake clock takes effect at once.
func (n *fakeNode) ConfirmClock(context.Context, time.Duration, time.Duration) (time.Duration, error) {
	return n.clock.Skew, nil
}

var (
	_ sut.Killer  = (*fakeNode)(nil)
	_ sut.Pauser  = (*fakeNode)(nil)
	_ sut.Clocked = (*fakeNode)(nil)
)

// fakeDeployment is lock nodes n1…, sentinels, and a link from c0 to every
// node; replicated, it follows a master through per-pair links and keeps
// every node's role as the nodes would report it.
type fakeDeployment struct {
	layout sut.Layout
	caps   sut.Capabilities
	nodes  []*fakeNode
	links  []*fakeLink
	hints  map[sut.Capability]string

	primary     string
	roles       map[string]sut.RoleInfo
	elected     string
	partitioned []string
}

// newFake is a deployment of nodes lock nodes with nodeCaps each and
// sentinels sentinels (which can do nothing), with capabilities caps.
func newFake(nodes, sentinels int, nodeCaps, caps sut.Capabilities) *fakeDeployment {
	d := &fakeDeployment{caps: caps, roles: map[string]sut.RoleInfo{}, layout: sut.Layout{Clients: 1}}
	for i := 1; i <= nodes; i++ {
		name := fmt.Sprintf("n%d", i)
		d.layout.Nodes = append(d.layout.Nodes, name)
		d.nodes = append(d.nodes, &fakeNode{name: name, kind: sut.KindLock, caps: nodeCaps, clock: sut.RealClock})
		d.links = append(d.links, &fakeLink{from: sut.ClientName(0), to: name})
	}
	for i := 1; i <= sentinels; i++ {
		name := fmt.Sprintf("s%d", i)
		d.layout.Sentinels = append(d.layout.Sentinels, name)
		d.nodes = append(d.nodes, &fakeNode{name: name, kind: sut.KindSentinel})
	}
	return d
}

// replicated makes d a master (n1) with its other nodes as replicas, in
// sync, each with its own link to every other node.
func (d *fakeDeployment) replicated() *fakeDeployment {
	d.layout.Replicated = true
	d.primary = "n1"
	for _, a := range d.layout.Nodes {
		for _, b := range d.layout.Nodes {
			if a != b {
				d.links = append(d.links, &fakeLink{from: a, to: b})
			}
		}
	}
	for _, n := range d.layout.Nodes {
		d.roles[n] = sut.RoleInfo{Role: sut.RoleReplica, MasterAddr: "addr-of-" + sut.LinkName(n, "n1"), LinkUp: true}
	}
	d.roles["n1"] = sut.RoleInfo{Role: sut.RoleMaster, Replicas: len(d.layout.Nodes) - 1}
	return d
}

func (d *fakeDeployment) node(name string) *fakeNode {
	for _, n := range d.nodes {
		if n.name == name {
			return n
		}
	}
	return nil
}

func (d *fakeDeployment) Layout() sut.Layout             { return d.layout }
func (d *fakeDeployment) Capabilities() sut.Capabilities { return d.caps }
func (d *fakeDeployment) Node(name string) (sut.Node, error) {
	if n := d.node(name); n != nil {
		return n, nil
	}
	return nil, fmt.Errorf("no node %q", name)
}
func (d *fakeDeployment) Members() []sut.Node {
	out := make([]sut.Node, len(d.nodes))
	for i, n := range d.nodes {
		out[i] = n
	}
	return out
}
func (d *fakeDeployment) Network() sut.Network                                { return fakeNetwork{d} }
func (d *fakeDeployment) Endpoints(int) []sut.Endpoint                        { return nil }
func (d *fakeDeployment) ClientNodes(int, sut.ClientOptions) []sut.ClientNode { return nil }
func (d *fakeDeployment) StorageAddr() string                                 { return "storage" }
func (d *fakeDeployment) Heal(ctx context.Context) (string, error)            { return sut.HealAll(ctx, d) }
func (d *fakeDeployment) Healthy(ctx context.Context) error                   { return sut.CheckHealthy(ctx, d) }
func (d *fakeDeployment) Down() error                                         { return nil }
func (d *fakeDeployment) Hint(c sut.Capability) string                        { return d.hints[c] }

type fakeNetwork struct{ d *fakeDeployment }

func (n fakeNetwork) Links() []sut.Link {
	out := make([]sut.Link, len(n.d.links))
	for i, l := range n.d.links {
		out[i] = l
	}
	return out
}

func (n fakeNetwork) Link(from, to string) (sut.Link, error) {
	for _, l := range n.d.links {
		if l.from == from && l.to == to {
			return l, nil
		}
	}
	return nil, fmt.Errorf("no link %s", sut.LinkName(from, to))
}

// Replication, by hand: the roles change only when the harness says.

func (d *fakeDeployment) Primary() string { return d.primary }
func (d *fakeDeployment) SetPrimary(node string) error {
	d.primary = node
	return nil
}
func (d *fakeDeployment) Promote(_ context.Context, node string) error {
	d.roles[node] = sut.RoleInfo{Role: sut.RoleMaster}
	return nil
}
func (d *fakeDeployment) Follow(_ context.Context, node, primary string) error {
	d.roles[node] = sut.RoleInfo{Role: sut.RoleReplica, MasterAddr: "addr-of-" + sut.LinkName(node, primary), LinkUp: true}
	return nil
}
func (d *fakeDeployment) ReplicationLink(replica, primary string) (sut.Link, error) {
	return d.Network().Link(replica, primary)
}
func (d *fakeDeployment) Role(_ context.Context, node string) (sut.RoleInfo, error) {
	return d.roles[node], nil
}
func (d *fakeDeployment) Elected(context.Context) (string, error) {
	if d.elected == "" {
		return "", fmt.Errorf("no sentinel answers")
	}
	return d.elected, nil
}

// NodePartitioner: the members cut off from another, by name.

func (d *fakeDeployment) PartitionNodes(_ context.Context, pairs [][2]string) error {
	for _, p := range pairs {
		for _, n := range p {
			if !slices.Contains(d.partitioned, n) {
				d.partitioned = append(d.partitioned, n)
			}
		}
	}
	sort.Strings(d.partitioned)
	return nil
}
func (d *fakeDeployment) HealNodes(context.Context) error { d.partitioned = nil; return nil }
func (d *fakeDeployment) PartitionedNodes() []string      { return slices.Clone(d.partitioned) }

var (
	_ sut.Deployment      = (*fakeDeployment)(nil)
	_ sut.Replication     = (*fakeDeployment)(nil)
	_ sut.NodePartitioner = (*fakeDeployment)(nil)
	_ sut.Hinter          = (*fakeDeployment)(nil)
)
