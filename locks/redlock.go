package locks

import (
	"context"
	"fmt"
	"time"
)

// Redlock failpoints.
const (
	// FailpointAfterMajority fires once a majority of nodes granted the
	// lock, before the validity check: a pause there past the TTL must make
	// the check refuse the lock.
	FailpointAfterMajority = "after-majority"
	// FailpointAfterValidityCheck fires after the check passed, before
	// Acquire returns.
	FailpointAfterValidityCheck = "after-validity-check"
)

var redlockInfo = Info{
	Name:        "redlock",
	Description: "Redlock over N independent masters: quorum N/2+1 within a per-node timeout, validity = TTL − elapsed − drift, release on all nodes",
	MinNodes:    1,
	Failpoints:  []string{FailpointAfterMajority, FailpointAfterValidityCheck},
	New:         newRedlock,
}

// redlock is the algorithm of the redis.io distlock page: the same key and
// random token on every node, each with a short timeout, granted when a
// majority said yes and time is left on the lease. Its safety rests on the
// nodes' clocks and on the client noticing that it took too long; the
// harness tests both.
type redlock struct {
	nodes       []Node
	opts        Options
	quorum      int
	nodeTimeout time.Duration
	drift       time.Duration
}

func newRedlock(nodes []Node, opts Options) (Lock, error) {
	if len(nodes) < 1 {
		return nil, fmt.Errorf("redlock needs at least 1 node, got 0")
	}
	opts = opts.WithDefaults()
	return &redlock{
		nodes: nodes, opts: opts,
		quorum:      len(nodes)/2 + 1,
		nodeTimeout: RedlockNodeTimeout(opts.TTL),
		drift:       RedlockDrift(opts.TTL),
	}, nil
}

// RedlockNodeTimeout is how long Redlock waits for one node: a twentieth of
// the TTL (redsync's default timeout factor, 0.05; the distlock page asks for
// a timeout "much smaller" than the TTL, 5–50 ms for 10 s), at least 10ms so
// that a loaded machine's scheduling does not count as a dead node. Nodes are
// asked in parallel, so a grant leaves at least ~95% of the TTL.
func RedlockNodeTimeout(ttl time.Duration) time.Duration {
	return max(ttl/20, 10*time.Millisecond)
}

// RedlockDrift is the clock drift Redlock allows for: 1% of the TTL plus
// 2ms for the granularity of Redis expiry.
func RedlockDrift(ttl time.Duration) time.Duration {
	return ttl/100 + 2*time.Millisecond
}

func (l *redlock) Acquire(ctx context.Context, key string, o AcquireOptions) (Lease, error) {
	return retry(ctx, o.Wait, l.opts.RetryDelay, l.opts.Rand, func() (Lease, error) {
		return l.try(ctx, key)
	})
}

func (l *redlock) try(ctx context.Context, key string) (Lease, error) {
	lease := Lease{Key: key, Token: newToken(l.opts.Rand)}
	start := time.Now()
	sets := onAll(ctx, l.nodes, l.nodeTimeout, "SET NX PX", func(ctx context.Context, n Node) error {
		_, err := setNXPX(ctx, n, key, lease.Token, l.opts.TTL)
		return err
	})
	granted, _, _ := count(sets)
	reason := fmt.Sprintf("no quorum: %d of %d nodes granted", granted, len(l.nodes))
	if granted >= l.quorum {
		if err := l.opts.failpoint(ctx, FailpointAfterMajority); err != nil {
			return lease, err
		}
		elapsed := time.Since(start)
		validity := l.opts.TTL - elapsed - l.drift
		if validity > 0 {
			lease.ValidUntil = start.Add(l.opts.TTL - l.drift)
			lease.Nodes, lease.Quorum = grantedBy(sets), l.quorum
			if err := l.opts.failpoint(ctx, FailpointAfterValidityCheck); err != nil {
				return lease, err
			}
			return lease, nil
		}
		reason = fmt.Sprintf("validity expired: %d of %d nodes granted in %v, TTL %v, drift %v", granted, len(l.nodes), elapsed.Round(time.Microsecond), l.opts.TTL, l.drift)
	}
	return lease, l.undo(ctx, lease, sets, reason)
}

// undo releases a refused grant on every node. The acquire's outcome is
// definite unless our token may still be on a quorum of nodes: a node whose
// SET was granted or unknown, and whose release did not answer (or, for an
// unknown SET, did not find our token: the SET may still be on its way).
func (l *redlock) undo(ctx context.Context, lease Lease, sets []NodeResult, reason string) error {
	rels := l.releaseAll(ctx, lease)
	left := 0
	nodes := make([]NodeResult, len(sets))
	for i, s := range sets {
		nodes[i] = s
		r := rels[i]
		switch {
		case s.Result == Refused:
		case r.Result == Done:
		case s.Result == Done && r.Result == Refused:
		default:
			left++
		}
	}
	e := &QuorumError{Op: "acquire", Key: lease.Key, Quorum: l.quorum, Nodes: nodes, Reason: reason + "; released on all nodes"}
	if left < l.quorum {
		e.Definite = ErrNotAcquired
	} else {
		e.Reason += fmt.Sprintf("; the token may remain on %d nodes", left)
	}
	return e
}

func (l *redlock) releaseAll(ctx context.Context, lease Lease) []NodeResult {
	return onAll(ctx, l.nodes, l.nodeTimeout, "release", func(ctx context.Context, n Node) error {
		return runCompare(ctx, n, compareAndDelete, "release", lease.Key, lease.Token)
	})
}

// Release deletes the token on every node. It succeeds when a quorum
// deleted it, is refused (ErrNotHeld) when a quorum cannot have, and is
// unknown otherwise.
func (l *redlock) Release(ctx context.Context, lease Lease) error {
	return l.quorumResult("release", lease.Key, l.releaseAll(ctx, lease), "", ErrNotHeld)
}

// Renew extends the token on every node; like an acquire, it counts only
// with a quorum and time left: ValidUntil = start + TTL − drift.
func (l *redlock) Renew(ctx context.Context, lease Lease) (Lease, error) {
	start := time.Now()
	rs := onAll(ctx, l.nodes, l.nodeTimeout, "renew", func(ctx context.Context, n Node) error {
		return runCompare(ctx, n, compareAndPexpire, "renew", lease.Key, lease.Token, l.opts.TTL.Milliseconds())
	})
	if err := l.quorumResult("renew", lease.Key, rs, "", ErrNotHeld); err != nil {
		return lease, err
	}
	if elapsed := time.Since(start); l.opts.TTL-elapsed-l.drift <= 0 {
		return lease, l.quorumResult("renew", lease.Key, rs, fmt.Sprintf("validity expired: renewed in %v", elapsed), ErrNotHeld)
	}
	lease.ValidUntil = start.Add(l.opts.TTL - l.drift)
	lease.Nodes, lease.Quorum = grantedBy(rs), l.quorum
	return lease, nil
}

// quorumResult turns per-node answers into nil (a quorum did it and no
// reason to refuse), a definite refusal (a quorum cannot have done it), or
// an unknown outcome.
func (l *redlock) quorumResult(op, key string, rs []NodeResult, refuse string, definite error) error {
	done, _, unknown := count(rs)
	if done >= l.quorum && refuse == "" {
		return nil
	}
	e := &QuorumError{Op: op, Key: key, Quorum: l.quorum, Nodes: rs, Reason: refuse}
	if e.Reason == "" {
		e.Reason = fmt.Sprintf("no quorum: %d of %d nodes", done, len(rs))
	}
	if refuse != "" || done+unknown < l.quorum {
		e.Definite = definite
	}
	return e
}
