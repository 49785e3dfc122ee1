// Package rediscluster is the local-process Redis Cluster backend behind
// the seam (topology sut.RedisCluster): Masters masters, n1…nM, each owning an equal range of
// the 16384 hash slots, and Replicas replicas of each (3 + 3: n4 follows
// n1, n5 n2, n6 n3), real redis-server processes with cluster-enabled.
//
// Links. Every node announces to the cluster (cluster-announce-*) two
// proxies instead of its own ports, so that what the nodes say to each
// other goes through links the harness can fault:
//   - "peers->nI" fronts nI's data port: its replicas replicate from it
//     through this link, and CLUSTER SLOTS and MOVED name it. It is shared
//     by whoever follows nI (one replica in 3 + 3), as "sentinels->nI" is
//     in a Sentinel topology: slowing or cutting it delays or stops nI's
//     replication stream, and nothing else;
//   - "bus->nI" fronts nI's cluster bus port: every other node's gossip,
//     failure reports and failover votes reach nI through it. Cutting it
//     makes the others see nI fail (the cluster fails it over after
//     cluster-node-timeout).
//
// Clients get their own "cK->nI" links as in every topology; their
// go-redis ClusterClient learns the announced "peers->nI" addresses from
// CLUSTER SLOTS and MOVED, and its dialer maps each to the client's own
// link to that node, so a fault on one client's links touches no other.
//
// The generic nemeses see n1…nN as independent nodes (Layout.Replicated is
// false): kill, pause and clock strike any node, partition cuts client
// links; a fault on a peers or bus link is scripted by its name. The
// slot-aware faults (failover of a slot's master, slot moves) are
// sut.Sharded's.
package rediscluster

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"net"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/redis/go-redis/v9"
	"github.com/rs/zerolog"

	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/sut/local"
	redisbackend "github.com/lockharness/lockharness/sut/redis"
)

// readyTimeout bounds a node's start.
const readyTimeout = 10 * time.Second

// clusterSlots is the number of hash slots of a Redis Cluster.
const clusterSlots = 16384

// Link sources of a Redis Cluster's node-to-node links.
const (
	// PeersFrom is the From of "peers->nI", the link nI's replicas
	// replicate through.
	PeersFrom = "peers"
	// BusFrom is the From of "bus->nI", the link the other nodes' cluster
	// bus traffic reaches nI through.
	BusFrom = "bus"
)

// Validate refuses a Redis Cluster config (defaults filled in) this
// backend cannot start: what only a Redis Cluster judges, before
// sut.Config.Validate.
func Validate(c sut.Config) error {
	switch {
	case c.Masters < 3:
		return fmt.Errorf("a Redis Cluster needs at least 3 masters (a failover needs a majority of them to vote), got %d", c.Masters)
	case c.Replicas < 1:
		return fmt.Errorf("a Redis Cluster here needs at least 1 replica per master (to fail over to), got %d", c.Replicas)
	case c.Sentinels != 0 || c.Failover != "":
		return fmt.Errorf("a Redis Cluster fails over by itself: it runs no sentinels and takes no --failover")
	case c.Masters > sut.MaxServers/2 || c.Replicas > sut.MaxServers/3-1 || c.Nodes > sut.MaxServers:
		return fmt.Errorf("a Redis Cluster of %d masters with %d replica(s) each is %s nodes, more than the harness starts (%d: masters × (1 + replicas)); use e.g. --masters 3 --replicas 1, at most --masters %d with --replicas 1",
			c.Masters, c.Replicas, clusterSize(c.Masters, c.Replicas), sut.MaxServers, sut.MaxServers/2)
	case c.ClusterNodeTimeout < 0:
		return fmt.Errorf("cluster node timeout must not be negative, got %v", c.ClusterNodeTimeout)
	case c.BasePort < 0 || c.BasePort > 65535-2*c.Nodes-1:
		return fmt.Errorf("base port %d out of range", c.BasePort)
	}
	return nil
}

// clusterSize is masters × (1 + replicas) in words, computed without
// overflow (both may be anything a flag took).
func clusterSize(masters, replicas int) string {
	per := new(big.Int).Add(big.NewInt(int64(replicas)), big.NewInt(1))
	return new(big.Int).Mul(big.NewInt(int64(masters)), per).String()
}

// ClusterMaster is the initial master of node i (1-based) of a Redis
// Cluster with m masters, or "" when i is a master itself: replicas come
// after the masters, r per master, in master order.
func ClusterMaster(i, m, r int) string {
	if i <= m {
		return ""
	}
	return fmt.Sprintf("n%d", (i-m-1)/r+1)
}

// InitialSlotMaster is the master that owns slot when a Redis Cluster of m
// masters starts: master i of m owns slots [(i-1)·16384/m, i·16384/m).
func InitialSlotMaster(slot, m int) string {
	return fmt.Sprintf("n%d", slot*m/clusterSlots+1)
}

