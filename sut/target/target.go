// Package target is a deployment the harness did not start: a compose
// project, a user's staging Redis. A target file names each node's address
// and role, and optionally its container. The harness puts its own proxies
// in front of every address, so client-side faults (partition, latency)
// work everywhere; server faults (pause, kill) only on nodes whose
// container is named, through the Docker engine, and the native partition
// (members cut off from each other in the target's own network) when every
// member's container is named and the harness runs as root. Nothing else of the
// deployment is touched, and Down leaves it as it was found: what the
// harness paused is resumed, what it killed is started again.
package target

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
	"gopkg.in/yaml.v3"

	"github.com/lockharness/lockharness/inputfile"
	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/sut/docker"
	"github.com/lockharness/lockharness/sut/local"
	redisbackend "github.com/lockharness/lockharness/sut/redis"
)

// File is a target file: the deployment's shape and where its nodes are.
type File struct {
	// Topology is sut.Independent (every node a master: Redlock) or
	// sut.Replicated (one master, its replicas, Sentinels).
	Topology string `yaml:"topology"`
	// MasterName is the name the sentinels monitor the master under
	// (default redisbackend.MasterName, "mymaster").
	MasterName string `yaml:"master-name"`
	// Nodes are the lock nodes; Sentinels the failure detectors.
	Nodes     []NodeSpec `yaml:"nodes"`
	Sentinels []NodeSpec `yaml:"sentinels"`
	// Storage is the address of a Redis that holds the protected
	// resource; no fault reaches it.
	Storage string `yaml:"storage"`
	// Flush lets the harness empty (FLUSHALL) the storage and every
	// master at the start of each run. The verdicts assume a fresh
	// counter and no lock left over from an earlier run, so without it a
	// run refuses a target whose nodes hold keys.
	Flush bool `yaml:"flush"`
}

// NodeSpec is one node of a target file.
type NodeSpec struct {
	// Name is how the harness calls the node (n1…, s1…).
	Name string `yaml:"name"`
	// Addr is host:port as the harness's host reaches it, and as the
	// deployment names it (a Sentinel's answer for the master).
	Addr string `yaml:"addr"`
	// Role is master or replica (replicated), or empty.
	Role string `yaml:"role"`
	// Container, when set, is the node's Docker container: pause and kill
	// act on it.
	Container string `yaml:"container"`
}

// MaxFileSize bounds a target file: a node is a few lines.
const MaxFileSize = 1 << 20

// Load reads and checks a target file (Parse, then CheckAddresses). It is
// read through inputfile: a regular file (a FIFO is refused, not waited
// for) of at most MaxFileSize.
func Load(path string) (File, error) {
	b, err := inputfile.Read(context.Background(), path, inputfile.Kind{Name: "target file", Max: MaxFileSize})
	if err != nil {
		return File{}, fmt.Errorf("%w (write one like compose/sentinel.target.yml)", err)
	}
	f, err := Parse(b)
	if err == nil {
		err = f.CheckAddresses(context.Background())
	}
	if err != nil {
		return File{}, fmt.Errorf("target file %s: %w", path, err)
	}
	return f, nil
}

// Parse parses and checks (Validate) the YAML of a target file, defaults
// filled in; an unknown field is an error. It looks nothing up:
// CheckAddresses resolves the addresses.
func Parse(b []byte) (File, error) {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var f File
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		return File{}, err
	}
	var more yaml.Node
	if err := dec.Decode(&more); !errors.Is(err, io.EOF) {
		return File{}, errors.New("more than one YAML document (a line of ---): describe the deployment in one")
	}
	f = f.WithDefaults()
	if err := f.Validate(); err != nil {
		return File{}, err
	}
	return f, nil
}

// WithDefaults fills in unset fields.
func (f File) WithDefaults() File {
	if f.Topology == "" {
		f.Topology = sut.Independent
	}
	if f.MasterName == "" {
		f.MasterName = redisbackend.MasterName
	}
	return f
}

