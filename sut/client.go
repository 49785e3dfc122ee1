package sut

import (
	"time"

	"github.com/redis/go-redis/v9"
)

// ClientNode is one server as a lock client sees it: through its own link
// (a proxy), under a stable name used in errors and in the history. A
// deployment hands each client slot its own (Deployment.ClientNodes); the
// locks (package locks) are built over them.
type ClientNode struct {
	Name string
	// Addr is the host:port this client dials to reach the node: its own
	// link. A lock for a system other than Redis builds its own client
	// library's connection from the nodes' addresses (all of them, for a
	// consensus group), so the client still goes through its own links.
	Addr string
	// Client is a go-redis client dialing Addr (or following a replicated
	// Redis master); nil for the nodes of a system other than Redis.
	Client redis.UniversalClient
	// Timeout bounds one request of a lock that dials its own client (the
	// go-redis Client carries its own); 0 leaves it to the lock.
	Timeout time.Duration
}

// ClientOptions are the settings every harness client uses: the go-redis
// clients a Redis deployment builds, and the per-request timeout a lock
// of another system dials with.
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

// AddressNodes are endpoints as a lock of another system than Redis dials
// them: an address and the per-request timeout, no Redis client.
func AddressNodes(eps []Endpoint, o ClientOptions) []ClientNode {
	o = o.WithDefaults()
	out := make([]ClientNode, 0, len(eps))
	for _, ep := range eps {
		out = append(out, ClientNode{Name: ep.Node, Addr: ep.Addr, Timeout: o.Timeout})
	}
	return out
}

// CloseClientNodes closes the go-redis clients of nodes (the nodes of
// another system have none: their lock closes its own client).
func CloseClientNodes(nodes []ClientNode) {
	for _, n := range nodes {
		if n.Client != nil {
			_ = n.Client.Close()
		}
	}
}
