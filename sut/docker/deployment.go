package docker

import (
	"context"
	"crypto/rand"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	dnet "github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/rs/zerolog"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
	tcnetwork "github.com/testcontainers/testcontainers-go/network"

	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/sut/local"
	redisbackend "github.com/lockharness/lockharness/sut/redis"
)

// Config describes a topology of containers. The zero value, after
// WithDefaults, is one independent node of DefaultImage and one client.
type Config struct {
	// Image is the image every node runs (DefaultImage when empty).
	Image string
	// Topology is sut.Independent (default) or sut.Replicated.
	Topology string
	// Nodes is the number of independent masters (replicated: 1+Replicas).
	Nodes int
	// Replicas and Sentinels of a replicated topology (defaults 2 and 3);
	// Sentinels 0 with Failover sut.FailoverManual.
	Replicas, Sentinels int
	// Failover is sut.FailoverSentinel (default) or FailoverManual.
	Failover string
	// SentinelDownAfter and SentinelFailoverTimeout (defaults 1s and 3s).
	SentinelDownAfter, SentinelFailoverTimeout time.Duration
	// Clients is the number of client slots, each with its own proxy to
	// every node.
	Clients int
	// Persistence of the lock nodes (sut.PersistNone, …): what a node
	// killed and started again remembers.
	Persistence string
	// Faketime runs every lock node under libfaketime (the image must have
	// it and the malloc shim).
	Faketime bool
	// NetAdmin requires the iptables partitions (Isolate, the native
	// partition): the image must have iptables. The lock nodes and the
	// sentinels get CAP_NET_ADMIN whenever it has.
	NetAdmin bool
	// Dir is the parent of the per-node directories bind-mounted into the
	// containers; empty: a new temporary directory, removed by Down.
	Dir string
	// ExtraConfig is appended to every lock node's config.
	ExtraConfig string
}

// ConfigFrom is the Docker topology of a local one (sut.Config, what
// the harness's run and its scenarios ask for), with its nodes from image
// (DefaultImage when empty). The containers get CAP_NET_ADMIN when the
// image has iptables, so the iptables partition is there when it can be.
func ConfigFrom(c sut.Config, image string) Config {
	return Config{
		Image: image, Topology: c.Topology, Nodes: c.Nodes, Replicas: c.Replicas, Sentinels: c.Sentinels,
		Failover: c.Failover, SentinelDownAfter: c.SentinelDownAfter, SentinelFailoverTimeout: c.SentinelFailoverTimeout,
		Clients: c.Clients, Persistence: c.Persistence, Faketime: c.Faketime, ExtraConfig: c.ExtraConfig, Dir: c.Dir,
	}
}

// Backend is the Docker backend for the harness's runs and scenarios: the
// topology a run asks for, as containers of image (DefaultImage when
// empty).
func Backend(image string) sut.Backend {
	return func(ctx context.Context, c sut.Config) (sut.Deployment, error) {
		d, err := Up(ctx, ConfigFrom(c, image))
		if err != nil {
			return nil, err
		}
		return d, nil
	}
}

// WithDefaults fills in unset fields.
func (c Config) WithDefaults() Config {
	if c.Image == "" {
		c.Image = DefaultImage
	}
	lc := sut.Config{Topology: c.Topology, Nodes: c.Nodes, Replicas: c.Replicas, Sentinels: c.Sentinels,
		Failover: c.Failover, Clients: c.Clients, Persistence: c.Persistence,
		SentinelDownAfter: c.SentinelDownAfter, SentinelFailoverTimeout: c.SentinelFailoverTimeout}.WithDefaults()
	c.Topology, c.Nodes, c.Replicas, c.Sentinels, c.Failover = lc.Topology, lc.Nodes, lc.Replicas, lc.Sentinels, lc.Failover
	c.Clients, c.Persistence = lc.Clients, lc.Persistence
	c.SentinelDownAfter, c.SentinelFailoverTimeout = lc.SentinelDownAfter, lc.SentinelFailoverTimeout
	return c
}

// Validate rejects what cannot be started, with the same rules as local
// processes.
func (c Config) Validate() error {
	if c.Topology == sut.RedisCluster {
		return fmt.Errorf("the Docker backend does not start a Redis Cluster (--topology %s runs on local redis-server processes): drop --backend docker, or use --topology %s or %s", sut.RedisCluster, sut.Independent, sut.Replicated)
	}
	return sut.Config{Topology: c.Topology, Nodes: c.Nodes, Replicas: c.Replicas, Sentinels: c.Sentinels,
		Failover: c.Failover, Clients: c.Clients, Persistence: c.Persistence}.Validate()
}