// Validate rejects a file the harness cannot run against, naming the
// field and what it should be.
func (f File) Validate() error {
	if len(f.Nodes) == 0 {
		return errors.New("no nodes: list the lock nodes under nodes: with their name and addr")
	}
	seen := seenNodes{names: map[string]bool{}, addrs: map[string]bool{}}
	masters, err := f.validateNodes(seen)
	if err != nil {
		return err
	}
	if err := f.validateTopology(masters); err != nil {
		return err
	}
	for i, s := range f.Sentinels {
		if s.Role != "" && s.Role != "sentinel" {
			return fmt.Errorf("sentinel %s: role %q (leave it out)", s.Name, s.Role)
		}
		if err := seen.check("sentinels", i, s); err != nil {
			return err
		}
	}
	if f.Storage == "" {
		return errors.New("no storage: name a Redis (storage: host:port) to hold the protected resource, one no fault reaches")
	}
	if err := checkAddr(f.Storage); err != nil {
		return fmt.Errorf("storage: %w", err)
	}
	if seen.addrs[f.Storage] {
		return fmt.Errorf("storage %s is also a lock node: it must be a Redis of its own", f.Storage)
	}
	return nil
}

// seenNodes are the names and addresses of the nodes and sentinels
// checked so far: each may be used once.
type seenNodes struct{ names, addrs map[string]bool }

// check checks node i of kind (nodes or sentinels): a name and an address
// of its own.
func (seen seenNodes) check(kind string, i int, n NodeSpec) error {
	if n.Name == "" {
		return fmt.Errorf("%s[%d] has no name", kind, i)
	}
	if seen.names[n.Name] {
		return fmt.Errorf("%s[%d]: name %q used twice", kind, i, n.Name)
	}
	seen.names[n.Name] = true
	if err := checkAddr(n.Addr); err != nil {
		return fmt.Errorf("%s %s: %w", kind, n.Name, err)
	}
	if seen.addrs[n.Addr] {
		return fmt.Errorf("%s %s: address %s used twice", kind, n.Name, n.Addr)
	}
	seen.addrs[n.Addr] = true
	return nil
}

// validateNodes checks each lock node, and its role in the topology, in
// order; it counts the masters.
func (f File) validateNodes(seen seenNodes) (masters int, err error) {
	for i, n := range f.Nodes {
		if err := seen.check("nodes", i, n); err != nil {
			return 0, err
		}
		switch {
		case f.Topology == sut.Independent && n.Role != "" && n.Role != "master":
			return 0, fmt.Errorf("node %s: role %q in an independent topology (every node is a master; leave role out)", n.Name, n.Role)
		case f.Topology == sut.Replicated && n.Role != "master" && n.Role != "replica":
			return 0, fmt.Errorf("node %s: role %q, want master or replica", n.Name, n.Role)
		}
		if n.Role == "master" {
			masters++
		}
	}
	return masters, nil
}

// validateTopology checks the topology against the masters counted and
// the sentinels listed.
func (f File) validateTopology(masters int) error {
	switch f.Topology {
	case sut.Independent:
		if len(f.Sentinels) > 0 {
			return errors.New("sentinels in an independent topology: use topology: replicated")
		}
	case sut.Replicated:
		if masters != 1 {
			return fmt.Errorf("replicated topology with %d masters, want exactly one node with role: master", masters)
		}
	default:
		return fmt.Errorf("unknown topology %q (want %s or %s)", f.Topology, sut.Independent, sut.Replicated)
	}
	return nil
}

func checkAddr(a string) error {
	host, port, err := net.SplitHostPort(a)
	if err != nil || host == "" {
		return fmt.Errorf("address %q is not host:port", a)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return fmt.Errorf("address %q: bad port", a)
	}
	return nil
}

// Node is a node of the target.
type Node struct {
	spec NodeSpec
	kind sut.Kind
	ctr  *docker.Container // nil: no container named; it remembers what the harness did to it
}

// Name is the node's name in the file.
func (n *Node) Name() string { return n.spec.Name }

// Kind is lock or sentinel.
func (n *Node) Kind() sut.Kind { return n.kind }

// Addr is the node's own address (no proxy).
func (n *Node) Addr() string { return n.spec.Addr }

// Capabilities: pause and kill when its container is named.
func (n *Node) Capabilities() sut.Capabilities {
	if n.ctr == nil {
		return nil
	}
	return sut.Capabilities{sut.CanKill, sut.CanPause}
}

// Pause freezes the node's container.
func (n *Node) Pause(ctx context.Context) error {
	if err := n.needContainer(sut.CanPause); err != nil {
		return err
	}
	return n.ctr.Pause(ctx)
}

// Resume thaws it; a node the harness did not pause is left alone.
func (n *Node) Resume(ctx context.Context) error {
	if !n.Paused() {
		return nil
	}
	return n.ctr.Resume(ctx)
}

