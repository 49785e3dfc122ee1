package locks

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	goredisv9 "github.com/go-redsync/redsync/v4/redis/goredis/v9"

	"github.com/lockharness/lockharness/sut"
)

var redsyncInfo = Info{
	Name:        "redsync",
	Description: "go-redsync/redsync v4 (Redlock in Go) over its go-redis v9 adapter, one pool per node; renew with Extend",
	MinNodes:    1,
	Drift:       RedlockDrift,
	New:         newRedsyncLock,
}

// redsyncLock adapts github.com/go-redsync/redsync/v4 to Lock. The library
// does the work with its own options; the adapter only watches what each
// node answered (through a Pool wrapper that changes nothing) so that it can
// say when a failure is certain, since redsync's errors alone do not tell.
type redsyncLock struct {
	nodes []sut.ClientNode
	opts  Options
	pools []redsyncredis.Pool
	// unsentOnCtx[i]: a context error from node i means not sent.
	unsentOnCtx []bool
}

func newRedsyncLock(nodes []sut.ClientNode, opts Options) (Lock, error) {
	if len(nodes) < 1 {
		return nil, fmt.Errorf("redsync needs at least 1 node, got 0")
	}
	l := &redsyncLock{nodes: nodes, opts: opts.WithDefaults()}
	for _, n := range nodes {
		l.pools = append(l.pools, goredisv9.NewPool(n.Client))
		l.unsentOnCtx = append(l.unsentOnCtx, ctxErrMeansUnsent(n.Client))
	}
	return l, nil
}

func (l *redsyncLock) quorum() int { return len(l.nodes)/2 + 1 }

// mutex builds redsync's Mutex for key over watched pools. value, when set,
// is the token of an existing lease (redsync.WithValue).
func (l *redsyncLock) mutex(key, value string, w *watch, extra ...redsync.Option) *redsync.Mutex {
	pools := make([]redsyncredis.Pool, len(l.pools))
	for i, p := range l.pools {
		pools[i] = &watchedPool{Pool: p, node: i, w: w, unsentOnCtx: l.unsentOnCtx[i]}
	}
	opts := []redsync.Option{
		redsync.WithExpiry(l.opts.TTL),
		redsync.WithGenValueFunc(func() (string, error) { return newToken(l.opts.Rand), nil }),
	}
	if value != "" {
		opts = append(opts, redsync.WithValue(value))
	}
	return redsync.New(pools...).NewMutex(key, append(opts, extra...)...)
}

// Acquire is TryLock for a try, and Lock with redsync's own retries for a
// wait: as many tries as fit in the wait at the mean delay, each delay drawn
// from the seeded source. redsync stops retrying only when its tries run out
// or its context is done; the delay function cancels the context when the
// next try would start after the wait, which redsync sees between tries
// (never during one, so its release after a failed try is never cut short).
func (l *redsyncLock) Acquire(ctx context.Context, key string, o AcquireOptions) (Lease, error) {
	w := newWatch(len(l.nodes), true)
	var m *redsync.Mutex
	var err error
	if o.Wait <= 0 {
		m = l.mutex(key, "", w)
		err = m.TryLockContext(ctx)
	} else {
		deadline := time.Now().Add(o.Wait)
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		delay := func(int) time.Duration {
			d := l.opts.RetryDelay/2 + time.Duration(l.opts.Rand.Int64N(int64(l.opts.RetryDelay)))
			if time.Now().Add(d).After(deadline) {
				cancel()
			}
			return d
		}
		tries := 1 + int(o.Wait/l.opts.RetryDelay)
		m = l.mutex(key, "", w, redsync.WithTries(tries), redsync.WithRetryDelayFunc(delay))
		err = m.LockContext(wctx)
	}
	lease := Lease{Key: key, Token: m.Value()}
	if err == nil {
		lease.ValidUntil = m.Until()
		lease.Nodes, lease.Quorum = l.granted(w), l.quorum()
		return lease, nil
	}
	if lease.Token == "" {
		// redsync keeps the value only on success; the watch saw it.
		lease.Token = w.value
	}
	return lease, l.failure("acquire", key, err, w.results(), ErrNotAcquired)
}

// Release is Unlock of a mutex carrying the lease's token. redsync says
// only whether a quorum deleted it (ok) and joins every node's error; the
// watch tells the outcome: ErrNotHeld, the lock's definite "not held", only
// when more than N − quorum nodes ran the script and found no token of
// ours, so that it cannot be on a quorum: the lease is gone. A node that
// timed out, answered with an error reply or was never asked may still
// hold it: then the outcome is unknown.
func (l *redsyncLock) Release(ctx context.Context, lease Lease) error {
	w := newWatch(len(l.nodes), false)
	ok, err := l.mutex(lease.Key, lease.Token, w).UnlockContext(ctx)
	if ok {
		return nil
	}
	return l.failure("release", lease.Key, err, w.results(), ErrNotHeld)
}

// Renew is Extend of a mutex carrying the lease's token; ValidUntil is the
// mutex's Until. "Not held" means what it means for Release, or that
// redsync refused an extension that came too late (ErrExtendFailed: its
// validity, start + TTL − drift, was over when the quorum answered, so the
// lease's previous deadline had passed too).
func (l *redsyncLock) Renew(ctx context.Context, lease Lease) (Lease, error) {
	w := newWatch(len(l.nodes), false)
	m := l.mutex(lease.Key, lease.Token, w)
	ok, err := m.ExtendContext(ctx)
	if ok {
		lease.ValidUntil = m.Until()
		lease.Nodes, lease.Quorum = l.granted(w), l.quorum()
		return lease, nil
	}
	if err == nil || errors.Is(err, redsync.ErrExtendFailed) {
		// Extended on a quorum, too late: redsync refuses the extension.
		return lease, &QuorumError{Op: "renew", Key: lease.Key, Quorum: l.quorum(), Reason: flatten(redsync.ErrExtendFailed), Definite: ErrNotHeld}
	}
	return lease, l.failure("renew", lease.Key, err, w.results(), ErrNotHeld)
}