// slotRange is master i's (1-based) slots at start.
func slotRange(i, m int) (lo, hi int) {
	return (i - 1) * clusterSlots / m, i*clusterSlots/m - 1
}

// Cluster is a running Redis Cluster: a sut.Deployment, a
// sut.Sharded and a sut.Deployment.
type Cluster struct {
	cfg     sut.Config
	tempDir bool

	// Nodes are the cluster's redis-servers, masters first.
	Nodes []*local.Server
	// Storage holds the protected resource; no fault reaches it.
	Storage *local.Server

	bus      map[string]int // node -> its cluster bus port
	proxies  *toxiproxy.ApiServer
	links    map[string]*local.Link // by name
	announce map[string]string      // announced address ("peers->nI") -> node

	mu  sync.Mutex
	ids map[string]string // node -> cluster node id (kept in nodes.conf across restarts)

	downOnce sync.Once
	downErr  error
}

var (
	_ sut.Deployment = (*Cluster)(nil)
	_ sut.Sharded    = (*Cluster)(nil)
	_ sut.Persister  = (*Cluster)(nil)
	_ sut.Hinter     = (*Cluster)(nil)
	_ redis.Hook     = noRetryHook{}
)

// Up starts a Redis Cluster: the proxies, every node with
// cluster-enabled, then it assigns the slots, introduces the nodes to each
// other (CLUSTER MEET through their bus links), makes the replicas
// follow their masters, and waits until every node reports the cluster ok
// and every replica's link up. On error everything started is stopped.
// As Up, it starts over on new ports when a free port was taken.
func Up(ctx context.Context, cfg sut.Config) (*Cluster, error) {
	return local.RetryBusyPorts(ctx, cfg.BasePort != 0, func() (*Cluster, error) { return up(ctx, cfg) })
}

func up(ctx context.Context, cfg sut.Config) (_ *Cluster, err error) {
	cfg.Topology = sut.RedisCluster
	cfg = cfg.WithDefaults()
	if err := Validate(cfg); err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	bin := cfg.RedisServer
	if bin == "" {
		if bin, err = redisbackend.LookBinary("redis-server"); err != nil {
			return nil, err
		}
	}
	c := &Cluster{cfg: cfg, bus: map[string]int{}, links: map[string]*local.Link{}, announce: map[string]string{}, ids: map[string]string{}}
	defer func() {
		if err != nil {
			_ = c.Down()
		}
	}()
	ftEnv, err := c.openDir()
	if err != nil {
		return nil, err
	}
	// Data ports, the storage node's, then bus ports.
	ports, held, err := local.Ports(cfg.BasePort, 2*cfg.Nodes+1)
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
	c.newServers(bin, ports, ftEnv)
	zerolog.SetGlobalLevel(zerolog.Disabled) // as in Up: the bandwidth toxic logs globally
	c.proxies = toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	if err := c.addLinks(); err != nil {
		return nil, err
	}
	release()
	for _, s := range c.Nodes {
		s.Config = c.renderConfig(s)
	}
	if err := redisbackend.StartAll(ctx, append(append([]*local.Server(nil), c.Nodes...), c.Storage), readyTimeout); err != nil {
		return nil, err
	}
	if err := c.form(ctx); err != nil {
		return nil, err
	}
	if err := c.waitConsistent(ctx, 60*time.Second); err != nil {
		return nil, fmt.Errorf("redis cluster not ready: %w", err)
	}
	return c, nil
}

// openDir makes the deployment's directory its own (absolute) or a new
// temporary one, and, with faketime, the environment of a server whose
// clock the harness sets.
func (c *Cluster) openDir() (ftEnv func(clockFile string) []string, err error) {
	if c.cfg.Dir, c.tempDir, err = local.WorkDir(c.cfg.Dir, "lockharness-"); err != nil {
		return nil, err
	}
	if !c.cfg.Faketime {
		return nil, nil
	}
	return redisbackend.FaketimeEnv(c.cfg.Dir)
}

// newServers makes (without starting them) the nodes n1… on the first
// ports, the storage node on the next, and gives each node the bus port
// after that in turn; with ftEnv, each node's clock is a file of its own
// that ftEnv makes it read.
func (c *Cluster) newServers(bin string, ports []int, ftEnv func(clockFile string) []string) {
	cfg := c.cfg
	for i := 0; i < cfg.Nodes; i++ {
		name := fmt.Sprintf("n%d", i+1)
		s := redisbackend.NewServer(name, ports[i], bin, filepath.Join(cfg.Dir, name))
		if cfg.Faketime {
			s.ClockFile = filepath.Join(s.Dir, "faketime")
			s.Env = ftEnv(s.ClockFile)
		}
		c.Nodes = append(c.Nodes, s)
		c.bus[name] = ports[cfg.Nodes+1+i]
	}
	sp := ports[cfg.Nodes]
	c.Storage = redisbackend.Storage(bin, cfg.Dir, sp)
}

