// Package locks holds the distributed lock implementations under test, one
// file each, behind one small interface. Every lock reaches its servers
// through sut.ClientNode (a name, the address of the client's own link, and for Redis
// a go-redis client), the narrow seam that lets adapters for real libraries
// stay small and lets a topology put a proxy on every link. Most locks are
// for Redis; a lock for another system (Info.System: etcd, …) dials its own
// client library at the nodes' addresses.
package locks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockharness/lockharness/history"
)

// Lease is what a successful acquire hands to its holder.
type Lease struct {
	Key   string
	Token string
	// Fence is a fencing token that increases with every grant (> 0), for
	// locks that have one; 0 otherwise.
	Fence int64
	// ValidUntil is the end of the lease as the lock itself computes it (for
	// a single node: the instant before the SET was sent, plus the TTL; for
	// Redlock: start + TTL − drift). The zero time means it never expires.
	ValidUntil time.Time
	// Session is set by a lock whose lease lasts as long as the client's
	// connection to the server (no ValidUntil): the server frees it when
	// the connection ends, so a crashed client's lease ends with it.
	Session bool
	// Nodes names the nodes that granted the lease, for locks over several
	// independent nodes (in the order the lock knows them), and Quorum is
	// how many it needed; both are empty for single-node locks.
	Nodes  []string
	Quorum int
}

// Expires reports whether the lease has a deadline.
func (l Lease) Expires() bool { return !l.ValidUntil.IsZero() }

// Lock is a distributed lock under test. One Lock value belongs to one client
// process: it may keep per-client state (an owner id, a watchdog), and it is
// used by one goroutine at a time.
//
// Errors carry the outcome the history needs: ErrNotAcquired and ErrNotHeld
// (and any error wrapping them, or a Redis error reply) mean the operation
// certainly did not take effect; any other error (a timeout, a reset
// connection) means its effect is unknown. See Outcome.
type Lock interface {
	// Acquire tries to take key, waiting at most opts.Wait for it to become
	// free. On failure the returned lease still carries the token the
	// attempt used, so a caller that got an unknown outcome can release it.
	Acquire(ctx context.Context, key string, opts AcquireOptions) (Lease, error)
	// Release gives the lease up. Locks that check ownership return an error
	// wrapping ErrNotHeld when the lease is no longer theirs, and only when
	// that answer is definite for the whole lock (see ErrNotHeld).
	Release(ctx context.Context, lease Lease) error
}

// Renewer is a Lock whose leases can be extended by their holder.
type Renewer interface {
	Lock
	// Renew extends lease by the lock's TTL and returns the extended lease.
	Renew(ctx context.Context, lease Lease) (Lease, error)
}

// Closer is a Lock that owns background work (a watchdog, a subscription)
// to stop when its client is done.
type Closer interface {
	Close() error
}

// Process is a Lock whose client runs as an operating-system process of
// its own (a lock-client adapter in another language, package
// locks/adapter). The workload faults it as the process it is: a client
// pause stops the process (its runtime's GC and its renewal threads stall
// with it), a client crash kills it. In-process locks do not implement it.
type Process interface {
	// Stop suspends the process (SIGSTOP to its process group) and
	// Continue resumes it.
	Stop() error
	Continue() error
	// Kill ends the process at once (SIGKILL to its process group),
	// without releasing anything, as a crash would.
	Kill() error
	// Err is why the client can no longer be trusted (it died on its own,
	// broke the protocol), nil while it is sound. A workload stops the
	// client with this error: what it would record next is not evidence.
	Err() error
}

// AcquireOptions tunes one acquisition.
type AcquireOptions struct {
	// Wait is how long a blocking acquire may wait for the lock; zero means
	// try once.
	Wait time.Duration
	// Stop, when closed, ends the wait between two tries: the acquire
	// returns the last try's definite refusal (ErrNotAcquired) at once. A
	// workload closes it when its run ends, so that no client spends the
	// teardown waiting for a lock nobody will use; a try in flight is not
	// cut short (its outcome would become unknown). Nil never stops.
	Stop <-chan struct{}
}

// Definite outcomes.
var (
	// ErrNotAcquired: the lock is held by someone else (or the attempt
	// failed in a way that certainly left nothing behind).
	ErrNotAcquired = errors.New("lock not acquired")
	// ErrNotHeld: release or renew refused, the lease is not the caller's.
	// It is the lock's definite answer about the lease as a whole: for a
	// single node, the node ran the compare and found another token or
	// none; for a quorum lock, so many nodes did that the token cannot be
	// on a quorum (or the lock itself holds the lease for over). A refused
	// command (a Redis error reply), a timeout or a node that was never
	// asked is not "not held": the lease may live on. The checker takes
	// ErrNotHeld before the lease's deadline as proof that the lock lost
	// the lease early, so a lock must not return it on a guess.
	ErrNotHeld = errors.New("lock not held")
)

// NodeError names the node an error came from.
type NodeError struct {
	Node string
	Op   string
	Err  error
}

func (e *NodeError) Error() string { return fmt.Sprintf("%s on %s: %v", e.Op, e.Node, e.Err) }
func (e *NodeError) Unwrap() error { return e.Err }

// Outcome maps an error from a Lock (or from a Redis command) to the history
// type of the completion: ok for nil, fail when the operation certainly did
// not happen, info when its effect is unknown.
func Outcome(err error) history.Type {
	if err == nil {
		return history.OK
	}
	if errors.Is(err, ErrNotAcquired) || errors.Is(err, ErrNotHeld) {
		return history.Fail
	}
	if errors.Is(err, context.Canceled) {
		// Canceled by us: the command may or may not have reached Redis.
		return history.Info
	}
	// A Redis error reply (READONLY, NOSCRIPT, NOREPLICAS, …) means the
	// server answered and did not execute the command.
	var rerr redis.Error
	if errors.As(err, &rerr) && !errors.Is(err, redis.Nil) {
		if isDefiniteReply(rerr.Error()) {
			return history.Fail
		}
	}
	// Timeouts, resets, closed connections: unknown.
	return history.Info
}

// isDefiniteReply reports whether a Redis error reply proves the command was
// not executed. go-redis also reports some client-side conditions through
// redis.Error ("redis: client is closed", pool timeouts), which are not.
func isDefiniteReply(msg string) bool {
	if len(msg) >= 6 && msg[:6] == "redis:" {
		return false
	}
	return true
}
