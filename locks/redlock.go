package locks

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockharness/lockharness/sut"
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
	Drift:       RedlockDrift,
	New:         newRedlock,
}

// redlock is the algorithm of the redis.io distlock page: the same key and
// random token on every node, each with a short timeout, granted when a
// majority said yes and time is left on the lease. Its safety rests on the
// nodes' clocks and on the client noticing that it took too long; the
// harness tests both.
type redlock struct {
	nodes       []sut.ClientNode
	opts        Options
	quorum      int
	nodeTimeout time.Duration
	drift       time.Duration
}

func newRedlock(nodes []sut.ClientNode, opts Options) (Lock, error) {
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
	return retry(ctx, o, l.opts.RetryDelay, l.opts.Rand, func() (Lease, error) {
		return l.try(ctx, key)
	})
}

func (l *redlock) try(ctx context.Context, key string) (Lease, error) {
	lease := Lease{Key: key, Token: newToken(l.opts.Rand)}
	start := time.Now()
	sets := onAll(ctx, l.nodes, l.nodeTimeout, "SET NX PX", func(ctx context.Context, n sut.ClientNode) error {
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
	rs, _ := l.onAllHeld(ctx, "release", lease, compareAndDelete)
	return rs
}

// onAllHeld runs a compare-token script (compareAndDelete, or
// compareAndPexpire with the TTL) on every node and also says which nodes
// answered that our token is not there (the script ran and returned 0). A
// node that answered with an error reply (WRONGTYPE, LOADING, …) or whose
// command was never sent counts as Refused in the results, but it says
// nothing about our token: it may still be there.
func (l *redlock) onAllHeld(ctx context.Context, op string, lease Lease, s *redis.Script, args ...any) ([]NodeResult, int) {
	var mu sync.Mutex
	absent := map[string]bool{}
	rs := onAll(ctx, l.nodes, l.nodeTimeout, op, func(ctx context.Context, n sut.ClientNode) error {
		err := runCompare(ctx, n, s, op, lease.Key, append([]any{lease.Token}, args...)...)
		if errors.Is(err, ErrNotHeld) {
			mu.Lock()
			absent[n.Name] = true
			mu.Unlock()
		}
		return err
	})
	mu.Lock()
	defer mu.Unlock()
	n := 0
	for _, r := range rs {
		if r.Result == Refused && absent[r.Node] {
			n++
		}
	}
	return rs, n
}

// Release deletes the token on every node. It succeeds when a quorum
// deleted it. It is refused with ErrNotHeld, the lock's definite "not
// held", only when so many nodes answered that our token is not there that
// it cannot be on a quorum (more than N − quorum): the lease, which lives
// as long as a quorum keeps the token, is gone. Anything else (nodes that
// did not answer, answered with an error reply, or were never asked) is
// unknown: a refused command is not an answer about our token.
func (l *redlock) Release(ctx context.Context, lease Lease) error {
	rs, absent := l.onAllHeld(ctx, "release", lease, compareAndDelete)
	return l.quorumResult("release", lease.Key, rs, absent, "")
}

// Renew extends the token on every node; like an acquire, it counts only
// with a quorum and time left: ValidUntil = start + TTL − drift. It is
// refused with ErrNotHeld when the token cannot be on a quorum (as for
// Release), or when the renewal came too late: the lock itself then holds
// the lease for over (and its deadline, at most start + TTL − drift, has
// passed by the time it says so).
func (l *redlock) Renew(ctx context.Context, lease Lease) (Lease, error) {
	start := time.Now()
	rs, absent := l.onAllHeld(ctx, "renew", lease, compareAndPexpire, l.opts.TTL.Milliseconds())
	if err := l.quorumResult("renew", lease.Key, rs, absent, ""); err != nil {
		return lease, err
	}
	if elapsed := time.Since(start); l.opts.TTL-elapsed-l.drift <= 0 {
		return lease, l.quorumResult("renew", lease.Key, rs, absent, fmt.Sprintf("validity expired: renewed in %v", elapsed))
	}
	lease.ValidUntil = start.Add(l.opts.TTL - l.drift)
	lease.Nodes, lease.Quorum = grantedBy(rs), l.quorum
	return lease, nil
}

// quorumResult turns per-node answers to a release or renew into nil (a
// quorum did it and no reason to refuse), ErrNotHeld (the lock refuses, or
// more than N − quorum nodes answered that our token is not there) or an
// unknown outcome.
func (l *redlock) quorumResult(op, key string, rs []NodeResult, absent int, refuse string) error {
	done, _, _ := count(rs)
	if done >= l.quorum && refuse == "" {
		return nil
	}
	e := &QuorumError{Op: op, Key: key, Quorum: l.quorum, Nodes: rs, Reason: refuse}
	if e.Reason == "" {
		e.Reason = fmt.Sprintf("no quorum: %d of %d nodes; %d said the token is not there", done, len(rs), absent)
	}
	if refuse != "" || absent > len(rs)-l.quorum {
		e.Definite = ErrNotHeld
	}
	return e
}