// addLinks creates "cK->nI" for every client and node, and each node's
// announced "peers->nI" and "bus->nI".
func (c *Cluster) addLinks() error {
	add := func(from, to, upstream string) (*local.Link, error) {
		name := sut.LinkName(from, to)
		l, err := local.NewLink(c.proxies, from, to, "127.0.0.1:0", upstream)
		if err != nil {
			return nil, err
		}
		c.links[name] = l
		return l, nil
	}
	for cl := 0; cl < c.cfg.Clients; cl++ {
		for _, n := range c.Nodes {
			if _, err := add(sut.ClientName(cl), n.Name, n.Addr()); err != nil {
				return err
			}
		}
	}
	for _, n := range c.Nodes {
		l, err := add(PeersFrom, n.Name, n.Addr())
		if err != nil {
			return err
		}
		c.announce[l.Addr()] = n.Name
		if _, err := add(BusFrom, n.Name, net.JoinHostPort("127.0.0.1", strconv.Itoa(c.bus[n.Name]))); err != nil {
			return err
		}
	}
	return nil
}

func proxyPort(l *local.Link) string {
	_, p, _ := net.SplitHostPort(l.Addr())
	return p
}

// renderConfig is node s's config: base, persistence, and cluster mode,
// announcing its peers and bus links.
func (c *Cluster) renderConfig(s *local.Server) string {
	var b strings.Builder
	b.WriteString(redisbackend.RedisConfig(s.Port, s.Dir, s.Name))
	pc, _ := redisbackend.PersistenceConfig(c.cfg.Persistence) // validated
	b.WriteString(pc)
	fmt.Fprintf(&b, "cluster-enabled yes\ncluster-config-file nodes.conf\ncluster-node-timeout %d\n", c.cfg.ClusterNodeTimeout.Milliseconds())
	fmt.Fprintf(&b, "cluster-port %d\ncluster-announce-ip 127.0.0.1\n", c.bus[s.Name])
	fmt.Fprintf(&b, "cluster-announce-port %s\ncluster-announce-bus-port %s\n",
		proxyPort(c.links[sut.LinkName(PeersFrom, s.Name)]), proxyPort(c.links[sut.LinkName(BusFrom, s.Name)]))
	// Roles stay where the harness and the cluster's own failovers put
	// them: no replica wanders off to an orphaned master.
	b.WriteString("cluster-allow-replica-migration no\n")
	// A full sync starts at once instead of waiting 5 s for more replicas.
	b.WriteString("repl-diskless-sync-delay 0\n")
	b.WriteString(c.cfg.ExtraConfig)
	if c.cfg.ExtraConfig != "" && !strings.HasSuffix(c.cfg.ExtraConfig, "\n") {
		b.WriteString("\n")
	}
	return b.String()
}

