package adapter

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/sut/systems"
)

// Deployer starts a deployment of system with nodes nodes and clients
// client slots, healthy, for a conformance run; Down stops it.
type Deployer func(ctx context.Context, system string, nodes, clients int) (sut.Deployment, error)

// LocalDeployer starts system's local backend, as a run does
// (sut/systems): real servers as processes, every client through its own
// links.
func LocalDeployer(ctx context.Context, system string, nodes, clients int) (sut.Deployment, error) {
	s, err := systems.Builtin().Lookup(system)
	if err != nil {
		return nil, err
	}
	cfg := sut.Config{Nodes: nodes, Clients: clients}
	if err := s.Check(cfg.WithDefaults()); err != nil {
		return nil, err
	}
	return s.Local(ctx, cfg)
}

// conformSystem is what a conformance run needs to know of the system an
// adapter locks on.
type conformSystem struct {
	// nodes is the deployment's size when the adapter asks fewer.
	nodes int
	// ttl is the lease asked for.
	ttl time.Duration
	// session: a lease lasts as long as the client's session (ZooKeeper's
	// ephemeral nodes); its validity is a lower bound, not an expiry, so
	// the expiry checks become session checks.
	session bool
	// expiryGrace is how long after a lease's validity the server may take
	// to free the key (etcd revokes expired leases every 500ms).
	expiryGrace time.Duration
}

// conformSystems are the systems `harness adapter check` starts.
var conformSystems = map[string]conformSystem{
	locks.SystemRedis: {nodes: 1, ttl: time.Second},
	// etcd grants leases of whole seconds, and raises a TTL below its
	// minimum: 2s is granted as asked.
	locks.SystemEtcd: {nodes: 1, ttl: 2 * time.Second, expiryGrace: time.Second},
	// Three servers: a leader and followers, as a user runs them; a 2s
	// session rides out a loaded machine's JVM pauses.
	locks.SystemZooKeeper: {nodes: 3, ttl: 2 * time.Second, session: true},
}

// systemFor is what Conform knows of spec's system.
func systemFor(spec Spec) (conformSystem, error) {
	s, ok := conformSystems[spec.System]
	if !ok {
		known := make([]string, 0, len(conformSystems))
		for k := range conformSystems {
			known = append(known, k)
		}
		slices.Sort(known)
		return s, fmt.Errorf("adapter check starts %s; this adapter is for %s", strings.Join(known, ", "), spec.System)
	}
	return s, nil
}

// graceWords says how long the expiry check waited for the server.
func (s conformSystem) graceWords() string {
	if s.expiryGrace == 0 {
		return ""
	}
	return fmt.Sprintf(" (within %v: the server frees expired leases periodically)", s.expiryGrace)
}

// deploy starts the adapter's system with three client slots (two
// clients and the session check's third) and sets opts.Nodes.
func (c *conformance) deploy() error {
	deployer := c.opts.Deploy
	if deployer == nil {
		deployer = LocalDeployer
	}
	n := max(c.spec.MinNodes, c.sys.nodes)
	if c.spec.MaxNodes >= c.spec.MinNodes {
		n = min(n, c.spec.MaxNodes)
	}
	d, err := deployer(c.ctx, c.spec.System, n, 3)
	if err != nil {
		return fmt.Errorf("starting %s (%d nodes) to check against: %w", c.spec.System, n, err)
	}
	var mu sync.Mutex
	views := map[int][]sut.ClientNode{}
	c.opts.Nodes = func(slot int) []sut.ClientNode {
		mu.Lock()
		defer mu.Unlock()
		if views[slot] == nil {
			views[slot] = d.ClientNodes(slot, sut.ClientOptions{})
		}
		return views[slot]
	}
	c.stop = func() {
		for _, v := range views {
			sut.CloseClientNodes(v)
		}
		_ = d.Down()
	}
	return nil
}

// sessions replaces the expiry checks for a lock whose lease is its
// client's session: held past its validity, the lease is still the
// holder's while the holder lives, and it ends when the holder dies and
// the servers expire its session.
func (c *conformance) sessions() {
	c.sessionOutlivesValidity()
	c.sessionEndsWithHolder()
}