// granted names the nodes where the watch saw our token set (an acquire's
// SET NX) or extended (a renew) and not since removed. redsync waits for
// every node's answer before it returns, so after a success these are the
// nodes its quorum counted.
func (l *redsyncLock) granted(w *watch) []string {
	var out []string
	for i, r := range w.results() {
		if r == Done {
			out = append(out, l.nodes[i].Name)
		}
	}
	return out
}

// failure maps a redsync error to the harness's outcome: definite when
// fewer than a quorum of nodes may hold the effect (every node whose state
// is not Refused), unknown otherwise. redsync's own errors (ErrFailed,
// *ErrTaken, ErrNodeTaken, RedisError, ErrLockAlreadyExpired, joined) say
// what it saw but not whether a token was left behind.
func (l *redsyncLock) failure(op, key string, err error, maybe []Result, definite error) error {
	e := &QuorumError{Op: op, Key: key, Quorum: l.quorum(), Reason: flatten(err)}
	n := 0
	for i, r := range maybe {
		e.Nodes = append(e.Nodes, NodeResult{Node: l.nodes[i].Name, Result: r})
		if r != Refused {
			n++
		}
	}
	if n < l.quorum() {
		e.Definite = definite
	}
	return e
}

// flatten renders a (possibly joined) redsync error on one line, naming
// nodes by index as redsync does.
func flatten(err error) string {
	s := "failed"
	if err != nil {
		s = strings.ReplaceAll(err.Error(), "\n", "; ")
	}
	if !strings.HasPrefix(s, "redsync") {
		s = "redsync: " + s
	}
	return s
}

// watch records, per node, what redsync's commands did there during one
// operation.
type watch struct {
	acquire bool // an acquire (SET NX, then releases) or a release/renew

	mu    sync.Mutex
	value string
	// state, for an acquire: whether our token may be on the node (Done: it
	// is, Unknown: maybe, Refused: it is not). For a release or renew: what
	// the last script did there (Done: acted on our token).
	state []Result
}

func newWatch(n int, acquire bool) *watch {
	w := &watch{acquire: acquire, state: make([]Result, n)}
	for i := range w.state {
		w.state[i] = Refused // nothing of ours is there yet
	}
	return w
}

// setNX records an acquire attempt on node i.
func (w *watch) setNX(i int, value string, ok bool, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.value = value
	switch {
	case err == nil && ok:
		w.state[i] = Done
	case err != nil && classify(err) == Unknown && w.state[i] == Refused:
		w.state[i] = Unknown
	}
}

// eval records a script on node i: redsync's release (delete script: 1
// deleted, 0 another token, -1 no key) or extend (touch script: 1 extended,
// 0 not ours).
func (w *watch) eval(i int, reply any, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, _ := reply.(int64)
	acted := err == nil && n == 1
	unknown := err != nil && classify(err) == Unknown
	if !w.acquire {
		// A release or renew: Refused means the script ran and found no
		// token of ours (0, or -1: no key at all). An error of any kind,
		// an error reply (WRONGTYPE, LOADING, …) or a command never sent
		// included, says nothing about our token: it may be there.
		switch {
		case acted:
			w.state[i] = Done
		case err == nil:
			w.state[i] = Refused
		default:
			w.state[i] = Unknown
		}
		return
	}
	// An acquire's release: a deletion cleans the node. A reply that found
	// no token of ours cleans it only if our SET is known to have landed;
	// an unknown SET may still be on its way. An unknown release leaves a
	// granted node in doubt.
	switch {
	case acted:
		w.state[i] = Refused
	case err == nil && w.state[i] == Done:
		w.state[i] = Refused
	case unknown && w.state[i] == Done:
		w.state[i] = Unknown
	}
}

// results is a copy of the per-node state.
func (w *watch) results() []Result {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]Result(nil), w.state...)
}

// watchedPool hands out connections that report to a watch. It changes
// nothing in what redsync sends or receives.
type watchedPool struct {
	redsyncredis.Pool
	node        int
	w           *watch
	unsentOnCtx bool
}

func (p *watchedPool) Get(ctx context.Context) (redsyncredis.Conn, error) {
	c, err := p.Pool.Get(ctx)
	if err != nil {
		return nil, err
	}
	return &watchedConn{Conn: c, node: p.node, w: p.w, unsentOnCtx: p.unsentOnCtx}, nil
}

type watchedConn struct {
	redsyncredis.Conn
	node        int
	w           *watch
	unsentOnCtx bool
}

// seen is the error as the watch should judge it: a context error that
// proves the command was never sent is a definite no.
func (c *watchedConn) seen(err error) error {
	if c.unsentOnCtx && isCtxErr(err) {
		return errUnsent
	}
	return err
}

func (c *watchedConn) SetNX(name, value string, expiry time.Duration) (bool, error) {
	ok, err := c.Conn.SetNX(name, value, expiry)
	c.w.setNX(c.node, value, ok, c.seen(err))
	return ok, err
}

func (c *watchedConn) Eval(script *redsyncredis.Script, keysAndArgs ...any) (any, error) {
	reply, err := c.Conn.Eval(script, keysAndArgs...)
	c.w.eval(c.node, reply, c.seen(err))
	return reply, err
}