// form makes one cluster of the started nodes, as redis-cli --cluster
// create does but with a fixed layout: distinct config epochs, the slot
// ranges on the masters, CLUSTER MEET through the bus links, then each
// replica CLUSTER REPLICATE its master once it knows it.
func (c *Cluster) form(ctx context.Context) error {
	for i, s := range c.Nodes {
		id, err := adminResult(ctx, s, "cluster", "myid")
		if err != nil {
			return fmt.Errorf("cluster myid on %s: %w", s.Name, err)
		}
		c.ids[s.Name] = fmt.Sprint(id)
		if err := redisbackend.AdminDo(ctx, s, "cluster", "set-config-epoch", i+1); err != nil {
			return fmt.Errorf("cluster set-config-epoch on %s: %w", s.Name, err)
		}
	}
	for i := 1; i <= c.cfg.Masters; i++ {
		lo, hi := slotRange(i, c.cfg.Masters)
		if err := redisbackend.AdminDo(ctx, c.Nodes[i-1], "cluster", "addslotsrange", lo, hi); err != nil {
			return fmt.Errorf("cluster addslotsrange %d %d on n%d: %w", lo, hi, i, err)
		}
	}
	first := c.Nodes[0]
	for _, s := range c.Nodes[1:] {
		if err := redisbackend.AdminDo(ctx, first, "cluster", "meet", "127.0.0.1",
			proxyPort(c.links[sut.LinkName(PeersFrom, s.Name)]), proxyPort(c.links[sut.LinkName(BusFrom, s.Name)])); err != nil {
			return fmt.Errorf("cluster meet %s: %w", s.Name, err)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for i, s := range c.Nodes {
		m := ClusterMaster(i+1, c.cfg.Masters, c.cfg.Replicas)
		if m == "" {
			continue
		}
		for {
			// A replica can only follow a master it has heard of.
			err := redisbackend.AdminDo(ctx, s, "cluster", "replicate", c.id(m))
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("cluster replicate %s on %s: %w", m, s.Name, err)
			}
			if err := sleepCtx(ctx, 50*time.Millisecond); err != nil {
				return err
			}
		}
	}
	return nil
}

func (c *Cluster) id(name string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ids[name]
}

// nameOf is the node whose cluster id is id, or "".
func (c *Cluster) nameOf(id string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	for n, i := range c.ids {
		if i == id {
			return n
		}
	}
	return ""
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

func adminResult(ctx context.Context, s *local.Server, args ...any) (any, error) {
	cl := redisbackend.NewRedisClient(s.Addr(), sut.ClientOptions{Timeout: 2 * time.Second, PoolSize: 1})
	defer cl.Close()
	return cl.Do(ctx, args...).Result()
}

// view is what one node says about the cluster (CLUSTER NODES).
func (c *Cluster) view(ctx context.Context, s *local.Server) ([]ClusterNode, error) {
	v, err := adminResult(ctx, s, "cluster", "nodes")
	if err != nil {
		return nil, fmt.Errorf("cluster nodes on %s: %w", s.Name, err)
	}
	return ParseClusterNodes(fmt.Sprint(v))
}

// selfClaims is each reachable node's own line of its CLUSTER NODES, by
// node name: what it says it is.
func (c *Cluster) selfClaims(ctx context.Context) (map[string]ClusterNode, map[string][]ClusterNode, error) {
	self := map[string]ClusterNode{}
	views := map[string][]ClusterNode{}
	var errs []error
	for _, s := range c.Nodes {
		if !s.Running() || s.Paused() {
			errs = append(errs, fmt.Errorf("%s is not answering (stopped or paused)", s.Name))
			continue
		}
		v, err := c.view(ctx, s)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		views[s.Name] = v
		for _, n := range v {
			if n.Myself() {
				self[s.Name] = n
			}
		}
	}
	return self, views, errors.Join(errs...)
}

// Slot is the hash slot of key (CLUSTER KEYSLOT).
func (c *Cluster) Slot(key string) int { return KeySlot(key) }

// Shard is the master that serves slot by its own account (with the
// highest config epoch, should two claim it during a failover) and the
// nodes that say they replicate it.
func (c *Cluster) Shard(ctx context.Context, slot int) (sut.Shard, error) {
	self, _, err := c.selfClaims(ctx)
	sh := sut.Shard{Slot: slot}
	var epoch int64 = -1
	for name, n := range self {
		if n.Master() && n.Serves(slot) && n.ConfigEpoch > epoch {
			sh.Master, epoch = name, n.ConfigEpoch
		}
	}
	if sh.Master == "" {
		return sh, fmt.Errorf("no node says it serves slot %d (%v)", slot, err)
	}
	mid := c.id(sh.Master)
	for name, n := range self {
		if !n.Master() && n.MasterID == mid {
			sh.Replicas = append(sh.Replicas, name)
		}
	}
	sort.Strings(sh.Replicas)
	return sh, nil
}

// Masters are the nodes that say they are masters serving slots.
func (c *Cluster) Masters(ctx context.Context) ([]string, error) {
	self, _, err := c.selfClaims(ctx)
	var out []string
	for name, n := range self {
		if n.Master() && len(n.Slots) > 0 {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	if len(out) == 0 {
		return nil, fmt.Errorf("no node says it is a master (%v)", err)
	}
	return out, nil
}

// Failover sends CLUSTER FAILOVER [FORCE|TAKEOVER] to replica over a
// direct connection and waits until the replica reports role master and
// its own CLUSTER NODES says it serves its old master's slots. A graceful
// failover that cannot finish (the replica never catches up) gives up
// after Redis's manual failover timeout (5 s); so does this, a little
// later.
func (c *Cluster) Failover(ctx context.Context, replica, mode string) error {
	s, err := c.Server(replica)
	if err != nil {
		return err
	}
	args := []any{"cluster", "failover"}
	switch mode {
	case sut.FailoverGraceful:
	case sut.FailoverForce, sut.FailoverTakeover:
		args = append(args, mode)
	default:
		return fmt.Errorf("unknown cluster failover mode %q (want %q, %s or %s)", mode, sut.FailoverGraceful, sut.FailoverForce, sut.FailoverTakeover)
	}
	if err := redisbackend.AdminDo(ctx, s, args...); err != nil {
		return fmt.Errorf("%s on %s: %w", strings.ToUpper(fmt.Sprint(args...)), replica, err)
	}
	deadline := time.Now().Add(8 * time.Second)
	for {
		ri, rerr := redisbackend.ReplicationOf(ctx, s)
		v, verr := c.view(ctx, s)
		if rerr == nil && verr == nil && ri.Role == sut.RoleMaster {
			for _, n := range v {
				if n.Myself() && n.Master() && len(n.Slots) > 0 {
					return nil
				}
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s is still not a master serving slots 8s after CLUSTER FAILOVER %s (role %q, %v %v)", replica, mode, ri.Role, rerr, verr)
		}
		if err := sleepCtx(ctx, 5*time.Millisecond); err != nil {
			return err
		}
	}
}

// MoveSlot migrates slot from its master to master to as redis-cli
// --cluster reshard does: SETSLOT IMPORTING on to, SETSLOT MIGRATING on
// the owner, MIGRATE of its keys in batches (each key keeps its TTL; a
// client asking for a key already moved gets ASK), then SETSLOT NODE on
// to, the owner and every other master. MIGRATE goes owner to to directly:
// the operator's path, not a faulted link.
func (c *Cluster) MoveSlot(ctx context.Context, slot int, to string) (int, error) {
	sh, err := c.Shard(ctx, slot)
	if err != nil {
		return 0, err
	}
	if sh.Master == to {
		return 0, fmt.Errorf("slot %d is already on %s", slot, to)
	}
	src, err := c.Server(sh.Master)
	if err != nil {
		return 0, err
	}
	dst, err := c.Server(to)
	if err != nil {
		return 0, err
	}
	srcID, dstID := c.id(sh.Master), c.id(to)
	if err := redisbackend.AdminDo(ctx, dst, "cluster", "setslot", slot, "importing", srcID); err != nil {
		return 0, fmt.Errorf("SETSLOT %d IMPORTING on %s: %w", slot, to, err)
	}
	if err := redisbackend.AdminDo(ctx, src, "cluster", "setslot", slot, "migrating", dstID); err != nil {
		return 0, fmt.Errorf("SETSLOT %d MIGRATING on %s: %w", slot, sh.Master, err)
	}
	moved := 0
	for {
		v, err := adminResult(ctx, src, "cluster", "getkeysinslot", slot, 100)
		if err != nil {
			return moved, fmt.Errorf("GETKEYSINSLOT %d on %s: %w", slot, sh.Master, err)
		}
		keys, _ := v.([]any)
		if len(keys) == 0 {
			break
		}
		args := []any{"migrate", "127.0.0.1", dst.Port, "", 0, 2000, "keys"}
		args = append(args, keys...)
		if err := redisbackend.AdminDo(ctx, src, args...); err != nil && !errors.Is(err, redis.Nil) {
			return moved, fmt.Errorf("MIGRATE slot %d from %s to %s: %w", slot, sh.Master, to, err)
		}
		moved += len(keys)
	}
	var errs []error
	for _, s := range []*local.Server{dst, src} {
		errs = append(errs, redisbackend.AdminDo(ctx, s, "cluster", "setslot", slot, "node", dstID))
	}
	if err := errors.Join(errs...); err != nil {
		return moved, fmt.Errorf("SETSLOT %d NODE %s: %w", slot, to, err)
	}
	if ms, err := c.Masters(ctx); err == nil {
		for _, m := range ms {
			if m != to && m != sh.Master {
				if s, err := c.Server(m); err == nil {
					_ = redisbackend.AdminDo(ctx, s, "cluster", "setslot", slot, "node", dstID) // gossip would tell it too
				}
			}
		}
	}
	return moved, nil
}

// Server returns the node process called name.
func (c *Cluster) Server(name string) (*local.Server, error) {
	for _, n := range c.Nodes {
		if n.Name == name {
			return n, nil
		}
	}
	return nil, fmt.Errorf("no node %q in this topology", name)
}

// consistent reports what keeps the cluster from the state the harness
// starts from and heals to: every node answering and saying cluster_state
// ok, every slot served by exactly one master by its own account and by
// every node's, no slot half moved, and every master followed by at least
// one replica whose link is up.
func (c *Cluster) consistent(ctx context.Context) error {
	self, views, err := c.selfClaims(ctx)
	if err != nil {
		return err
	}
	errs := c.clusterInfoErrs(ctx)
	owner, masters, slotErrs := slotOwners(self)
	errs = append(errs, slotErrs...)
	errs = append(errs, c.viewErrs(self, views, owner)...)
	errs = append(errs, c.replicaErrs(ctx, self, masters)...)
	return errors.Join(errs...)
}

// clusterInfoErrs is what CLUSTER INFO on each node says is wrong: a
// cluster_state not ok, or nodes that disagree on the current epoch.
func (c *Cluster) clusterInfoErrs(ctx context.Context) []error {
	var errs []error
	epochs := map[string][]string{}
	for _, s := range c.Nodes {
		v, err := adminResult(ctx, s, "cluster", "info")
		if err != nil {
			errs = append(errs, fmt.Errorf("cluster info on %s: %w", s.Name, err))
			continue
		}
		info := fmt.Sprint(v)
		if !strings.Contains(info, "cluster_state:ok") {
			errs = append(errs, fmt.Errorf("%s: cluster_state is not ok", s.Name))
		}
		// A master refuses its vote to a replica whose current epoch is
		// behind its own, and the replica tries again only after twice
		// the node timeout: a failover right after the cluster formed
		// would hang. Every node must know the same current epoch.
		for _, line := range strings.Split(info, "\n") {
			if e, ok := strings.CutPrefix(strings.TrimSpace(line), "cluster_current_epoch:"); ok {
				epochs[e] = append(epochs[e], s.Name)
			}
		}
	}
	if len(epochs) > 1 {
		errs = append(errs, fmt.Errorf("nodes disagree on the current epoch: %v", epochs))
	}
	return errs
}

// slotOwners is, by each master's own account (self), the master of every
// slot (owner, by slot) and the masters that serve slots (masters, each
// with no replica counted yet), with what is wrong: a slot half moved,
// claimed twice, or served by no master (the first such slot only).
func slotOwners(self map[string]ClusterNode) (owner []string, masters map[string]int, errs []error) {
	owner = make([]string, clusterSlots)
	masters = map[string]int{}
	for name, n := range self {
		if len(n.Migrating) > 0 || len(n.Importing) > 0 {
			errs = append(errs, fmt.Errorf("%s has slots half moved (migrating %v, importing %v)", name, n.Migrating, n.Importing))
		}
		if !n.Master() {
			continue
		}
		if len(n.Slots) > 0 {
			masters[name] = 0
		}
		for _, r := range n.Slots {
			for sl := r[0]; sl <= r[1]; sl++ {
				if owner[sl] != "" {
					errs = append(errs, fmt.Errorf("slot %d claimed by %s and %s", sl, owner[sl], name))
				}
				owner[sl] = name
			}
		}
	}
	for sl, o := range owner {
		if o == "" {
			errs = append(errs, fmt.Errorf("slot %d is served by no master", sl))
			break
		}
	}
	return owner, masters, errs
}

// viewErrs is where a node's view of the others (views) differs from what
// they say of themselves (self) or from the slots' owners.
func (c *Cluster) viewErrs(self map[string]ClusterNode, views map[string][]ClusterNode, owner []string) []error {
	var errs []error
	for name, v := range views {
		for _, n := range v {
			// Every node sees every other in the role it claims (a master
			// ignores a manual failover request from a node it does not
			// yet see as its replica) and connected.
			who := c.nameOf(n.ID)
			if sc, ok := self[who]; ok && !n.Myself() && (sc.Master() != n.Master() || sc.MasterID != n.MasterID || !n.Connected) {
				errs = append(errs, fmt.Errorf("%s sees %s as %v of %q (connected %v), it says %v of %q", name, who, n.Flags, c.nameOf(n.MasterID), n.Connected, sc.Flags, c.nameOf(sc.MasterID)))
			}
			if !n.Master() {
				continue
			}
			for _, r := range n.Slots {
				if o := owner[r[0]]; o != "" && c.id(o) != n.ID {
					errs = append(errs, fmt.Errorf("%s thinks slot %d is on %s, %s serves it", name, r[0], c.nameOf(n.ID), o))
				}
			}
		}
	}
	return errs
}

// replicaErrs is every replica whose link to its master is not up, and
// every master of masters that no replica in sync follows.
func (c *Cluster) replicaErrs(ctx context.Context, self map[string]ClusterNode, masters map[string]int) []error {
	var errs []error
	for name, n := range self {
		if n.Master() {
			continue
		}
		m := c.nameOf(n.MasterID)
		s, _ := c.Server(name)
		ri, err := redisbackend.ReplicationOf(ctx, s)
		if err != nil || ri.Role != sut.RoleReplica || !ri.LinkUp {
			errs = append(errs, fmt.Errorf("replica %s of %s: link not up (%+v %v)", name, m, ri, err))
			continue
		}
		if _, ok := masters[m]; ok {
			masters[m]++
		}
	}
	for m, reps := range masters {
		if reps == 0 {
			errs = append(errs, fmt.Errorf("master %s has no replica in sync", m))
		}
	}
	return errs
}

func (c *Cluster) waitConsistent(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		err := c.consistent(ctx)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %v: %w", timeout, err)
		}
		if err := sleepCtx(ctx, 50*time.Millisecond); err != nil {
			return err
		}
	}
}

// --- behind the seam ---

// Layout: n1…nN, no single master (sut.Replicated false: each master is the
// master of its own slots; see sut.Sharded).
func (c *Cluster) Layout() sut.Layout { return c.cfg.Layout() }

// Capabilities: every link a proxy (cut, slow, drop replies), persistence
// by CONFIG SET, and the slot-aware faults. Not CanPromote nor CanElect:
// the cluster elects its own masters, and the single-master failover
// nemesis does not apply (its Needs.Replicated refuses it).
func (c *Cluster) Capabilities() sut.Capabilities {
	return sut.Capabilities{sut.CanCutLinks, sut.CanSlowLinks, sut.CanDropReplies, sut.CanSetPersistence,
		sut.CanFailoverShard, sut.CanMoveSlots}
}

// Hint says how to get what a Redis Cluster lacks.
func (c *Cluster) Hint(cp sut.Capability) string {
	switch cp {
	case sut.CanSetClock:
		return "start the nodes under libfaketime (sut.Config.Faketime; `harness run` does it for --nemesis clock)"
	case sut.CanPromote, sut.CanElect:
		return "a Redis Cluster elects its own masters: use --nemesis cluster-failover, or --topology replicated for a single master"
	}
	return ""
}

// Node returns a node by name.
func (c *Cluster) Node(name string) (sut.Node, error) {
	s, err := c.Server(name)
	if err != nil {
		return nil, err
	}
	return redisbackend.NewNode(s, sut.KindLock), nil
}

// Members are the nodes in name order.
func (c *Cluster) Members() []sut.Node {
	out := make([]sut.Node, 0, len(c.Nodes))
	for _, s := range c.Nodes {
		out = append(out, redisbackend.NewNode(s, sut.KindLock))
	}
	return out
}

// Network is the cluster's links.
func (c *Cluster) Network() sut.Network { return linkNet(c.links) }

// Endpoints are the nodes through client cl's own links.
func (c *Cluster) Endpoints(cl int) []sut.Endpoint {
	out := make([]sut.Endpoint, 0, len(c.Nodes))
	for _, n := range c.Nodes {
		if l := c.links[sut.LinkName(sut.ClientName(cl), n.Name)]; l != nil {
			out = append(out, sut.Endpoint{Node: n.Name, Addr: l.Addr()})
		}
	}
	return out
}

// StorageAddr is the storage node's address (direct, never faulted).
func (c *Cluster) StorageAddr() string { return c.Storage.Addr() }

// Persistence is the nodes' persistence mode now.
func (c *Cluster) Persistence() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cfg.Persistence
}

// SetPersistence switches every node's persistence (CONFIG SET) and keeps
// it in their configs for restarts.
func (c *Cluster) SetPersistence(ctx context.Context, mode string) error {
	if _, err := redisbackend.PersistenceConfig(mode); err != nil {
		return err
	}
	for _, s := range c.Nodes {
		if err := redisbackend.SetServerPersistence(ctx, s, mode); err != nil {
			return err
		}
	}
	c.mu.Lock()
	c.cfg.Persistence = mode
	c.mu.Unlock()
	for _, s := range c.Nodes {
		s.Config = c.renderConfig(s)
	}
	return nil
}

// Heal undoes every fault through the seam (sut.HealAll: links,
// paused and dead nodes, clocks), ends any half-done slot move (SETSLOT
// STABLE), and waits until the cluster is consistent again: its own
// failovers may have moved masters, which stay where they are.
func (c *Cluster) Heal(ctx context.Context) (string, error) {
	did, err := sut.HealAll(ctx, c)
	if err != nil {
		return did, err
	}
	self, _, _ := c.selfClaims(ctx)
	for name, n := range self {
		for _, sl := range append(keysOf(n.Migrating), keysOf(n.Importing)...) {
			s, _ := c.Server(name)
			if err := redisbackend.AdminDo(ctx, s, "cluster", "setslot", sl, "stable"); err != nil {
				return did, fmt.Errorf("SETSLOT %d STABLE on %s: %w", sl, name, err)
			}
			did += fmt.Sprintf(", slot %d stable on %s", sl, name)
		}
	}
	if err := c.waitConsistent(ctx, 30*time.Second); err != nil {
		return did, fmt.Errorf("redis cluster: %w", err)
	}
	return did, nil
}

func keysOf(m map[int]string) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Ints(out)
	return out
}

// Healthy reports what is still broken: sut.CheckHealthy's checks and
// the cluster's consistency.
func (c *Cluster) Healthy(ctx context.Context) error {
	if err := sut.CheckHealthy(ctx, c); err != nil {
		return err
	}
	return c.consistent(ctx)
}

// Down stops every proxy and server and removes the temporary directory;
// safe to call more than once.
func (c *Cluster) Down() error {
	c.downOnce.Do(func() {
		c.downErr = local.StopAll(c.proxies, append(append([]*local.Server(nil), c.Nodes...), c.Storage), c.cfg.Dir, c.tempDir)
	})
	return c.downErr
}

// ClusterNodeName is the name of the one lock node of a Redis Cluster: a
// go-redis ClusterClient that sends each key to the master of its slot.
const ClusterNodeName = "cluster"

// ClientNodes is one lock node, a go-redis ClusterClient for client slot
// cl: it learns the cluster's layout from CLUSTER SLOTS through the
// client's own links, follows MOVED and ASK (up to 3 redirects), and
// dials every node through the client's own link to it. Commands are
// never sent twice: go-redis's ClusterClient retries a command that timed
// out or lost its connection (first on the same node, then on another),
// whatever MaxRetries says, and a SET NX sent twice answers the second
// time that the lock is taken; so a network error reaches the lock as
// an unknown outcome (OutcomeUnknownError) that the ClusterClient does
// not retry. With sut.ClientOptions.MaxRetries the retries stay on.
func (c *Cluster) ClientNodes(cl int, o sut.ClientOptions) []sut.ClientNode {
	o = o.WithDefaults()
	from := sut.ClientName(cl)
	var seeds []string
	for _, ep := range c.Endpoints(cl) {
		seeds = append(seeds, ep.Addr)
	}
	ro := redisbackend.Options(o, "")
	opts := &redis.ClusterOptions{
		Addrs:                  seeds,
		Dialer:                 c.clientDialer(from, o.Timeout),
		DialTimeout:            ro.DialTimeout,
		ReadTimeout:            ro.ReadTimeout,
		WriteTimeout:           ro.WriteTimeout,
		MaxRetries:             ro.MaxRetries,
		DialerRetries:          ro.DialerRetries,
		PoolSize:               ro.PoolSize,
		PoolTimeout:            ro.PoolTimeout,
		MinRetryBackoff:        ro.MinRetryBackoff,
		MaxRetryBackoff:        ro.MaxRetryBackoff,
		DisableRoutingPolicies: true,
	}
	if o.MaxRetries == 0 {
		opts.NewClient = func(opt *redis.Options) *redis.Client {
			rc := redis.NewClient(opt)
			rc.AddHook(noRetryHook{node: c.announce[opt.Addr]})
			return rc
		}
	}
	return []sut.ClientNode{{Name: ClusterNodeName, Client: redis.NewClusterClient(opts)}}
}

// clientDialer dials an address a node announces (CLUSTER SLOTS, MOVED,
// ASK) through client from's own link to that node; a seed (the client's
// link itself) as it is.
func (c *Cluster) clientDialer(from string, timeout time.Duration) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if name, ok := c.announce[addr]; ok {
			if l := c.links[sut.LinkName(from, name)]; l != nil {
				addr = l.Addr()
			}
		}
		nd := net.Dialer{Timeout: timeout}
		return nd.DialContext(ctx, network, addr)
	}
}

