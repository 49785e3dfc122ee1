package redis

import (
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/lockharness/lockharness/sut"
)

// Options are the harness's go-redis settings for addr. Retries are
// disabled (MaxRetries -1): go-redis retries a command whose reply was lost,
// which executes a write twice; the harness records such a command as info
// instead.
func Options(o sut.ClientOptions, addr string) *redis.Options {
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
// settings (retries disabled, see sut.ClientOptions).
func NewRedisClient(addr string, o sut.ClientOptions) *redis.Client {
	return redis.NewClient(Options(o, addr))
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
func (c *Cluster) ClientNodes(cl int, o sut.ClientOptions) []sut.ClientNode {
	if c.Replicated() {
		return []sut.ClientNode{{Name: MasterNodeName, Client: c.masterClient(cl, o)}}
	}
	eps := c.Endpoints(cl)
	nodes := make([]sut.ClientNode, 0, len(eps))
	for _, ep := range eps {
		nodes = append(nodes, sut.ClientNode{Name: ep.Node, Addr: ep.Addr, Client: NewRedisClient(ep.Addr, o)})
	}
	return nodes
}

func (c *Cluster) masterClient(cl int, o sut.ClientOptions) *redis.Client {
	o = o.WithDefaults()
	from := fmt.Sprintf("c%d", cl)
	if len(c.Sentinels) > 0 {
		var addrs []string
		for _, s := range c.Sentinels {
			if l := c.links[sut.LinkName(from, s.Name)]; l != nil {
				addrs = append(addrs, l.Addr())
			}
		}
		return NewFailoverClient(MasterName, addrs, AnnounceDialer(func(addr string) (string, bool) {
			c.mu.Lock()
			defer c.mu.Unlock()
			if l := c.links[sut.LinkName(from, c.announce[addr])]; l != nil {
				return l.Addr(), true
			}
			return "", false
		}, o.Timeout), o)
	}
	d := NewMasterDialer(func() (string, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		if l := c.links[sut.LinkName(from, c.master)]; l != nil {
			return l.Addr(), nil
		}
		return "", fmt.Errorf("no link from %s to %s", from, c.master)
	}, o.Timeout)
	c.mu.Lock()
	c.dialers = append(c.dialers, d)
	c.mu.Unlock()
	return NewMasterClient(d, o)
}
