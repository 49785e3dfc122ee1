// Package redis is the local-process Redis backend behind the seam: it
// brings Redis topologies up and down (independent masters, one master
// with replicas failed over by hand or by Sentinel), real redis-server and
// redis-sentinel processes on loopback ports, each in its own directory,
// with every network link a client (or a replica, or a sentinel) uses
// going through its own toxiproxy proxy, embedded in this process, so
// faults can be injected per link. Down stops everything; children also
// die with the harness (Pdeathsig). Import it as redisbackend beside
// go-redis's redis.
//
// *Cluster is a sut.Deployment whose client nodes carry go-redis clients.
// What is Redis's stays here: configs, Sentinel, persistence, what makes a
// local.Server a Redis server (NewServer: PING readiness, TIME clock), the
// Redis storage node every system's deployment keeps the protected
// resource on (Storage), and the go-redis client helpers the Docker and
// target backends share (NewRedisClient, dialers, the failover client).
// The process, proxy and libfaketime toolkit is sut/local's; the Redis
// Cluster backend, sut/rediscluster.
package redis

import (
	"context"
	"crypto/sha1"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/redis/go-redis/v9"

	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/sut/local"
)

// MasterName is the name Sentinel monitors the master under.
const MasterName = "mymaster"

// PersistenceConfig is the redis.conf fragment of a persistence mode.
func PersistenceConfig(mode string) (string, error) {
	switch mode {
	case "", sut.PersistNone:
		return "appendonly no\n", nil
	case sut.PersistAOFEverysec:
		return "appendonly yes\nappendfsync everysec\n", nil
	case sut.PersistAOFAlways:
		return "appendonly yes\nappendfsync always\n", nil
	}
	return "", sut.CheckPersistence(mode)
}

// Cluster is a running topology.
type Cluster struct {
	cfg     sut.Config
	tempDir bool

	// Nodes are the lock's Redis servers, n1…nN. In a replicated topology
	// n1 is the first master and the others its replicas.
	Nodes []*local.Server
	// Sentinels watch a replicated topology's master (s1…sS), with
	// sut.FailoverSentinel.
	Sentinels []*local.Server
	// Storage holds the protected resource; no fault reaches it.
	Storage *local.Server

	proxies *toxiproxy.ApiServer
	links   map[string]*local.Link // by name, "c0->n1"

	mu       sync.Mutex
	master   string            // replicated: the node the harness takes as master
	announce map[string]string // announced address -> node name (sentinel mode)
	dialers  []*MasterDialer   // manual mode: clients following the master

	downOnce sync.Once
	downErr  error
}

// Up starts the topology: the proxies, every node, then waits until every
// node answers PING (and, when replicated, until replicas are in sync and
// sentinels know each other). On error, whatever was started is stopped.
//
// With free ports (no BasePort), a port taken by another process between
// choosing it and the server binding it makes Up start over on new ports,
// up to three times.
func Up(ctx context.Context, cfg sut.Config) (*Cluster, error) {
	return local.RetryBusyPorts(ctx, cfg.BasePort != 0, func() (*Cluster, error) { return up(ctx, cfg) })
}