// Paused reports whether the harness paused it.
func (n *Node) Paused() bool { return n.ctr.Paused() }

// Kill kills the node's container.
func (n *Node) Kill(ctx context.Context) error {
	if err := n.needContainer(sut.CanKill); err != nil {
		return err
	}
	return n.ctr.Kill(ctx)
}

// Start starts a killed container and waits until it answers; a node the
// harness did not kill is left alone.
func (n *Node) Start(ctx context.Context) error {
	if n.Running() {
		return nil
	}
	if err := n.ctr.Start(ctx); err != nil {
		return err
	}
	return waitPing(ctx, n.Addr(), 30*time.Second)
}

// Running reports whether the harness has not killed it.
func (n *Node) Running() bool { return !n.ctr.Killed() }

func (n *Node) needContainer(c sut.Capability) error {
	if n.ctr == nil {
		return &sut.UnsupportedError{Capability: c, Target: n.Name(),
			Hint: "name its container in the target file (container: NAME)"}
	}
	return nil
}

var (
	_ sut.Deployment  = (*Deployment)(nil)
	_ sut.Replication = (*Deployment)(nil)
	_ sut.Killer      = (*Node)(nil)
	_ sut.Pauser      = (*Node)(nil)
)

// Deployment is a target the harness runs against.
type Deployment struct {
	file    File
	clients int
	nodes   []*Node
	sents   []*Node
	proxies *toxiproxy.ApiServer
	links   map[string]*local.Link
	// native cuts the members off from each other inside the target's own
	// network; nil unless every member's container is named and the
	// harness can reach their network namespaces (docker.HostNetns).
	native *docker.NativePartition

	mu      sync.Mutex
	primary string

	downOnce sync.Once
	downErr  error
}

// Open checks that every node of f answers PING and every named container
// exists, then starts the harness's proxies: one per client slot per node
// and sentinel, on 127.0.0.1. It starts nothing else.
func Open(ctx context.Context, f File, clients int) (_ *Deployment, err error) {
	f = f.WithDefaults()
	if err := f.Validate(); err != nil {
		return nil, err
	}
	if err := f.CheckAddresses(ctx); err != nil {
		return nil, err
	}
	if clients < 1 {
		return nil, fmt.Errorf("clients must be at least 1, got %d", clients)
	}
	d := &Deployment{file: f, clients: clients, links: map[string]*local.Link{}}
	defer func() {
		if err != nil {
			_ = d.Down()
		}
	}()
	specs := append(append([]NodeSpec(nil), f.Nodes...), f.Sentinels...)
	for i, s := range specs {
		n := &Node{spec: s, kind: sut.KindLock}
		if i >= len(f.Nodes) {
			n.kind = sut.KindSentinel
		}
		if err := pingStarting(ctx, s.Addr, startingWait); err != nil {
			return nil, fmt.Errorf("%s at %s does not answer PING: %w (is the deployment up? is the address reachable from this host?)", s.Name, s.Addr, err)
		}
		if s.Container != "" {
			if n.ctr, err = docker.AttachContainer(ctx, s.Container); err != nil {
				return nil, fmt.Errorf("%s: %w", s.Name, err)
			}
		}
		if n.kind == sut.KindLock {
			d.nodes = append(d.nodes, n)
			if s.Role == "master" {
				d.primary = s.Name
			}
		} else {
			d.sents = append(d.sents, n)
		}
	}
	if err := pingStarting(ctx, f.Storage, startingWait); err != nil {
		return nil, fmt.Errorf("storage at %s does not answer PING: %w", f.Storage, err)
	}
	if err := d.checkRoles(ctx); err != nil {
		return nil, err
	}
	if d.native, err = d.nativePartition(ctx); err != nil {
		return nil, err
	}
	if err := d.empty(ctx); err != nil {
		return nil, err
	}
	zerolog.SetGlobalLevel(zerolog.Disabled)
	d.proxies = toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	for cl := 0; cl < clients; cl++ {
		for _, n := range append(append([]*Node(nil), d.nodes...), d.sents...) {
			l, err := local.NewLink(d.proxies, sut.ClientName(cl), n.Name(), "127.0.0.1:0", n.Addr())
			if err != nil {
				return nil, err
			}
			d.links[l.Name()] = l
		}
	}
	return d, nil
}