// Roles of the containers.
const (
	RoleNode     = "node"
	RoleSentinel = "sentinel"
	RoleStorage  = "storage"
)

// Ports inside the containers.
const (
	RedisPort    = 6379
	SentinelPort = 26379
)

// mountPoint is where each container sees its node directory.
const mountPoint = "/lh"

// Node is one container: a Redis node, a sentinel or the storage node.
type Node struct {
	name string // n1…, s1…, storage
	role string // RoleNode, RoleSentinel, RoleStorage
	// IP is the node's static address on the private network.
	IP netip.Addr
	// Port is the port it listens on inside its container.
	Port int
	// Dir is the host directory mounted at /lh in the container (config,
	// data, log, libfaketime control file).
	Dir string
	// ID is the container's id.
	ID string

	d      *Deployment
	ctr    testcontainers.Container
	ct     *Container // Docker's own faults on it: pause, kill, start
	config string     // written to Dir before every start
	env    map[string]string

	// supervised: the container's first process is a shell loop that
	// runs redis-server, so Kill and Start act on the server process, not
	// the container.
	supervised bool

	mu           sync.Mutex
	stopWatch    func() // ends the exit watch (WatchExits)
	serverDead   bool   // supervised: its server killed and not started again
	disconnected bool
	isolated     bool
	clock        sut.Clock
	startedAt    time.Time // when the server process (and libfaketime) started
}

// Addr is the node's direct address (its container IP), which the host can
// dial without any proxy.
func (n *Node) Addr() string { return net.JoinHostPort(n.IP.String(), strconv.Itoa(n.Port)) }

func (n *Node) configPath() string { return filepath.Join(n.Dir, n.name+".conf") }

// LogPath is the server's log on the host.
func (n *Node) LogPath() string { return filepath.Join(n.Dir, n.name+".log") }

// Deployment is a running topology of containers.
type Deployment struct {
	cfg     Config
	image   Image
	runID   string
	tempDir bool

	// Nodes are the lock's Redis servers, n1…nN (replicated: n1 is the
	// first master).
	Nodes []*Node
	// Sentinels (s1…) watch a replicated topology's master.
	Sentinels []*Node
	// Storage holds the protected resource; no fault reaches it.
	Storage *Node

	dc      *testcontainers.DockerClient
	network *testcontainers.DockerNetwork
	subnet  netip.Prefix
	gateway netip.Addr
	proxies *toxiproxy.ApiServer
	links   map[string]*local.Link

	mu      sync.Mutex
	primary string                       // replicated: the node the harness takes as master
	dialers []*redisbackend.MasterDialer // manual failover: clients following primary
	native  *NativePartition             // members cut off from each other
	// hostNetns: iptables runs in the containers' namespaces from the
	// host (nsenter), not by docker exec.
	hostNetns bool

	downOnce sync.Once
	downErr  error
}

// RunID is the id every container and the network are labelled with.
func (d *Deployment) RunID() string { return d.runID }

// Image is what the nodes' image holds.
func (d *Deployment) Image() Image { return d.image }

// Gateway is the private network's gateway: the host as the containers see
// it, where the replication and sentinel proxies listen.
func (d *Deployment) Gateway() netip.Addr { return d.gateway }

// NetworkName is the Docker network's name.
func (d *Deployment) NetworkName() string { return d.network.Name }

// Up sweeps what killed harnesses left, checks the image, then starts the
// topology: the network, the proxies, every container, and waits until
// every node answers PING (replicated: until the replicas are in sync). On
// error, whatever was started is removed.
func Up(ctx context.Context, cfg Config) (_ *Deployment, err error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	configure()
	if _, err := Sweep(ctx); err != nil {
		return nil, err
	}
	im, err := checkImage(ctx, cfg)
	if err != nil {
		return nil, err
	}
	d := &Deployment{cfg: cfg, image: im, runID: newRunID(), links: map[string]*local.Link{}, hostNetns: HostNetns()}
	d.cfg.NetAdmin = im.Iptables
	defer func() {
		if err != nil {
			err = errors.Join(err, d.Down())
			d = nil
		}
	}()
	if d.dc, err = newClient(ctx); err != nil {
		return nil, err
	}
	if cfg.Dir == "" {
		dir, err := local.NewNodeDir()
		if err != nil {
			return nil, err
		}
		d.cfg.Dir, d.tempDir = dir, true
	}
	if err := d.makeNetwork(ctx); err != nil {
		return nil, err
	}
	d.plan()
	d.native = d.newNativePartition()
	zerolog.SetGlobalLevel(zerolog.Disabled) // the bandwidth toxic logs through the global logger
	d.proxies = toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	if err := d.addLinks(); err != nil {
		return nil, err
	}
	d.renderConfigs()
	if err := d.start(ctx); err != nil {
		return nil, err
	}
	return d, nil
}

