package redis

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/sut"
)

// ClientOptions are the go-redis settings every harness client uses.
type ClientOptions struct {
	// Timeout bounds dialing, reading and writing one command. A command
	// that runs out of it has an unknown outcome (info).
	Timeout time.Duration
	// PoolSize is the number of connections per node (default 4).
	PoolSize int
	// MaxRetries, when positive, lets go-redis retry a command that failed
	// on a network error or a timeout that many times (a lock client's
	// retry option); zero keeps retries off, the harness's default.
	MaxRetries int
}

// WithDefaults fills in unset fields.
func (o ClientOptions) WithDefaults() ClientOptions {
	if o.Timeout == 0 {
		o.Timeout = 500 * time.Millisecond
	}
	if o.PoolSize == 0 {
		o.PoolSize = 4
	}
	return o
}

// options are the harness's go-redis settings for addr. Retries are
// disabled (MaxRetries -1): go-redis retries a command whose reply was lost,
// which executes a write twice; the harness records such a command as info
// instead.
func (o ClientOptions) options(addr string) *redis.Options {
	o = o.WithDefaults()
	retries := -1
	if o.MaxRetries > 0 {
		retries = o.MaxRetries
	}
	return &redis.Options{
		Addr:            addr,
		DialTimeout:     o.Timeout,
		ReadTimeout:     o.Timeout,
		WriteTimeout:    o.Timeout,
		MaxRetries:      retries,
		DialerRetries:   1,
		PoolSize:        o.PoolSize,
		PoolTimeout:     o.Timeout,
		MinRetryBackoff: -1,
		MaxRetryBackoff: -1,
	}
}

// NewRedisClient returns a go-redis client for addr with the harness's
// settings (retries disabled, see ClientOptions).
func NewRedisClient(addr string, o ClientOptions) *redis.Client {
	return redis.NewClient(o.options(addr))
}

// MasterNodeName is the name of the one lock node of a replicated topology:
// whichever server is master at the moment.
const MasterNodeName = "master"

// ClientNodes returns the lock nodes as client slot cl reaches them, each
// with its own go-redis client dialing that client's proxy. The caller
// closes the clients (CloseNodes).
//
// A replicated topology has one lock node, named MasterNodeName, whose
// client follows the master: with Sentinel it is go-redis's failover client
// asking the sentinels (through the client's links to them) and reaching
// the node they name through the client's link to it; with manual failover
// it dials the master the harness set (SetPrimary) through the client's link.
func (c *Cluster) ClientNodes(cl int, o ClientOptions) []locks.Node {
	if c.Replicated() {
		return []locks.Node{{Name: MasterNodeName, Client: c.masterClient(cl, o)}}
	}
	eps := c.Endpoints(cl)
	nodes := make([]locks.Node, 0, len(eps))
	for _, ep := range eps {
		nodes = append(nodes, locks.Node{Name: ep.Node, Addr: ep.Addr, Client: NewRedisClient(ep.Addr, o)})
	}
	return nodes
}

func (c *Cluster) masterClient(cl int, o ClientOptions) *redis.Client {
	o = o.WithDefaults()
	from := fmt.Sprintf("c%d", cl)
	if len(c.Sentinels) > 0 {
		var addrs []string
		for _, s := range c.Sentinels {
			if l := c.links[LinkName(from, s.Name)]; l != nil {
				addrs = append(addrs, l.Addr())
			}
		}
		return NewFailoverClient(MasterName, addrs, AnnounceDialer(func(addr string) (string, bool) {
			c.mu.Lock()
			defer c.mu.Unlock()
			if l := c.links[LinkName(from, c.announce[addr])]; l != nil {
				return l.Addr(), true
			}
			return "", false
		}, o.Timeout), o)
	}
	d := NewMasterDialer(func() (string, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		if l := c.links[LinkName(from, c.master)]; l != nil {
			return l.Addr(), nil
		}
		return "", fmt.Errorf("no link from %s to %s", from, c.master)
	}, o.Timeout)
	c.mu.Lock()
	c.dialers = append(c.dialers, d)
	c.mu.Unlock()
	return NewMasterClient(d, o)
}

// CloseNodes closes the go-redis clients of nodes (the nodes of another
// system have none: their lock closes its own client).
func CloseNodes(nodes []locks.Node) {
	for _, n := range nodes {
		if n.Client != nil {
			_ = n.Client.Close()
		}
	}
}

// Deployment is a deployment behind the seam: what the nemeses see
// (sut.Deployment) and the lock nodes the locks use. *Cluster, the
// local-process Redis backend, is one; another backend (Docker containers,
// a deployment the user runs, another system such as etcd) is another.
// Whatever the system, StorageAddr is a Redis server: the protected
// resource lives there.
type Deployment interface {
	sut.Deployment
	// ClientNodes returns the lock nodes as client slot cl reaches them,
	// through that client's links (Addr); for Redis each with its own
	// go-redis client, which the caller closes (CloseNodes). A system
	// other than Redis gives addresses only (and o.Timeout as Timeout).
	ClientNodes(cl int, o ClientOptions) []locks.Node
}

// Backend starts a deployment from a topology config (for a system other
// than Redis, the fields that apply: Nodes, Clients, Dir, Faketime). Up is
// the local-process Redis one.
type Backend func(ctx context.Context, cfg Config) (Deployment, error)

// Local is the local-process Backend: Up.
func Local(ctx context.Context, cfg Config) (Deployment, error) {
	if cfg.Topology == RedisCluster {
		rc, err := UpRedisCluster(ctx, cfg)
		if err != nil {
			return nil, err
		}
		return rc, nil
	}
	c, err := Up(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return c, nil
}

var _ Deployment = (*Cluster)(nil)