func up(ctx context.Context, cfg sut.Config) (_ *Cluster, err error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Topology == sut.RedisCluster {
		return nil, fmt.Errorf("topology %s is started by rediscluster.Up, not Up", sut.RedisCluster)
	}
	bin, sbin, err := binaries(cfg)
	if err != nil {
		return nil, err
	}
	c := &Cluster{cfg: cfg, links: map[string]*local.Link{}, announce: map[string]string{}}
	defer func() {
		if err != nil {
			_ = c.Down()
		}
	}()
	ftEnv, err := c.openDir()
	if err != nil {
		return nil, err
	}
	ports, held, err := c.ports()
	if err != nil {
		return nil, err
	}
	release := func() {
		for _, l := range held {
			_ = l.Close()
		}
		held = nil
	}
	defer release()
	c.newServers(bin, sbin, ports, ftEnv)
	// Every proxy exists before any server starts: a replica whose first
	// connection to its master is refused retries only after ≈1 s.
	c.proxies = local.NewProxyServer()
	if err := c.addLinks(); err != nil {
		return nil, err
	}
	// The chosen ports stayed bound while the proxies took theirs, so no
	// proxy got a node's port.
	release()
	c.configure()
	all := append(append([]*local.Server(nil), c.Nodes...), c.Storage)
	if err := StartAll(ctx, append(all, c.Sentinels...), defaultReadyTimeout); err != nil {
		return nil, err
	}
	if cfg.Topology == sut.Replicated {
		if err := c.waitReplicated(ctx, 30*time.Second); err != nil {
			return nil, err
		}
		if err := c.armSentinels(ctx); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// binaries are the redis-server and redis-sentinel programs cfg names, or
// those on PATH; redis-sentinel only when cfg has sentinels.
func binaries(cfg sut.Config) (server, sentinel string, err error) {
	server = cfg.RedisServer
	if server == "" {
		if server, err = LookBinary("redis-server"); err != nil {
			return "", "", err
		}
	}
	sentinel = cfg.RedisSentinel
	if sentinel == "" && cfg.Sentinels > 0 {
		if sentinel, err = LookBinary("redis-sentinel"); err != nil {
			return "", "", err
		}
	}
	return server, sentinel, nil
}

// openDir makes the deployment's directory its own (absolute) or a new
// temporary one, and, with faketime, the environment of a server whose
// clock the harness sets.
func (c *Cluster) openDir() (ftEnv func(clockFile string) []string, err error) {
	// Each server runs in its own directory and reads its config by path:
	// a relative path would resolve against the wrong one.
	if c.cfg.Dir, c.tempDir, err = local.WorkDir(c.cfg.Dir, "lockharness-"); err != nil {
		return nil, err
	}
	if !c.cfg.Faketime {
		return nil, nil
	}
	return FaketimeEnv(c.cfg.Dir)
}

// FaketimeEnv is the environment of a redis-server whose clock the
// harness sets: libfaketime preloaded with the malloc shim (built in dir
// when it has to be), reading the server's clock file.
func FaketimeEnv(dir string) (func(clockFile string) []string, error) {
	lib, err := local.Libfaketime()
	if err != nil {
		return nil, err
	}
	shim, err := local.BuildMallocShim(dir)
	if err != nil {
		return nil, err
	}
	return func(f string) []string { return local.FaketimeEnv(f, shim, lib) }, nil
}

// newServers makes (without starting them) the nodes n1…, the storage
// node and the sentinels s1…, on ports in that order; with ftEnv, each
// node's clock is a file of its own that ftEnv makes it read.
func (c *Cluster) newServers(bin, sbin string, ports []int, ftEnv func(clockFile string) []string) {
	cfg := c.cfg
	for i := 0; i < cfg.Nodes; i++ {
		name := fmt.Sprintf("n%d", i+1)
		s := NewServer(name, ports[i], bin, filepath.Join(cfg.Dir, name))
		if cfg.Faketime {
			s.ClockFile = filepath.Join(s.Dir, "faketime")
			s.Env = ftEnv(s.ClockFile)
		}
		c.Nodes = append(c.Nodes, s)
	}
	sp := ports[cfg.Nodes]
	c.Storage = Storage(bin, cfg.Dir, sp)
	for i := 0; i < cfg.Sentinels; i++ {
		name := fmt.Sprintf("s%d", i+1)
		p := ports[cfg.Nodes+1+i]
		c.Sentinels = append(c.Sentinels, NewServer(name, p, sbin, filepath.Join(cfg.Dir, name)))
	}
}

// configure renders every node's and sentinel's config, once the links
// they announce exist; replicated, n1 starts as the master.
func (c *Cluster) configure() {
	if c.cfg.Topology == sut.Replicated {
		c.master = c.Nodes[0].Name
	}
	for _, s := range c.Nodes {
		s.Config = c.renderConfig(s)
	}
	for _, s := range c.Sentinels {
		s.Config = c.sentinelConfig(s, SetupDownAfter)
	}
}

// SetupDownAfter is the sentinels' down-after while the topology comes up.
// On a loaded machine a starved sentinel (or two: a quorum) woke up to find
// its pings unanswered for over the configured second and failed the
// master over before the run began (a soak under stress-ng: "n3: role
// master"), so the scenario's fault struck another topology than the one it
// describes. Up arms the configured down-after once every sentinel knows
// the topology (armSentinels).
const SetupDownAfter = 30 * time.Second

// armSentinels gives every sentinel the configured down-after, at once
// (SENTINEL SET) and for a restart (its config).
func (c *Cluster) armSentinels(ctx context.Context) error {
	for _, s := range c.Sentinels {
		if err := SetDownAfter(ctx, s.Addr(), c.cfg.SentinelDownAfter); err != nil {
			return fmt.Errorf("sentinel %s: %w", s.Name, err)
		}
		s.Config = c.sentinelConfig(s, c.cfg.SentinelDownAfter)
	}
	return nil
}

// SetDownAfter gives the sentinel at addr the down-after d for MasterName
// (SENTINEL SET), in both backends once the topology is up.
func SetDownAfter(ctx context.Context, addr string, d time.Duration) error {
	ms := strconv.FormatInt(d.Milliseconds(), 10)
	sc := redis.NewSentinelClient(&redis.Options{Addr: addr, DialTimeout: time.Second, ReadTimeout: 2 * time.Second})
	defer sc.Close()
	if err := sc.Set(ctx, MasterName, "down-after-milliseconds", ms).Err(); err != nil {
		return fmt.Errorf("set down-after-milliseconds %s: %w", ms, err)
	}
	return nil
}

// StartAll starts every server, then waits for all of them at once and
// joins what each said. It waits for every one even after one found its
// port taken (local.WaitAllReady ends the wait there).
func StartAll(ctx context.Context, servers []*local.Server, timeout time.Duration) error {
	for _, s := range servers {
		if err := s.Start(ctx, false); err != nil {
			return err
		}
	}
	errs := make(chan error, len(servers))
	for _, s := range servers {
		go func(s *local.Server) { errs <- s.WaitReady(ctx, timeout) }(s)
	}
	var werr error
	for range servers {
		werr = errors.Join(werr, <-errs)
	}
	return werr
}

// addLinks creates every proxy of the topology:
//   - "cK->nI": client slot K to node I (and "cK->sJ" to sentinel J);
//   - manual failover: "nI->nJ", replica I's replication link to master J,
//     for every ordered pair, so any node can follow any other after a
//     failover;
//   - sentinel failover: "sentinels->nI", the address node I announces and
//     Sentinel monitors it at. A node announces one address to everyone,
//     and Sentinel re-points any replica that follows its master at another
//     address, so the sentinels and the replicas share one proxy per node:
//     cutting it cuts node I off from the sentinels and from its replicas.
func (c *Cluster) addLinks() error {
	for cl := 0; cl < c.cfg.Clients; cl++ {
		for _, n := range c.Nodes {
			if _, err := c.AddLink(fmt.Sprintf("c%d", cl), n); err != nil {
				return err
			}
		}
		for _, s := range c.Sentinels {
			if _, err := c.AddLink(fmt.Sprintf("c%d", cl), s); err != nil {
				return err
			}
		}
	}
	if c.cfg.Topology != sut.Replicated {
		return nil
	}
	for _, a := range c.Nodes {
		if len(c.Sentinels) > 0 {
			break
		}
		for _, b := range c.Nodes {
			if a == b {
				continue
			}
			if _, err := c.AddLink(a.Name, b); err != nil {
				return err
			}
		}
	}
	for _, s := range c.Sentinels {
		// go-redis's failover client learns the other sentinels' real
		// addresses from the sentinels; map them back to its own links.
		c.announce[s.Addr()] = s.Name
	}
	if len(c.Sentinels) > 0 {
		for _, n := range c.Nodes {
			l, err := c.AddLink(sut.SentinelsFrom, n)
			if err != nil {
				return err
			}
			c.announce[l.Addr()] = n.Name
		}
	}
	return nil
}

// renderConfig is node s's config in the topology's current state: base,
// persistence, and in a replicated topology its role (a replica follows the
// current master through its own link) and the address it announces.
func (c *Cluster) renderConfig(s *local.Server) string {
	var b strings.Builder
	b.WriteString(RedisConfig(s.Port, s.Dir, s.Name))
	pc, _ := PersistenceConfig(c.cfg.Persistence) // validated in Up
	b.WriteString(pc)
	if c.cfg.Topology == sut.Replicated {
		// A full sync starts at once instead of waiting 5 s for more replicas.
		b.WriteString("repl-diskless-sync-delay 0\n")
		if m := c.master; m != "" && m != s.Name {
			if l := c.replicationLink(s.Name, m); l != nil {
				fmt.Fprintf(&b, "replicaof %s\n", strings.Replace(l.Addr(), ":", " ", 1))
			}
		}
		if l := c.links[sut.LinkName(sut.SentinelsFrom, s.Name)]; l != nil {
			host, port, _ := strings.Cut(l.Addr(), ":")
			fmt.Fprintf(&b, "replica-announce-ip %s\nreplica-announce-port %s\n", host, port)
		}
	}
	b.WriteString(c.cfg.ExtraConfig)
	if c.cfg.ExtraConfig != "" && !strings.HasSuffix(c.cfg.ExtraConfig, "\n") {
		b.WriteString("\n")
	}
	return b.String()
}

// replicationLink is the link replica follows master through: its own
// with manual failover, master's announced one with Sentinel.
func (c *Cluster) replicationLink(replica, master string) *local.Link {
	if len(c.Sentinels) > 0 {
		return c.links[sut.LinkName(sut.SentinelsFrom, master)]
	}
	return c.links[sut.LinkName(replica, master)]
}

// sentinelConfig is a fresh config for sentinel s (Sentinel rewrites its
// file, so it is written anew at every start). It monitors the first master
// through that master's announced address.
func (c *Cluster) sentinelConfig(s *local.Server, downAfter time.Duration) string {
	l := c.links[sut.LinkName(sut.SentinelsFrom, c.Nodes[0].Name)]
	host, port, _ := strings.Cut(l.Addr(), ":")
	quorum := len(c.Sentinels)/2 + 1
	return strings.Join([]string{
		fmt.Sprintf("port %d", s.Port),
		"bind 127.0.0.1",
		"protected-mode no",
		"daemonize no",
		fmt.Sprintf("dir %s", s.Dir),
		fmt.Sprintf("logfile %s", s.LogPath()),
		fmt.Sprintf("sentinel monitor %s %s %s %d", MasterName, host, port, quorum),
		fmt.Sprintf("sentinel down-after-milliseconds %s %d", MasterName, downAfter.Milliseconds()),
		fmt.Sprintf("sentinel failover-timeout %s %d", MasterName, c.cfg.SentinelFailoverTimeout.Milliseconds()),
		fmt.Sprintf("sentinel parallel-syncs %s 1", MasterName),
		// Told up front, a sentinel knows its peers and the replicas at
		// once, instead of learning them from the master's INFO (every
		// 10 s) and from hello messages (every 2 s).
		fmt.Sprintf("sentinel myid %s", sentinelID(s)),
		c.knownPeers(s),
	}, "\n")
}

// sentinelID is a fixed run id for sentinel s, so that the others can be
// told about it before it starts.
func sentinelID(s *local.Server) string {
	return fmt.Sprintf("%040x", sha1.Sum([]byte("lockharness-"+s.Name)))[:40]
}

// knownPeers lists, for sentinel s, the replicas of the first master (at
// the addresses they announce) and the other sentinels.
func (c *Cluster) knownPeers(s *local.Server) string {
	var b strings.Builder
	for _, n := range c.Nodes[1:] {
		if l := c.links[sut.LinkName(sut.SentinelsFrom, n.Name)]; l != nil {
			fmt.Fprintf(&b, "sentinel known-replica %s %s\n", MasterName, strings.Replace(l.Addr(), ":", " ", 1))
		}
	}
	for _, o := range c.Sentinels {
		if o != s {
			fmt.Fprintf(&b, "sentinel known-sentinel %s 127.0.0.1 %d %s\n", MasterName, o.Port, sentinelID(o))
		}
	}
	return b.String()
}

// ports allocates a port for every node, the storage node and every
// sentinel. Free ports come with their listeners still open, to be closed
// just before the servers start.
func (c *Cluster) ports() ([]int, []net.Listener, error) {
	return local.Ports(c.cfg.BasePort, c.cfg.Nodes+1+c.cfg.Sentinels)
}

// RedisConfig is the base config of a node: loopback only, its own dir, no
// snapshots (a node must not find and load a dump from an earlier run).
func RedisConfig(port int, dir, name string) string {
	return strings.Join([]string{
		fmt.Sprintf("port %d", port),
		"bind 127.0.0.1",
		"protected-mode no",
		"daemonize no",
		fmt.Sprintf("dir %s", dir),
		fmt.Sprintf("logfile %s", filepath.Join(dir, name+".log")),
		`save ""`,
		"appendonly no",
		"",
	}, "\n")
}

// Config is the configuration the cluster runs with (defaults filled in).
func (c *Cluster) Config() sut.Config {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cfg
}

// Dir is the directory holding every node's files.
func (c *Cluster) Dir() string { return c.cfg.Dir }

// Endpoints lists the nodes as client slot cl reaches them: through its own
// proxies.
func (c *Cluster) Endpoints(cl int) []sut.Endpoint {
	out := make([]sut.Endpoint, 0, len(c.Nodes))
	for _, n := range c.Nodes {
		l := c.links[sut.LinkName(fmt.Sprintf("c%d", cl), n.Name)]
		if l == nil {
			continue
		}
		out = append(out, sut.Endpoint{Node: n.Name, Addr: l.Addr()})
	}
	return out
}

// StorageAddr is the storage node's address (direct, never faulted).
func (c *Cluster) StorageAddr() string { return c.Storage.Addr() }

// Server returns the lock node process with the given name.
func (c *Cluster) Server(name string) (*local.Server, error) {
	for _, n := range c.Nodes {
		if n.Name == name {
			return n, nil
		}
	}
	return nil, fmt.Errorf("no node %q in this topology", name)
}

// Down stops every proxy and kills every server, then removes the
// temporary directory. It is safe to call more than once and from any exit
// path.
func (c *Cluster) Down() error {
	c.downOnce.Do(func() {
		servers := append(append([]*local.Server(nil), c.Sentinels...), c.Nodes...)
		c.downErr = local.StopAll(c.proxies, append(servers, c.Storage), c.cfg.Dir, c.tempDir)
	})
	return c.downErr
}