// checkImage inspects cfg's image and checks that it holds what cfg asks
// for: libfaketime, iptables, redis-sentinel.
func checkImage(ctx context.Context, cfg Config) (Image, error) {
	im, err := InspectImage(ctx, cfg.Image)
	if err != nil {
		return Image{}, err
	}
	if cfg.Faketime {
		if err := im.Require(NeedFaketime); err != nil {
			return Image{}, err
		}
	}
	if cfg.NetAdmin {
		if err := im.Require(NeedIptables); err != nil {
			return Image{}, err
		}
	}
	if cfg.Sentinels > 0 {
		if err := im.Require(NeedSentinel); err != nil {
			return Image{}, err
		}
	}
	return im, nil
}

// start starts the containers: the nodes and the storage node, then, once
// replicated nodes are in sync, the sentinels.
func (d *Deployment) start(ctx context.Context) error {
	// The sentinels start only once the master and its replicas are up and
	// in sync: a sentinel that finds the master not answering yet (a
	// container still starting on a loaded machine) fails it over before
	// the run begins.
	servers := append(append([]*Node(nil), d.Nodes...), d.Storage)
	if err := startAll(ctx, servers); err != nil {
		return err
	}
	if d.cfg.Topology == sut.Replicated {
		if err := d.waitReplicated(ctx, 30*time.Second, false); err != nil {
			return err
		}
	}
	if len(d.Sentinels) > 0 {
		if err := startAll(ctx, d.Sentinels); err != nil {
			return err
		}
		if err := d.waitReplicated(ctx, 30*time.Second, true); err != nil {
			return err
		}
		return d.armSentinels(ctx)
	}
	return nil
}

// armSentinels gives every sentinel the configured down-after, at once
// (SENTINEL SET) and for a container started again (its config).
func (d *Deployment) armSentinels(ctx context.Context) error {
	for _, s := range d.Sentinels {
		if err := redisbackend.SetDownAfter(ctx, s.Addr(), d.cfg.SentinelDownAfter); err != nil {
			return fmt.Errorf("sentinel %s: %w", s.name, err)
		}
		s.config = d.sentinelConfig(s, d.cfg.SentinelDownAfter)
	}
	return nil
}

// startAll starts the containers of nodes in parallel and waits until
// each answers PING.
func startAll(ctx context.Context, nodes []*Node) error {
	errs := make(chan error, len(nodes))
	for _, n := range nodes {
		go func(n *Node) {
			if err := n.create(ctx); err != nil {
				errs <- err
				return
			}
			errs <- n.waitReady(ctx, 30*time.Second)
		}(n)
	}
	var err error
	for range nodes {
		err = errors.Join(err, <-errs)
	}
	return err
}

func newRunID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// ownLabels are the labels of every resource this process makes.
func ownLabels(run, node string) map[string]string {
	return map[string]string{
		LabelRun:  run,
		LabelPID:  strconv.Itoa(os.Getpid()),
		LabelHost: hostname(),
		LabelNode: node,
	}
}

