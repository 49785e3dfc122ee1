package docker

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockharness/lockharness/cluster"
	"github.com/lockharness/lockharness/deploy"
	"github.com/lockharness/lockharness/locks"
)

// ClientNodes returns the lock nodes as client slot cl reaches them, each
// with its own go-redis client through that client's proxies, with the
// harness's client settings (no retries). A replicated topology has one
// lock node, cluster.MasterNodeName: with Sentinel, go-redis's failover
// client asks the sentinels through the client's links and reaches the
// master they name (an address on the gateway) through the client's own
// link to it; with manual failover it dials the master the harness set
// (SetPrimary), and SetPrimary closes its connections so the next command
// dials the new one. The caller closes them (cluster.CloseNodes).
func (d *Deployment) ClientNodes(cl int, o cluster.ClientOptions) []locks.Node {
	if d.cfg.Topology != cluster.Replicated {
		var out []locks.Node
		for _, ep := range d.Endpoints(cl) {
			out = append(out, locks.Node{Name: ep.Node, Client: cluster.NewRedisClient(ep.Addr, o)})
		}
		return out
	}
	o = o.WithDefaults()
	from := deploy.ClientName(cl)
	if len(d.Sentinels) > 0 {
		var addrs []string
		for _, s := range d.Sentinels {
			if a, err := d.ClientAddr(cl, s.name); err == nil {
				addrs = append(addrs, a)
			}
		}
		dial := AnnounceDialer(d.Announced(), func(name string) (string, bool) {
			l := d.links[cluster.LinkName(from, name)]
			if l == nil {
				return "", false
			}
			return l.Addr(), true
		}, o.Timeout)
		return []locks.Node{{Name: cluster.MasterNodeName, Client: FailoverClient(cluster.MasterName, addrs, dial, o)}}
	}
	md := &masterDialer{d: d, from: from, timeout: o.Timeout, conns: map[net.Conn]struct{}{}}
	d.mu.Lock()
	d.dialers = append(d.dialers, md)
	d.mu.Unlock()
	return []locks.Node{{Name: cluster.MasterNodeName, Client: redis.NewClient(&redis.Options{
		Addr:            cluster.MasterNodeName + ":0",
		Dialer:          md.dial,
		DialTimeout:     o.Timeout,
		ReadTimeout:     o.Timeout,
		WriteTimeout:    o.Timeout,
		MaxRetries:      -1,
		DialerRetries:   1,
		PoolSize:        o.PoolSize,
		PoolTimeout:     o.Timeout,
		MinRetryBackoff: -1,
		MaxRetryBackoff: -1,
	})}}
}

// AnnounceDialer dials, for an address the topology hands out (Sentinel's
// answer for the master, a sentinel's own address), the client's own link
// to that node instead: announced maps such addresses to node names,
// linkAddr gives the client's link to a node.
func AnnounceDialer(announced map[string]string, linkAddr func(node string) (string, bool), timeout time.Duration) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if name, ok := announced[addr]; ok {
			if a, ok := linkAddr(name); ok {
				addr = a
			}
		}
		nd := net.Dialer{Timeout: timeout}
		return nd.DialContext(ctx, network, addr)
	}
}

// FailoverClient is go-redis's Sentinel client with the harness's settings
// (no retries: a command whose reply was lost is info, never run twice).
func FailoverClient(masterName string, sentinels []string, dial func(ctx context.Context, network, addr string) (net.Conn, error), o cluster.ClientOptions) *redis.Client {
	o = o.WithDefaults()
	return redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName:      masterName,
		SentinelAddrs:   sentinels,
		Dialer:          dial,
		DialTimeout:     o.Timeout,
		ReadTimeout:     o.Timeout,
		WriteTimeout:    o.Timeout,
		MaxRetries:      -1,
		DialerRetries:   1,
		PoolSize:        o.PoolSize,
		PoolTimeout:     o.Timeout,
		MinRetryBackoff: -1,
		MaxRetryBackoff: -1,
	})
}

// masterDialer dials the client's link to the master the harness set, and
// remembers its connections so a failover can close them.
type masterDialer struct {
	d       *Deployment
	from    string
	timeout time.Duration

	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

func (m *masterDialer) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	primary := m.d.Primary()
	l := m.d.links[cluster.LinkName(m.from, primary)]
	if l == nil {
		return nil, fmt.Errorf("dial master: no link from %s to %s", m.from, primary)
	}
	nd := net.Dialer{Timeout: m.timeout}
	c, err := nd.DialContext(ctx, "tcp", l.Addr())
	if err != nil {
		return nil, err
	}
	tc := &trackedConn{Conn: c, m: m}
	m.mu.Lock()
	m.conns[tc] = struct{}{}
	m.mu.Unlock()
	return tc, nil
}

func (m *masterDialer) closeAll() {
	m.mu.Lock()
	var cs []net.Conn
	for c := range m.conns {
		cs = append(cs, c)
	}
	m.mu.Unlock()
	for _, c := range cs {
		_ = c.Close()
	}
}

type trackedConn struct {
	net.Conn
	m    *masterDialer
	once sync.Once
}

func (t *trackedConn) Close() error {
	t.once.Do(func() {
		t.m.mu.Lock()
		delete(t.m.conns, t)
		t.m.mu.Unlock()
	})
	return t.Conn.Close()
}
