package cluster

import (
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockharness/lockharness/locks"
)

// ClientOptions are the go-redis settings every harness client uses.
type ClientOptions struct {
	// Timeout bounds dialing, reading and writing one command. A command
	// that runs out of it has an unknown outcome (info).
	Timeout time.Duration
	// PoolSize is the number of connections per node (default 4).
	PoolSize int
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

// NewRedisClient returns a go-redis client for addr with the harness's
// settings. Retries are disabled (MaxRetries -1): go-redis retries a command
// whose reply was lost, which executes a write twice; the harness records
// such a command as info instead.
func NewRedisClient(addr string, o ClientOptions) *redis.Client {
	o = o.WithDefaults()
	return redis.NewClient(&redis.Options{
		Addr:            addr,
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

// ClientNodes returns the lock nodes as client slot cl reaches them, each
// with its own go-redis client dialing that client's proxy. The caller
// closes the clients (CloseNodes).
func (c *Cluster) ClientNodes(cl int, o ClientOptions) []locks.Node {
	eps := c.Endpoints(cl)
	nodes := make([]locks.Node, 0, len(eps))
	for _, ep := range eps {
		nodes = append(nodes, locks.Node{Name: ep.Node, Client: NewRedisClient(ep.Addr, o)})
	}
	return nodes
}

// CloseNodes closes the clients of nodes.
func CloseNodes(nodes []locks.Node) {
	for _, n := range nodes {
		_ = n.Client.Close()
	}
}