// Backend runs the harness against the target of file f: the run's
// topology must be one the target has (a lock or a fault that needs a
// master with replicas needs a replicated target), and each run opens it
// anew with as many client slots as the run has clients.
func Backend(f File) sut.Backend {
	return func(ctx context.Context, c sut.Config) (sut.Deployment, error) {
		c = c.WithDefaults()
		if c.Topology == sut.Replicated && f.Topology != sut.Replicated {
			return nil, fmt.Errorf("the run needs a master with replicas (its lock or its faults), and the target is %s (use a replicated target): %w", f.Topology, sut.ErrUnsupported)
		}
		if c.Topology == sut.Replicated && c.Failover == sut.FailoverManual {
			return nil, fmt.Errorf("manual failover cuts a replica's replication link, and a target's replicas reach their master directly, not through the harness (use --backend docker or local): %w", sut.ErrUnsupported)
		}
		if f.Topology == sut.Independent && c.Nodes > len(f.Nodes) {
			return nil, fmt.Errorf("the run needs %d independent nodes, and the target has %d: %w", c.Nodes, len(f.Nodes), sut.ErrUnsupported)
		}
		if f.Topology == sut.Independent {
			// The faults strike only the nodes the lock uses.
			f.Nodes = f.Nodes[:c.Nodes]
		}
		d, err := Open(ctx, f, c.Clients)
		if err != nil {
			return nil, err
		}
		return d, nil
	}
}

// empty makes sure the storage and every master hold no keys: it flushes
// them when the file allows it (Flush), and refuses otherwise. Replicas
// follow their master.
func (d *Deployment) empty(ctx context.Context) error {
	addrs := []string{d.file.Storage}
	for _, n := range d.nodes {
		ri, err := redisbackend.RoleAt(ctx, n.Name(), n.Addr())
		if err != nil {
			return err
		}
		if ri.Role == "master" {
			addrs = append(addrs, n.Addr())
		}
	}
	for _, a := range addrs {
		cl := redisbackend.NewRedisClient(a, sut.ClientOptions{Timeout: 2 * time.Second, PoolSize: 1})
		keys, err := cl.DBSize(ctx).Result()
		if err == nil && keys > 0 && d.file.Flush {
			err = cl.FlushAll(ctx).Err()
			keys = 0
		}
		_ = cl.Close()
		if err != nil {
			return fmt.Errorf("empty %s: %w", a, err)
		}
		if keys > 0 {
			return fmt.Errorf("%s holds %d keys: the harness needs the target's storage and masters empty (a fresh counter, no leftover lock); empty them, or set flush: true in the target file to let the harness FLUSHALL them at every start", a, keys)
		}
	}
	return nil
}

// File is the target file the deployment was opened from.
func (d *Deployment) File() File { return d.file }

// Layout is the target's shape.
func (d *Deployment) Layout() sut.Layout {
	l := sut.Layout{Clients: d.clients, Replicated: d.file.Topology == sut.Replicated}
	l.Elected = l.Replicated && len(d.sents) > 0
	for _, n := range d.nodes {
		l.Nodes = append(l.Nodes, n.Name())
	}
	for _, s := range d.sents {
		l.Sentinels = append(l.Sentinels, s.Name())
	}
	return l
}

// Capabilities: the client links can be cut, slowed and made to drop
// replies; a replicated
// target with sentinels elects its master. The harness does not own the
// replication links, so it cannot fail the master over by hand.
func (d *Deployment) Capabilities() sut.Capabilities {
	cs := sut.Capabilities{sut.CanCutLinks, sut.CanSlowLinks, sut.CanDropReplies}
	if d.file.Topology == sut.Replicated && len(d.sents) > 0 {
		cs = append(cs, sut.CanElect)
	}
	if d.native != nil {
		cs = append(cs, sut.CanPartitionNodes)
	}
	return cs
}

// Hint says how to get what the target lacks.
func (d *Deployment) Hint(c sut.Capability) string {
	switch c {
	case sut.CanKill, sut.CanPause:
		return "name each node's container in the target file (container: NAME)"
	case sut.CanSetClock:
		return "a target's clocks are its own: use --backend docker or local for clock faults"
	case sut.CanPromote:
		return "the harness does not own a target's replication links: use --backend docker or local for manual failover"
	case sut.CanSetPersistence:
		return "a target's persistence is its own configuration"
	case sut.CanPartitionNodes:
		if !docker.HostNetns() {
			return "the harness changes a target's network from the host: run it as root with nsenter and iptables (or use --backend docker)"
		}
		return "name every node's and sentinel's container in the target file (container: NAME), or use --backend docker"
	}
	return ""
}

