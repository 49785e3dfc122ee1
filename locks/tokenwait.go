package locks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockharness/lockharness/sut"
)

var tokenWaitInfo = Info{
	Name:          "token-wait",
	Description:   "token plus WAIT 1 on the same connection: the acquire fails unless a replica acknowledged the SET",
	MaxNodes:      1,
	NeedsReplicas: true,
	New:           newTokenWaitLock,
}

// tokenWaitLock is the token lock that asks for the grant to reach a replica
// before believing it, so that a failover to that replica keeps the lock.
// WAIT is not a transaction: a SET no replica acknowledged stays on the
// master (and may reach a replica later); the lock deletes it and says no.
type tokenWaitLock struct {
	tokenLock
	waitTimeout time.Duration
}

func newTokenWaitLock(nodes []sut.ClientNode, opts Options) (Lock, error) {
	if len(nodes) != 1 {
		return nil, fmt.Errorf("token-wait lock needs exactly 1 node, got %d", len(nodes))
	}
	opts = opts.WithDefaults()
	return &tokenWaitLock{tokenLock: tokenLock{node: nodes[0], opts: opts}, waitTimeout: waitTimeout(opts.TTL)}, nil
}

// waitTimeout is how long WAIT may block: a tenth of the TTL, so that most of
// the lease is left when it returns, between 10ms (a replica on loopback
// acknowledges within a millisecond or two) and 250ms (the SET and the WAIT
// share one pipeline read, bounded by the client's read timeout, 500ms for
// harness clients). It was 100ms at most until a soak on a machine loaded
// far past its two cores had a replica take longer to acknowledge: the
// lock then, rightly, refused, but the scenario that needed it to grant
// (failover-wait-wrong-replica) lost its second holder's write.
func waitTimeout(ttl time.Duration) time.Duration {
	return min(max(ttl/10, 10*time.Millisecond), 250*time.Millisecond)
}

func (l *tokenWaitLock) Acquire(ctx context.Context, key string, o AcquireOptions) (Lease, error) {
	return retry(ctx, o, l.opts.RetryDelay, l.opts.Rand, func() (Lease, error) {
		return l.try(ctx, key)
	})
}

func (l *tokenWaitLock) try(ctx context.Context, key string) (Lease, error) {
	lease := Lease{Key: key, Token: newToken(l.opts.Rand)}
	// WAIT counts the replicas that acknowledged this connection's writes,
	// so it must follow the SET on the same connection: one pipeline.
	pipe := l.node.Client.Pipeline()
	set := pipe.Do(ctx, "set", key, lease.Token, "px", l.opts.TTL.Milliseconds(), "nx")
	wait := pipe.Do(ctx, "wait", 1, l.waitTimeout.Milliseconds())
	start := time.Now()
	_, _ = pipe.Exec(ctx) // each command carries its own error
	if err := set.Err(); errors.Is(err, redis.Nil) {
		return lease, ErrNotAcquired
	} else if err != nil {
		return lease, &NodeError{Node: l.node.Name, Op: "SET NX PX", Err: err}
	}
	acked, err := wait.Int64()
	if err == nil && acked >= 1 {
		lease.ValidUntil = start.Add(l.opts.TTL)
		return lease, nil
	}
	why := fmt.Errorf("no replica acknowledged within %v", l.waitTimeout)
	if err != nil {
		why = &NodeError{Node: l.node.Name, Op: "WAIT", Err: err}
	}
	return lease, l.undo(ctx, lease, why)
}

// undo deletes a grant the lock will not hand out. The outcome is definite
// (ErrNotAcquired) only when the token is certainly gone from the master:
// the delete ran, or found another token (ours expired). If the delete's
// outcome is unknown, so is the acquire's: the token may live on until its
// TTL and, through a failover, on a promoted replica; the lease carries the
// token so the caller can try to release it again.
func (l *tokenWaitLock) undo(ctx context.Context, lease Lease, why error) error {
	err := runCompare(ctx, l.node, compareAndDelete, "release", lease.Key, lease.Token)
	if err == nil || errors.Is(err, ErrNotHeld) {
		return fmt.Errorf("%w on %s: %w; the SET was undone", ErrNotAcquired, l.node.Name, why)
	}
	return fmt.Errorf("token-wait acquire %q on %s: %v, and undoing the SET failed: %v (outcome unknown)", lease.Key, l.node.Name, why, err)
}
