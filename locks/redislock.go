package locks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bsm/redislock"

	"github.com/lockharness/lockharness/sut"
)

var redislockInfo = Info{
	Name:        "redislock",
	Description: "bsm/redislock on one node: Obtain with a caller token (SET NX PX in Lua), Release and Refresh compare the token",
	MaxNodes:    1,
	New:         newRedislock,
}

// redislockLock adapts github.com/bsm/redislock. The library hands out a
// *redislock.Lock per grant, which Release and Refresh need; the adapter
// keeps them by token. A lease it did not hand out (another client's, or one
// whose Obtain had an unknown outcome) is released and refreshed with the
// same compare-token scripts the library uses.
type redislockLock struct {
	node   sut.ClientNode
	opts   Options
	client *redislock.Client
	held   map[string]grant // by token
}

// grant is one lock the library handed out.
type grant struct {
	lk         *redislock.Lock
	validUntil time.Time
}

func newRedislock(nodes []sut.ClientNode, opts Options) (Lock, error) {
	if len(nodes) != 1 {
		return nil, fmt.Errorf("redislock lock needs exactly 1 node, got %d", len(nodes))
	}
	return &redislockLock{
		node: nodes[0], opts: opts.WithDefaults(),
		client: redislock.New(nodes[0].Client),
		held:   map[string]grant{},
	}, nil
}

// untilStrategy is a redislock.RetryStrategy that retries after a random
// delay (from the seeded source) until the wait is over, and remembers the
// earliest instant the next attempt can start, which bounds its SET from
// below: the lease is measured from there.
type untilStrategy struct {
	deadline time.Time
	max      time.Duration
	opts     Options
	next     time.Time
}

func (s *untilStrategy) NextBackoff() time.Duration {
	d := time.Duration(s.opts.Rand.Int64N(int64(s.max))) + time.Millisecond
	now := time.Now()
	if now.Add(d).After(s.deadline) {
		return 0 // stop: Obtain returns ErrNotObtained
	}
	s.next = now.Add(d)
	return d
}

func (l *redislockLock) Acquire(ctx context.Context, key string, o AcquireOptions) (Lease, error) {
	lease := Lease{Key: key, Token: newToken(l.opts.Rand)}
	start := time.Now()
	s := &untilStrategy{deadline: start.Add(o.Wait), max: l.opts.RetryDelay, opts: l.opts, next: start}
	// Obtain bounds its retries by the context's deadline, or by the TTL
	// when there is none; the strategy stops first, so give it room.
	octx, cancel := context.WithDeadline(ctx, start.Add(o.Wait+l.opts.TTL))
	defer cancel()
	lk, err := l.client.Obtain(octx, key, l.opts.TTL, &redislock.Options{Token: lease.Token, RetryStrategy: s})
	if errors.Is(err, redislock.ErrNotObtained) {
		return lease, fmt.Errorf("redislock on %s: %w: %w", l.node.Name, ErrNotAcquired, err)
	}
	if err != nil {
		return lease, &NodeError{Node: l.node.Name, Op: "redislock Obtain", Err: err}
	}
	lease.ValidUntil = s.next.Add(l.opts.TTL)
	l.forgetExpired()
	l.held[lease.Token] = grant{lk: lk, validUntil: lease.ValidUntil}
	return lease, nil
}

// forgetExpired drops grants that ended long ago and were never released,
// so a client that abandons leases does not grow the map without bound.
func (l *redislockLock) forgetExpired() {
	if len(l.held) < 1024 {
		return
	}
	old := time.Now().Add(-l.opts.TTL)
	for tok, g := range l.held {
		if g.validUntil.Before(old) {
			delete(l.held, tok)
		}
	}
}

func (l *redislockLock) Release(ctx context.Context, lease Lease) error {
	g, ok := l.held[lease.Token]
	lk := g.lk
	if !ok || lk.Key() != lease.Key {
		return runCompare(ctx, l.node, compareAndDelete, "release", lease.Key, lease.Token)
	}
	delete(l.held, lease.Token)
	err := lk.Release(ctx)
	if errors.Is(err, redislock.ErrLockNotHeld) {
		return &NodeError{Node: l.node.Name, Op: "redislock Release", Err: fmt.Errorf("%w: %w", ErrNotHeld, err)}
	}
	if err != nil {
		return &NodeError{Node: l.node.Name, Op: "redislock Release", Err: err}
	}
	return nil
}

func (l *redislockLock) Renew(ctx context.Context, lease Lease) (Lease, error) {
	start := time.Now()
	g, ok := l.held[lease.Token]
	lk := g.lk
	if !ok || lk.Key() != lease.Key {
		if err := runCompare(ctx, l.node, compareAndPexpire, "renew", lease.Key, lease.Token, l.opts.TTL.Milliseconds()); err != nil {
			return lease, err
		}
		lease.ValidUntil = start.Add(l.opts.TTL)
		return lease, nil
	}
	err := lk.Refresh(ctx, l.opts.TTL, nil)
	if errors.Is(err, redislock.ErrNotObtained) {
		return lease, &NodeError{Node: l.node.Name, Op: "redislock Refresh", Err: fmt.Errorf("%w: %w", ErrNotHeld, err)}
	}
	if err != nil {
		return lease, &NodeError{Node: l.node.Name, Op: "redislock Refresh", Err: err}
	}
	lease.ValidUntil = start.Add(l.opts.TTL)
	l.held[lease.Token] = grant{lk: lk, validUntil: lease.ValidUntil}
	return lease, nil
}