// Node returns a lock node or sentinel by name.
func (d *Deployment) Node(name string) (sut.Node, error) {
	for _, n := range d.all() {
		if n.Name() == name {
			return n, nil
		}
	}
	return nil, fmt.Errorf("no node %q in the target", name)
}

func (d *Deployment) all() []*Node { return append(append([]*Node(nil), d.nodes...), d.sents...) }

// Members are the lock nodes, then the sentinels.
func (d *Deployment) Members() []sut.Node {
	var out []sut.Node
	for _, n := range d.all() {
		out = append(out, n)
	}
	return out
}

// Network is the harness's proxies in front of the target.
func (d *Deployment) Network() sut.Network { return network{d} }

type network struct{ d *Deployment }

func (nw network) Links() []sut.Link {
	var out []sut.Link
	for _, l := range nw.d.links {
		out = append(out, l)
	}
	slices.SortFunc(out, func(a, b sut.Link) int { return strings.Compare(a.Name(), b.Name()) })
	return out
}

func (nw network) Link(from, to string) (sut.Link, error) {
	l := nw.d.links[sut.LinkName(from, to)]
	if l == nil {
		return nil, fmt.Errorf("no link %s in the target (the harness fronts only client links)", sut.LinkName(from, to))
	}
	return l, nil
}

// Endpoints are the lock nodes through client cl's own proxies.
func (d *Deployment) Endpoints(cl int) []sut.Endpoint {
	var out []sut.Endpoint
	for _, n := range d.nodes {
		if l := d.links[sut.LinkName(sut.ClientName(cl), n.Name())]; l != nil {
			out = append(out, sut.Endpoint{Node: n.Name(), Addr: l.Addr()})
		}
	}
	return out
}

// ClientNodes returns the lock nodes as client slot cl reaches them
// through its own proxies: one client per node (independent), or one
// Sentinel client (replicated) that asks the sentinels through the client's
// links and reaches the master they name through the client's link to it.
// The caller closes them (sut.CloseClientNodes).
func (d *Deployment) ClientNodes(cl int, o sut.ClientOptions) []sut.ClientNode {
	from := sut.ClientName(cl)
	if d.file.Topology != sut.Replicated {
		var out []sut.ClientNode
		for _, ep := range d.Endpoints(cl) {
			out = append(out, sut.ClientNode{Name: ep.Node, Client: redisbackend.NewRedisClient(ep.Addr, o)})
		}
		return out
	}
	linkAddr := func(name string) (string, bool) {
		l := d.links[sut.LinkName(from, name)]
		if l == nil {
			return "", false
		}
		return l.Addr(), true
	}
	if len(d.sents) == 0 {
		// No failure detector: the clients follow the file's master.
		a, _ := linkAddr(d.Primary())
		return []sut.ClientNode{{Name: redisbackend.MasterNodeName, Client: redisbackend.NewRedisClient(a, o)}}
	}
	var addrs []string
	for _, s := range d.sents {
		if a, ok := linkAddr(s.Name()); ok {
			addrs = append(addrs, a)
		}
	}
	dial := redisbackend.AnnounceDialer(redisbackend.AnnouncedLinks(d.Announced(), linkAddr), o.WithDefaults().Timeout)
	return []sut.ClientNode{{Name: redisbackend.MasterNodeName, Client: redisbackend.NewFailoverClient(d.file.MasterName, addrs, dial, o)}}
}

// StorageAddr is the file's storage address.
func (d *Deployment) StorageAddr() string { return d.file.Storage }

// Announced maps the addresses the target hands out (a Sentinel's answer
// for the master, the sentinels' own) to node names, so a client dials its
// own link instead.
func (d *Deployment) Announced() map[string]string {
	out := map[string]string{}
	for _, n := range d.all() {
		out[n.Addr()] = n.Name()
	}
	return out
}