// makeNetwork creates the private bridge network with a subnet of its own
// (static addresses need one the user configured), trying subnets until
// one does not overlap a network that exists.
func (d *Deployment) makeNetwork(ctx context.Context) error {
	pid := os.Getpid()
	var last error
	for i := 0; i < 32; i++ {
		third := (pid + i*7) % 250
		subnet := netip.MustParsePrefix(fmt.Sprintf("10.213.%d.0/24", third))
		gw := netip.MustParseAddr(fmt.Sprintf("10.213.%d.1", third))
		// Not cancelled half way, as a container's create (Node.create).
		nctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), createTimeout)
		nw, err := tcnetwork.New(nctx,
			tcnetwork.WithDriver("bridge"),
			tcnetwork.WithLabels(ownLabels(d.runID, "network")),
			tcnetwork.WithIPAM(&dnet.IPAM{Driver: "default", Config: []dnet.IPAMConfig{{Subnet: subnet, Gateway: gw}}}),
		)
		cancel()
		if err == nil {
			d.network, d.subnet, d.gateway = nw, subnet, gw
			return ctx.Err()
		}
		last = err
		if !strings.Contains(err.Error(), "overlap") {
			break
		}
	}
	return fmt.Errorf("create network: %w", last)
}

// plan names every node and gives it its address: storage .9, nodes .10…,
// sentinels .100….
func (d *Deployment) plan() {
	base := d.subnet.Addr().As4()
	ip := func(last int) netip.Addr { b := base; b[3] = byte(last); return netip.AddrFrom4(b) }
	mk := func(name, role string, last, port int) *Node {
		return &Node{name: name, role: role, IP: ip(last), Port: port, Dir: filepath.Join(d.cfg.Dir, name), d: d, clock: sut.RealClock}
	}
	for i := 0; i < d.cfg.Nodes; i++ {
		d.Nodes = append(d.Nodes, mk(fmt.Sprintf("n%d", i+1), RoleNode, 10+i, RedisPort))
	}
	d.Storage = mk("storage", RoleStorage, 9, RedisPort)
	for i := 0; i < d.cfg.Sentinels; i++ {
		d.Sentinels = append(d.Sentinels, mk(fmt.Sprintf("s%d", i+1), RoleSentinel, 100+i, SentinelPort))
	}
}

func (d *Deployment) all() []*Node {
	out := append(append([]*Node(nil), d.Nodes...), d.Storage)
	return append(out, d.Sentinels...)
}

// Container returns the node, sentinel or storage node with the given name.
func (d *Deployment) Container(name string) (*Node, error) {
	for _, n := range d.all() {
		if n.name == name {
			return n, nil
		}
	}
	return nil, fmt.Errorf("no node %q in this deployment", name)
}

// SentinelsFrom is the "from" of the links the sentinels and the replicas
// use to reach a node ("sentinels->n1"), as with local processes.
const SentinelsFrom = sut.SentinelsFrom