// OutcomeUnknownError is a command whose connection failed after it was
// sent (a timeout, a reset): it may or may not have run. It hides the
// network error from go-redis's ClusterClient, which would otherwise send
// the command again; locks.Outcome reads it as unknown (info).
type OutcomeUnknownError struct {
	Node string // the node as announced ("" when not known)
	Msg  string
}

func (e *OutcomeUnknownError) Error() string {
	if e.Node == "" {
		return "outcome unknown: " + e.Msg
	}
	return "outcome unknown on " + e.Node + ": " + e.Msg
}

// noRetryHook turns a node client's network errors into
// OutcomeUnknownError. Redis's replies (MOVED, ASK, nil, errors),
// a closed client, a context's end and a failed dial (nothing was sent)
// pass as they are, so redirects are still followed.
type noRetryHook struct{ node string }

func (noRetryHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h noRetryHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if unknownOutcome(err) {
			err = &OutcomeUnknownError{Node: h.node, Msg: err.Error()}
			cmd.SetErr(err)
		}
		return err
	}
}

func (h noRetryHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func unknownOutcome(err error) bool {
	if err == nil || errors.Is(err, redis.ErrClosed) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var re redis.Error
	if errors.As(err, &re) {
		return false
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return false
	}
	return true
}

// linkNet is a set of links as a sut.Network.
type linkNet map[string]*local.Link

func (n linkNet) Links() []sut.Link {
	names := make([]string, 0, len(n))
	for k := range n {
		names = append(names, k)
	}
	sort.Strings(names)
	out := make([]sut.Link, len(names))
	for i, k := range names {
		out[i] = n[k]
	}
	return out
}

func (n linkNet) Link(from, to string) (sut.Link, error) {
	l := n[sut.LinkName(from, to)]
	if l == nil {
		return nil, fmt.Errorf("no link %s in this topology", sut.LinkName(from, to))
	}
	return l, nil
}