// Heal removes every fault the harness caused: toxics on its proxies,
// containers it paused or killed.
func (d *Deployment) Heal(ctx context.Context) (string, error) {
	var did []string
	var errs []error
	for _, l := range d.links {
		if l.Faulted() {
			l.Heal(ctx)
			did = append(did, "healed link "+l.Name())
		}
	}
	for _, n := range d.all() {
		if n.Paused() {
			if err := n.Resume(ctx); err != nil {
				errs = append(errs, err)
			} else {
				did = append(did, "resumed "+n.Name())
			}
		}
		if !n.Running() {
			if err := n.Start(ctx); err != nil {
				errs = append(errs, err)
			} else {
				did = append(did, "started "+n.Name())
			}
		}
	}
	// After the resumes: a paused container's network cannot be changed.
	if cut := d.PartitionedNodes(); len(cut) > 0 {
		if err := d.HealNodes(ctx); err != nil {
			errs = append(errs, err)
		} else {
			did = append(did, "rejoined "+strings.Join(cut, ", "))
		}
	}
	if len(did) == 0 {
		return "nothing to heal", errors.Join(errs...)
	}
	return strings.Join(did, ", "), errors.Join(errs...)
}

// Healthy reports faults still in place and nodes that do not answer.
func (d *Deployment) Healthy(ctx context.Context) error {
	var errs []error
	for _, l := range d.links {
		if l.Faulted() {
			errs = append(errs, fmt.Errorf("link %s has faults %v", l.Name(), l.Faults()))
		}
	}
	if cut := d.PartitionedNodes(); len(cut) > 0 {
		errs = append(errs, fmt.Errorf("%s still cut off from other nodes", strings.Join(cut, ", ")))
	}
	for _, n := range d.all() {
		if err := redisbackend.Ping(ctx, n.Addr(), time.Second); err != nil {
			errs = append(errs, fmt.Errorf("%s does not answer: %w", n.Name(), err))
		}
	}
	return errors.Join(errs...)
}

// Down heals what the harness did to the target's containers, stops its
// proxies and releases the Docker handles. The target itself keeps running.
func (d *Deployment) Down() error {
	d.downOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		var errs []error
		if d.proxies != nil {
			d.proxies.Collection.Clear()
		}
		for _, n := range d.all() {
			if n.ctr == nil {
				continue
			}
			if n.Paused() {
				errs = append(errs, n.Resume(ctx))
			}
			if !n.Running() {
				errs = append(errs, n.Start(ctx))
			}
		}
		// After the resumes: a paused container's network cannot be changed.
		if len(d.PartitionedNodes()) > 0 {
			errs = append(errs, d.HealNodes(ctx))
		}
		for _, n := range d.all() {
			if n.ctr != nil {
				errs = append(errs, n.ctr.Close())
			}
		}
		d.downErr = errors.Join(errs...)
	})
	return d.downErr
}

var _ sut.NodePartitioner = (*Deployment)(nil)

// nativePartition is the target's native partition when every member's
// container is named and the harness may enter their network namespaces
// from the host (the containers need neither iptables nor NET_ADMIN then);
// nil otherwise. A target's members reach each other directly, at their
// containers' addresses: the rules drop those.
func (d *Deployment) nativePartition(ctx context.Context) (*docker.NativePartition, error) {
	if !docker.HostNetns() {
		return nil, nil
	}
	var peers []docker.Peer
	for _, n := range d.all() {
		if n.ctr == nil {
			return nil, nil
		}
		ips, err := n.ctr.IPs(ctx)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n.Name(), err)
		}
		for _, ip := range ips {
			peers = append(peers, docker.Peer{Name: n.Name(), IP: ip})
		}
	}
	return &docker.NativePartition{
		Rules: func(m string, cut []string) []string { return docker.CutRules(m, cut, peers, netip.Addr{}, nil) },
		Exec: func(ctx context.Context, m, script string) error {
			for _, n := range d.all() {
				if n.Name() == m {
					return n.ctr.NetExec(ctx, script)
				}
			}
			return fmt.Errorf("no member %q in the target", m)
		},
	}, nil
}

// PartitionNodes cuts each pair of members off from each other with
// iptables in their containers' network namespaces (CanPartitionNodes).
func (d *Deployment) PartitionNodes(ctx context.Context, pairs [][2]string) error {
	if d.native == nil {
		return &sut.UnsupportedError{Capability: sut.CanPartitionNodes, Hint: d.Hint(sut.CanPartitionNodes)}
	}
	for _, p := range pairs {
		for _, m := range p {
			if _, err := d.Node(m); err != nil {
				return fmt.Errorf("native partition: %w", err)
			}
		}
	}
	return d.native.Partition(ctx, pairs)
}

// HealNodes removes every cut PartitionNodes made.
func (d *Deployment) HealNodes(ctx context.Context) error {
	if d.native == nil {
		return nil
	}
	return d.native.Heal(ctx)
}

