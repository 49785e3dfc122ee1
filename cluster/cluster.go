// Package cluster brings Redis topologies up and down: real redis-server
// processes on loopback ports, each in its own directory, with every network
// link a client (or a replica, or a sentinel) uses going through its own
// toxiproxy proxy, embedded in this process, so faults can be injected per
// link. Down stops everything; children also die with the harness (Pdeathsig).
package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
)

// Config describes an independent-masters topology. The zero value, after
// WithDefaults, is one node and one client.
type Config struct {
	// Nodes is the number of independent Redis masters the lock uses.
	Nodes int
	// Clients is the number of client slots; each slot gets its own proxy to
	// every node, so one client can be cut off while another is not.
	Clients int
	// Dir is the parent of the per-node directories. Empty: a new temporary
	// directory, removed by Down.
	Dir string
	// BasePort, when non-zero, puts node i on BasePort+i and the storage
	// node on BasePort+Nodes+1; otherwise ports are chosen free.
	BasePort int
	// RedisServer is the redis-server binary; empty means look it up on PATH.
	RedisServer string
	// ExtraConfig is appended to every lock node's config (for example
	// "appendonly yes").
	ExtraConfig string
}

// WithDefaults fills in unset fields.
func (c Config) WithDefaults() Config {
	if c.Nodes == 0 {
		c.Nodes = 1
	}
	if c.Clients == 0 {
		c.Clients = 1
	}
	return c
}

// Validate rejects configurations that cannot be started.
func (c Config) Validate() error {
	if c.Nodes < 1 {
		return fmt.Errorf("nodes must be at least 1, got %d", c.Nodes)
	}
	if c.Clients < 1 {
		return fmt.Errorf("clients must be at least 1, got %d", c.Clients)
	}
	if c.BasePort < 0 || c.BasePort > 65535-c.Nodes-1 {
		return fmt.Errorf("base port %d out of range", c.BasePort)
	}
	return nil
}

// Endpoint is one node as one client reaches it.
type Endpoint struct {
	Node string // node name, "n1"…
	Addr string // host:port to dial (the client's proxy for that node)
}

// Cluster is a running topology.
type Cluster struct {
	cfg     Config
	tempDir bool

	// Nodes are the lock's Redis servers, n1…nN.
	Nodes []*Server
	// Storage holds the protected resource; no fault reaches it.
	Storage *Server

	proxies *toxiproxy.ApiServer
	links   map[string]*Link // by name, "c0->n1"

	downOnce sync.Once
	downErr  error
}

// Up starts the topology: every node, then the proxies, then waits until
// every node answers PING. On error, whatever was started is stopped.
func Up(ctx context.Context, cfg Config) (_ *Cluster, err error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	bin := cfg.RedisServer
	if bin == "" {
		if bin, err = LookBinary("redis-server"); err != nil {
			return nil, err
		}
	}
	c := &Cluster{cfg: cfg, links: map[string]*Link{}}
	defer func() {
		if err != nil {
			_ = c.Down()
		}
	}()
	if cfg.Dir == "" {
		d, err := os.MkdirTemp("", "lockharness-")
		if err != nil {
			return nil, fmt.Errorf("make cluster dir: %w", err)
		}
		c.cfg.Dir, c.tempDir = d, true
	}
	ports, err := c.ports()
	if err != nil {
		return nil, err
	}
	for i := 0; i < cfg.Nodes; i++ {
		name := fmt.Sprintf("n%d", i+1)
		c.Nodes = append(c.Nodes, &Server{
			Name: name, Port: ports[i], Binary: bin,
			Dir:    filepath.Join(c.cfg.Dir, name),
			Config: RedisConfig(ports[i], filepath.Join(c.cfg.Dir, name), name) + cfg.ExtraConfig,
		})
	}
	sp := ports[cfg.Nodes]
	c.Storage = &Server{Name: "storage", Port: sp, Binary: bin, Dir: filepath.Join(c.cfg.Dir, "storage"),
		Config: RedisConfig(sp, filepath.Join(c.cfg.Dir, "storage"), "storage")}

	all := append(append([]*Server(nil), c.Nodes...), c.Storage)
	for _, s := range all {
		if err := s.Start(ctx, false); err != nil {
			return nil, err
		}
	}
	// Proxies go up while the servers start; nothing dials through them yet.
	zerolog.SetGlobalLevel(zerolog.Disabled) // the bandwidth toxic logs through the global logger
	c.proxies = toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	for cl := 0; cl < cfg.Clients; cl++ {
		for _, n := range c.Nodes {
			if _, err := c.AddLink(fmt.Sprintf("c%d", cl), n); err != nil {
				return nil, err
			}
		}
	}
	errs := make(chan error, len(all))
	for _, s := range all {
		go func(s *Server) { errs <- s.WaitReady(ctx, defaultReadyTimeout) }(s)
	}
	var werr error
	for range all {
		werr = errors.Join(werr, <-errs)
	}
	if werr != nil {
		return nil, werr
	}
	return c, nil
}

// ports allocates a port for every node and the storage node.
func (c *Cluster) ports() ([]int, error) {
	n := c.cfg.Nodes + 1
	ports := make([]int, 0, n)
	seen := map[int]bool{}
	for i := 0; i < n; i++ {
		if c.cfg.BasePort != 0 {
			p := c.cfg.BasePort + i + 1
			if err := CheckPortFree(p); err != nil {
				return nil, err
			}
			ports = append(ports, p)
			continue
		}
		for {
			p, err := FreePort()
			if err != nil {
				return nil, err
			}
			if !seen[p] {
				seen[p] = true
				ports = append(ports, p)
				break
			}
		}
	}
	return ports, nil
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
func (c *Cluster) Config() Config { return c.cfg }

// Dir is the directory holding every node's files.
func (c *Cluster) Dir() string { return c.cfg.Dir }

// Endpoints lists the nodes as client slot cl reaches them: through its own
// proxies.
func (c *Cluster) Endpoints(cl int) []Endpoint {
	out := make([]Endpoint, 0, len(c.Nodes))
	for _, n := range c.Nodes {
		l := c.links[LinkName(fmt.Sprintf("c%d", cl), n.Name)]
		if l == nil {
			continue
		}
		out = append(out, Endpoint{Node: n.Name, Addr: l.Addr()})
	}
	return out
}

// StorageAddr is the storage node's address (direct, never faulted).
func (c *Cluster) StorageAddr() string { return c.Storage.Addr() }

// Node returns the node with the given name.
func (c *Cluster) Node(name string) (*Server, error) {
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
		var errs []error
		if c.proxies != nil {
			c.proxies.Collection.Clear()
		}
		servers := append([]*Server(nil), c.Nodes...)
		if c.Storage != nil {
			servers = append(servers, c.Storage)
		}
		for _, s := range servers {
			if err := s.Kill(); err != nil {
				errs = append(errs, err)
			}
		}
		if c.tempDir {
			if err := os.RemoveAll(c.cfg.Dir); err != nil {
				errs = append(errs, fmt.Errorf("remove %s: %w", c.cfg.Dir, err))
			}
		}
		c.downErr = errors.Join(errs...)
	})
	return c.downErr
}