func (c *conformance) sessionOutlivesValidity() {
	k := c.key()
	now := time.Now()
	la, err := c.acquire(c.a, k, 0)
	if !c.check("a session lease is granted", c.leaseErr(la, err, now)) {
		return
	}
	sleep(c.ctx, time.Until(la.ValidUntil)+500*time.Millisecond)
	_, err = c.acquire(c.b, k, 0)
	c.check("past its validity, a live session's lease is still refused to another client (fail)", want(err, locks.ErrNotAcquired, "fail (not acquired)"))
	if r, ok := c.a.(locks.Renewer); ok {
		now = time.Now()
		lr, err := r.Renew(c.ctx, la)
		c.check("the live session's holder renews past the validity, with validity", c.leaseErr(lr, c.sound(c.a, err), now))
	}
	c.check("the holder's release is ok", c.sound(c.a, c.a.Release(c.ctx, la)))
}

// sessionEndsWithHolder kills a third client holding a key: a waiter is
// granted it once the servers expire the dead client's session, and not
// before the session could have expired (half its validity: the client
// was heard from at most a third of the timeout before it died).
func (c *conformance) sessionEndsWithHolder() {
	lc, err := c.client(2)
	if !c.check("a third client starts (its holder will die)", err) {
		return
	}
	defer func() { _ = lc.(locks.Closer).Close() }()
	k := c.key()
	now := time.Now()
	l, err := c.acquire(lc, k, 0)
	if !c.check("the third client is granted a key", c.leaseErr(l, err, now)) {
		return
	}
	validity := l.ValidUntil.Sub(now)
	killed := time.Now()
	if p, ok := lc.(locks.Process); ok {
		err = p.Kill()
	}
	if !c.check("the holder's process is killed (SIGKILL, nothing released)", err) {
		return
	}
	lb, err := c.acquire(c.b, k, validity+5*time.Second)
	took := time.Since(killed)
	if err == nil && took < validity/2 {
		err = fmt.Errorf("granted %v after the holder died, before its session (validity %v) could have expired", took.Round(time.Millisecond), validity.Round(time.Millisecond))
	}
	name := fmt.Sprintf("a dead holder's key goes to a waiter once its session expires (%v after the kill)", took.Round(100*time.Millisecond))
	if c.check(name, c.leaseErr(lb, err, time.Now())) {
		c.check("the new holder's release is ok", c.sound(c.b, c.b.Release(c.ctx, lb)))
	}
}

// maxStoredScan bounds what the stored checks read of a server.
const maxStoredScan = 5000

// zkStored checks that a znode whose path names k exists in the
// ensemble the nodes reach.
func zkStored(ctx context.Context, nodes []sut.ClientNode, k string) error {
	conn, _, err := zk.Connect(addrs(nodes), 5*time.Second, zk.WithLogInfo(false))
	if err != nil {
		return fmt.Errorf("asking the ensemble: %w", err)
	}
	defer conn.Close()
	queue, seen := []string{"/"}, 0
	for len(queue) > 0 && seen < maxStoredScan && ctx.Err() == nil {
		p := queue[0]
		queue = queue[1:]
		seen++
		if strings.Contains(p, k) {
			return nil
		}
		kids, _, err := conn.Children(p)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return fmt.Errorf("asking the ensemble for the children of %s: %w", p, err)
		}
		for _, kid := range kids {
			queue = append(queue, strings.TrimSuffix(p, "/")+"/"+kid)
		}
	}
	return notStored(nodes, k)
}

// etcdStored checks that a key naming k exists in the etcd group the
// nodes reach.
func etcdStored(ctx context.Context, nodes []sut.ClientNode, k string) error {
	cli, err := clientv3.New(clientv3.Config{Endpoints: addrs(nodes), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return fmt.Errorf("asking etcd: %w", err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, "\x00", clientv3.WithFromKey(), clientv3.WithKeysOnly(), clientv3.WithLimit(maxStoredScan))
	if err != nil {
		return fmt.Errorf("asking etcd: %w", err)
	}
	for _, kv := range resp.Kvs {
		if strings.Contains(string(kv.Key), k) {
			return nil
		}
	}
	return notStored(nodes, k)
}

func notStored(nodes []sut.ClientNode, k string) error {
	return fmt.Errorf("the servers at %v hold nothing named %s while its lock is held: the adapter must dial the addresses init gives it (they are the client's own links)", addrs(nodes), k)
}

func addrs(nodes []sut.ClientNode) []string {
	out := make([]string, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, n.Addr)
	}
	return out
}