// PartitionedNodes are the members cut off from some other member now.
func (d *Deployment) PartitionedNodes() []string {
	if d.native == nil {
		return nil
	}
	return d.native.Members()
}

// Primary is the node the harness takes as master: the file's, until a
// failover moves it (SetPrimary).
func (d *Deployment) Primary() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.primary
}

// SetPrimary records node as the master the harness takes.
func (d *Deployment) SetPrimary(node string) error {
	if _, err := d.Node(node); err != nil {
		return fmt.Errorf("set primary: %w", err)
	}
	d.mu.Lock()
	d.primary = node
	d.mu.Unlock()
	return nil
}

// Promote makes node a master (REPLICAOF NO ONE), as an operator would.
func (d *Deployment) Promote(ctx context.Context, node string) error {
	n, err := d.lockNode(node)
	if err != nil {
		return err
	}
	cl := redisbackend.NewRedisClient(n.Addr(), sut.ClientOptions{Timeout: time.Second, PoolSize: 1})
	defer cl.Close()
	if err := cl.Do(ctx, "replicaof", "no", "one").Err(); err != nil {
		return fmt.Errorf("promote %s: %w", node, err)
	}
	return nil
}

// Follow makes node a replica of primary at primary's own address.
func (d *Deployment) Follow(ctx context.Context, node, primary string) error {
	n, err := d.lockNode(node)
	if err != nil {
		return err
	}
	p, err := d.lockNode(primary)
	if err != nil {
		return err
	}
	host, port, _ := net.SplitHostPort(p.Addr())
	cl := redisbackend.NewRedisClient(n.Addr(), sut.ClientOptions{Timeout: time.Second, PoolSize: 1})
	defer cl.Close()
	if err := cl.Do(ctx, "replicaof", host, port).Err(); err != nil {
		return fmt.Errorf("%s follow %s: %w", node, primary, err)
	}
	return nil
}

// ReplicationLink: the target's replicas reach their master directly, not
// through the harness, so there is no link to cut.
func (d *Deployment) ReplicationLink(replica, primary string) (sut.Link, error) {
	return nil, &sut.UnsupportedError{Capability: sut.CanPromote, Target: replica,
		Hint: "a target's replicas reach their master directly: its replication links cannot be cut (use --backend docker or local)"}
}

// Role is node's replication role as it reports it.
func (d *Deployment) Role(ctx context.Context, node string) (sut.RoleInfo, error) {
	n, err := d.lockNode(node)
	if err != nil {
		return sut.RoleInfo{}, err
	}
	return redisbackend.RoleAt(ctx, node, n.Addr())
}

func (d *Deployment) lockNode(name string) (*Node, error) {
	for _, n := range d.nodes {
		if n.Name() == name {
			return n, nil
		}
	}
	return nil, fmt.Errorf("no lock node %q in the target", name)
}

// Elected is the master the majority of the sentinels that answered name.
func (d *Deployment) Elected(ctx context.Context) (string, error) {
	if len(d.sents) == 0 {
		return "", errors.New("elected master: the target has no sentinels")
	}
	var ss []redisbackend.SentinelAddr
	for _, s := range d.sents {
		ss = append(ss, redisbackend.SentinelAddr{Name: s.Name(), Addr: s.Addr()})
	}
	announced := d.Announced()
	return redisbackend.ElectedBy(ctx, ss, d.file.MasterName, func(a string) (string, bool) {
		name, ok := announced[a]
		return name, ok
	})
}

// startingWait is how long Open waits for a node that refuses
// connections: `docker-compose up -d` returns once the containers run, not
// once redis-server listens in them, and on a loaded machine the harness
// started right after it found a node refusing (TestTwoProjectsSideBySide
// at load 16). A refused connection means the host is there and nothing
// listens yet; any other error (no route, a timeout) fails at once.
const startingWait = 10 * time.Second

// pingStarting is Ping, tried again every 50ms while addr refuses
// connections, for wait at most.
func pingStarting(ctx context.Context, addr string, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		err := redisbackend.Ping(ctx, addr, 2*time.Second)
		if err == nil || !errors.Is(err, syscall.ECONNREFUSED) || ctx.Err() != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("connections refused for %v: %w", wait, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func waitPing(ctx context.Context, addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		err := redisbackend.Ping(ctx, addr, 300*time.Millisecond)
		if err == nil || time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}