// addLinks creates every proxy before any container starts:
//   - "cK->nI" (and "cK->sJ"): client slot K to node I, listening on
//     127.0.0.1, upstream the container's IP;
//   - replicated with Sentinel: "sentinels->nI", listening on the network's
//     gateway (which containers reach), the address node I announces;
//   - manual failover: "nI->nJ" for every ordered pair, also on the gateway.
func (d *Deployment) addLinks() error {
	for cl := 0; cl < d.cfg.Clients; cl++ {
		for _, n := range append(append([]*Node(nil), d.Nodes...), d.Sentinels...) {
			if err := d.addLink(fmt.Sprintf("c%d", cl), n, "127.0.0.1"); err != nil {
				return err
			}
		}
	}
	if d.cfg.Topology != sut.Replicated {
		return nil
	}
	if len(d.Sentinels) > 0 {
		for _, n := range d.Nodes {
			if err := d.addLink(SentinelsFrom, n, d.gateway.String()); err != nil {
				return err
			}
		}
		return nil
	}
	for _, a := range d.Nodes {
		for _, b := range d.Nodes {
			if a != b {
				if err := d.addLink(a.name, b, d.gateway.String()); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func (d *Deployment) addLink(from string, to *Node, host string) error {
	l, err := local.NewLink(d.proxies, from, to.name, net.JoinHostPort(host, "0"), to.Addr())
	if err != nil {
		return err
	}
	d.links[l.Name()] = l
	return nil
}

// Link returns the link named from->to.
func (d *Deployment) Link(from, to string) (*local.Link, error) {
	l := d.links[sut.LinkName(from, to)]
	if l == nil {
		return nil, fmt.Errorf("no link %s in this deployment", sut.LinkName(from, to))
	}
	return l, nil
}

// Links lists every link.
func (d *Deployment) Links() []*local.Link {
	out := make([]*local.Link, 0, len(d.links))
	for _, l := range d.links {
		out = append(out, l)
	}
	return out
}

// ClientAddr is the address client slot cl dials to reach node: its own
// proxy.
func (d *Deployment) ClientAddr(cl int, node string) (string, error) {
	l, err := d.Link(fmt.Sprintf("c%d", cl), node)
	if err != nil {
		return "", err
	}
	return l.Addr(), nil
}

// StorageAddr is the storage node's direct address.
func (d *Deployment) StorageAddr() string { return d.Storage.Addr() }

// Announced maps the addresses the topology hands out (a node's announced
// address, as Sentinel names a master; a sentinel's own address, as
// sentinels name each other) to node names, so a client can dial its own
// link instead.
func (d *Deployment) Announced() map[string]string {
	out := map[string]string{}
	for _, n := range d.Nodes {
		if l := d.links[sut.LinkName(SentinelsFrom, n.name)]; l != nil {
			out[l.Addr()] = n.name
		}
	}
	for _, s := range d.Sentinels {
		out[s.Addr()] = s.name
	}
	return out
}

// renderConfigs writes each node's config: in a replicated topology a
// replica follows n1 through its replication link and every node announces
// the address of its "sentinels->" link, by IP (a name would block Redis in
// DNS resolution across a partition).
func (d *Deployment) renderConfigs() {
	if d.cfg.Topology == sut.Replicated {
		d.primary = d.Nodes[0].name
	}
	for _, n := range d.Nodes {
		n.config = d.nodeConfig(n, d.Nodes[0].name)
		n.env = d.nodeEnv()
	}
	d.Storage.config = baseConfig(d.Storage)
	// The sentinels come up slow to judge (redisbackend.SetupDownAfter, the
	// same reason as the local backend's): start arms the configured
	// down-after once they know the topology.
	for _, s := range d.Sentinels {
		s.config = d.sentinelConfig(s, redisbackend.SetupDownAfter)
	}
}

// baseConfig is every server's start: all interfaces, its own directory,
// its log where the host can read it, no snapshots.
func baseConfig(n *Node) string {
	return strings.Join([]string{
		fmt.Sprintf("port %d", n.Port),
		"bind 0.0.0.0",
		"protected-mode no",
		"daemonize no",
		"dir " + mountPoint,
		fmt.Sprintf("logfile %s/%s.log", mountPoint, n.name),
		fmt.Sprintf("pidfile %s/%s.pid", mountPoint, n.name),
		`save ""`,
		"appendonly no",
		"",
	}, "\n")
}

func (d *Deployment) nodeConfig(n *Node, master string) string {
	var b strings.Builder
	b.WriteString(baseConfig(n))
	pc, _ := redisbackend.PersistenceConfig(d.cfg.Persistence) // validated in Up
	b.WriteString(pc)
	if x := d.cfg.ExtraConfig; x != "" {
		b.WriteString(x)
		if !strings.HasSuffix(x, "\n") {
			b.WriteString("\n")
		}
	}
	if d.cfg.Topology == sut.Replicated {
		b.WriteString("repl-diskless-sync-delay 0\n")
		if master != n.name {
			if l := d.replicationLink(n.name, master); l != nil {
				fmt.Fprintf(&b, "replicaof %s\n", strings.Replace(l.Addr(), ":", " ", 1))
			}
		}
		if l := d.links[sut.LinkName(SentinelsFrom, n.name)]; l != nil {
			host, port, _ := strings.Cut(l.Addr(), ":")
			fmt.Fprintf(&b, "replica-announce-ip %s\nreplica-announce-port %s\n", host, port)
		}
	}
	return b.String()
}

func (d *Deployment) replicationLink(replica, master string) *local.Link {
	if len(d.Sentinels) > 0 {
		return d.links[sut.LinkName(SentinelsFrom, master)]
	}
	return d.links[sut.LinkName(replica, master)]
}

// nodeEnv runs the lock nodes under libfaketime, the malloc shim first,
// reading the control file in the bind-mounted directory (a directory, not
// the file: the file is replaced by rename, which a file mount would not
// see).
func (d *Deployment) nodeEnv() map[string]string {
	if !d.cfg.Faketime {
		return nil
	}
	return map[string]string{
		"LD_PRELOAD":                   d.image.Shim + ":" + d.image.Libfaketime,
		"FAKETIME_TIMESTAMP_FILE":      mountPoint + "/clock/faketime",
		"FAKETIME_NO_CACHE":            "1",
		"FAKETIME_DONT_FAKE_MONOTONIC": "1",
	}
}

func (d *Deployment) sentinelConfig(s *Node, downAfter time.Duration) string {
	l := d.links[sut.LinkName(SentinelsFrom, d.Nodes[0].name)]
	host, port, _ := strings.Cut(l.Addr(), ":")
	quorum := len(d.Sentinels)/2 + 1
	lines := []string{
		fmt.Sprintf("port %d", s.Port),
		"bind 0.0.0.0",
		"protected-mode no",
		"daemonize no",
		"dir " + mountPoint,
		fmt.Sprintf("logfile %s/%s.log", mountPoint, s.name),
		fmt.Sprintf("sentinel announce-ip %s", s.IP),
		fmt.Sprintf("sentinel monitor %s %s %s %d", redisbackend.MasterName, host, port, quorum),
		fmt.Sprintf("sentinel down-after-milliseconds %s %d", redisbackend.MasterName, downAfter.Milliseconds()),
		fmt.Sprintf("sentinel failover-timeout %s %d", redisbackend.MasterName, d.cfg.SentinelFailoverTimeout.Milliseconds()),
		fmt.Sprintf("sentinel parallel-syncs %s 1", redisbackend.MasterName),
		fmt.Sprintf("sentinel myid %s", sentinelID(s.name)),
	}
	for _, n := range d.Nodes[1:] {
		if l := d.links[sut.LinkName(SentinelsFrom, n.name)]; l != nil {
			lines = append(lines, fmt.Sprintf("sentinel known-replica %s %s", redisbackend.MasterName, strings.Replace(l.Addr(), ":", " ", 1)))
		}
	}
	for _, o := range d.Sentinels {
		if o != s {
			lines = append(lines, fmt.Sprintf("sentinel known-sentinel %s %s %d %s", redisbackend.MasterName, o.IP, o.Port, sentinelID(o.name)))
		}
	}
	return strings.Join(lines, "\n") + "\n"
}

// sentinelID is a fixed run id per sentinel, so the others can be told
// about it before it starts.
func sentinelID(name string) string {
	return fmt.Sprintf("%x", sha1.Sum([]byte("lockharness-"+name)))
}

// writeFiles writes the node's config (and its clock file) into its
// directory, readable and writable by any user: an image may run Redis as
// a user of its own (the official one runs it as uid 999).
func (n *Node) writeFiles() error {
	if err := os.MkdirAll(filepath.Join(n.Dir, "clock"), 0o777); err != nil {
		return fmt.Errorf("node %s: %w", n.name, err)
	}
	for _, p := range []string{n.Dir, filepath.Join(n.Dir, "clock")} {
		if err := os.Chmod(p, 0o777); err != nil {
			return fmt.Errorf("node %s: %w", n.name, err)
		}
	}
	n.mu.Lock()
	config := n.config
	n.mu.Unlock()
	if err := os.WriteFile(n.configPath(), []byte(config), 0o666); err != nil {
		return fmt.Errorf("node %s: write config: %w", n.name, err)
	}
	if err := os.Chmod(n.configPath(), 0o666); err != nil {
		return fmt.Errorf("node %s: %w", n.name, err)
	}
	if n.env != nil {
		n.mu.Lock()
		n.startedAt = time.Now()
		err := n.writeClockLocked()
		n.mu.Unlock()
		return err
	}
	return nil
}

// create writes the node's files and starts its container on the private
// network at its static address.
func (n *Node) create(ctx context.Context) error {
	if err := n.writeFiles(); err != nil {
		return err
	}
	d := n.d
	cmd := []string{"redis-server", mountPoint + "/" + n.name + ".conf"}
	switch {
	case n.role == RoleSentinel:
		cmd[0] = "redis-sentinel"
	case n.role == RoleNode && d.image.Shell:
		// A crash is a SIGKILL of redis-server inside its container, and
		// a restart this loop starting it again once the down file is
		// gone: milliseconds, where docker kill and start take 0.5–2 s
		// on a loaded machine (longer than a lease), with the same
		// container, address and data directory.
		n.supervised = true
		// Each exit's status goes to the exits file, "planned" when the
		// harness's down file was in place (Kill waits for that line
		// before it returns): WatchExits reports the others.
		cmd = []string{"/bin/sh", "-c", fmt.Sprintf("while :; do while [ -e %[1]s/down ]; do sleep 0.01; done; %[2]s %[1]s/%[3]s.conf; "+
			"s=$?; if [ -e %[1]s/down ]; then echo planned $s; else echo $s; fi >> %[1]s/%[4]s; done", mountPoint, "redis-server", n.name, exitsFile)}
	}
	nwName := d.network.Name
	req := testcontainers.ContainerRequest{
		Image:    d.cfg.Image,
		Cmd:      cmd,
		Env:      n.env,
		Labels:   ownLabels(d.runID, n.name),
		Networks: []string{nwName},
		HostConfigModifier: func(hc *container.HostConfig) {
			hc.Mounts = append(hc.Mounts, mount.Mount{Type: mount.TypeBind, Source: n.Dir, Target: mountPoint})
			if d.cfg.NetAdmin && n.role != RoleStorage {
				hc.CapAdd = append(hc.CapAdd, "NET_ADMIN")
			}
		},
		EndpointSettingsModifier: func(m map[string]*dnet.EndpointSettings) {
			if m[nwName] == nil {
				m[nwName] = &dnet.EndpointSettings{}
			}
			m[nwName].IPAMConfig = &dnet.EndpointIPAMConfig{IPv4Address: n.IP}
		},
	}
	// A create is not cancelled half way (Ctrl-C): the engine would finish
	// it anyway, and the answer that says which container it made would be
	// lost. It runs to its end, then the cancellation counts, and Down
	// removes what it made.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), createTimeout)
	defer cancel()
	c, err := testcontainers.GenericContainer(cctx, testcontainers.GenericContainerRequest{
		ContainerRequest: req, Started: true, Logger: tclog.NewNoopLogger(),
	})
	if c != nil {
		// Run may return a container together with an error: Down removes it.
		n.ctr, n.ID = c, c.GetContainerID()
		n.ct = newContainer(n.name, n.ID, d.dc)
	}
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return fmt.Errorf("start container %s (%s): %w", n.name, d.cfg.Image, err)
	}
	return nil
}

// createTimeout bounds one container's or network's creation, which a
// cancellation does not cut short (see Node.create).
const createTimeout = 2 * time.Minute

// waitReady waits until the node answers PING at its container address.
func (n *Node) waitReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		err := redisbackend.Ping(ctx, n.Addr(), 300*time.Millisecond)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("node %s at %s not ready after %v: %w%s", n.name, n.Addr(), timeout, err, n.logTail())
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// logTail is what an error quotes from the node's log: the line that says
// why it stopped and its last lines (local.LogTail), when it has one.
func (n *Node) logTail() string {
	if st, err := os.Stat(n.LogPath()); err != nil || st.Size() == 0 {
		return ""
	}
	return "; log: " + local.LogTail(n.LogPath())
}

// Down removes every container, the network and the proxies, then the
// temporary directory. It is safe to call more than once and from any exit
// path.
func (d *Deployment) Down() error {
	d.downOnce.Do(func() {
		// The caller's context may be cancelled (Ctrl-C): cleanup gets its own.
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		var mu sync.Mutex
		var errs []error
		if d.proxies != nil {
			d.proxies.Collection.Clear()
		}
		for _, n := range d.all() {
			if n != nil {
				n.WatchExits(nil) // what dies now is the teardown's
			}
		}
		var wg sync.WaitGroup
		for _, n := range d.all() {
			if n == nil || n.ctr == nil {
				continue
			}
			wg.Add(1)
			go func(n *Node) {
				defer wg.Done()
				// A paused container cannot be stopped; removing it by force works.
				if _, err := d.dc.ContainerRemove(ctx, n.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err != nil && !isNotFound(err) {
					mu.Lock()
					errs = append(errs, fmt.Errorf("remove container %s: %w", n.name, err))
					mu.Unlock()
				}
			}(n)
		}
		wg.Wait()
		if d.dc != nil {
			// What the harness never heard of too (removeRun), then the
			// network.
			if err := removeRun(ctx, d.dc.Client, d.runID); err != nil {
				errs = append(errs, err)
			}
			_ = d.dc.Close()
		}
		if d.tempDir {
			// Files written by a container's root are removable by the
			// harness only if it is root too; say so instead of failing.
			if err := os.RemoveAll(d.cfg.Dir); err != nil {
				errs = append(errs, fmt.Errorf("remove %s: %w", d.cfg.Dir, err))
			}
		}
		d.downErr = errors.Join(errs...)
	})
	return d.downErr
}
