package locks

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/lockharness/lockharness/sut"
)

var zkInfo = Info{
	Name:        "zk",
	System:      SystemZooKeeper,
	Description: "ZooKeeper's lock recipe: an ephemeral sequential node under the key, the lowest holds, each waiter watches its predecessor; the session (timeout = TTL) is the lease, kept alive every TTL/3",
	MinNodes:    3,
	MaxNodes:    5,
	New:         func(nodes []sut.ClientNode, opts Options) (Lock, error) { return newZKLock(nodes, opts, false) },
}

var zkFencedInfo = Info{
	Name:        "zk-fenced",
	System:      SystemZooKeeper,
	Description: "the ZooKeeper lock with the lock node's sequence number (+1) as fencing token, checked by the storage",
	MinNodes:    3,
	MaxNodes:    5,
	Fenced:      true,
	New:         func(nodes []sut.ClientNode, opts Options) (Lock, error) { return newZKLock(nodes, opts, true) },
}

// ZKPath is the node under which the ZooKeeper locks queue for key: each
// holder and waiter creates an ephemeral sequential child, and the lowest
// sequence number holds.
func ZKPath(key string) string { return "/lockharness/lock/" + key }

// zkNodePrefix names a lock node: Curator's protection mode. The GUID lets
// a client whose create lost its connection find the node it may have made
// (a create is not idempotent: retried blindly it leaves a ghost node, held
// by a live session, that blocks everyone behind it).
const zkNodePrefix = "_c_"

// zkLock is ZooKeeper's lock recipe ("ZooKeeper Recipes and Solutions",
// Locks) as Curator's InterProcessMutex writes it: a client creates an
// ephemeral sequential node under the key's node; the lowest holds; the
// others each watch the node just below theirs (no herd when it goes).
// The lock is held as long as the client's session lives: ZooKeeper
// expires a session the leader has not heard from for the session timeout
// (on the leader's monotonic clock), deleting its ephemeral nodes, and the
// next waiter then holds. A client that stops for longer than the timeout
// (a GC pause) loses the lock without knowing until it next hears from
// ZooKeeper; its late write then loses another holder's update, unless
// the storage checks a fencing token: the node's sequence number, which
// grows with every grant (zk-fenced).
//
// The lease in the history is what ZooKeeper promises: a session cannot
// expire before the session timeout has passed since the server last heard
// from the client, so the instant before the last request the session
// confirmed (a sync, which goes through the leader, then a read of the
// node) plus the timeout is a lower bound. One client holds one session
// (one zk.Conn, dialled through that client's own links) for all its
// holds. Its pings are go-zookeeper's, every timeout/3; this lock's own
// keep-alive, every timeout/3 too, is the confirmation the deadline rests
// on, is reported as a renewal (Options.OnRenew), and learns "not held"
// when the session has expired or the node is gone. While a renewal is
// held back (the renewer-stall nemesis, which stands for a process-wide
// pause) the client's connection sends nothing, pings included, as a
// stopped process sends nothing.
type zkLock struct {
	conn    *zk.Conn
	gate    *zkGate
	opts    Options
	fenced  bool
	asked   time.Duration // session timeout asked of the server
	timeout time.Duration // one request
	nodes   string

	ctx    context.Context // cancelled by Close: a crash
	cancel context.CancelFunc

	mu         sync.Mutex
	negotiated time.Duration // the session timeout the server granted; 0 until known
	parents    map[string]bool
	holds      map[string]*zkHold // by lease token
}

// zkHold is one acquire: its node and, once it holds, its keep-alive.
type zkHold struct {
	guid    string
	session int64 // the session the node belongs to
	path    string
	lease   Lease
	stop    chan struct{} // closed to stop the keep-alive loop
	done    chan struct{} // closed when it has stopped
	pending chan struct{} // closed when the create has an outcome

	// guarded by zkLock.mu
	held      bool
	confirmed time.Time // before the last request the session confirmed
	lost      bool
}

// zkServers are the addresses a ZooKeeper client dials (the client's own
// links to every server) and its request timeout (1s when none is set).
func zkServers(what string, nodes []sut.ClientNode) ([]string, time.Duration, error) {
	if len(nodes) == 0 {
		return nil, 0, fmt.Errorf("%s needs the servers' addresses, got none", what)
	}
	var addrs []string
	for _, n := range nodes {
		if n.Addr == "" {
			return nil, 0, fmt.Errorf("%s: node %s has no address", what, n.Name)
		}
		addrs = append(addrs, n.Addr)
	}
	timeout := nodes[0].Timeout
	if timeout <= 0 {
		timeout = time.Second
	}
	return addrs, timeout, nil
}

func newZKLock(nodes []sut.ClientNode, opts Options, fenced bool) (Lock, error) {
	addrs, timeout, err := zkServers("zookeeper lock", nodes)
	if err != nil {
		return nil, err
	}
	opts = opts.WithDefaults()
	l := &zkLock{opts: opts, fenced: fenced, asked: opts.TTL, timeout: timeout,
		nodes: fmt.Sprintf("zookeeper(%d servers)", len(nodes)), gate: newZKGate(),
		parents: map[string]bool{}, holds: map[string]*zkHold{}}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	conn, _, err := zk.Connect(addrs, opts.TTL,
		zk.WithDialer(l.gate.dial),
		zk.WithLogger(zkLogger{l}),
		zk.WithLogInfo(true), // the granted timeout comes as an info line
	)
	if err != nil {
		return nil, fmt.Errorf("zookeeper client for %v: %w", addrs, err)
	}
	l.conn = conn
	return l, nil
}

// session is the session timeout the lease rests on: the shorter of what
// was asked and what the server granted (it grants what is asked within
// its bounds).
func (l *zkLock) session() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.negotiated > 0 && l.negotiated < l.asked {
		return l.negotiated
	}
	return l.asked
}

var zkAuthenticated = regexp.MustCompile(`authenticated: id=(-?\d+), timeout=(\d+)`)

// zkLogger takes the granted session timeout from go-zookeeper's log (it
// has no getter) and drops the rest.
type zkLogger struct{ l *zkLock }

func (z zkLogger) Printf(format string, args ...interface{}) {
	if m := zkAuthenticated.FindStringSubmatch(fmt.Sprintf(format, args...)); m != nil {
		if ms, err := strconv.Atoi(m[2]); err == nil && ms > 0 {
			z.l.mu.Lock()
			z.l.negotiated = time.Duration(ms) * time.Millisecond
			z.l.mu.Unlock()
		}
	}
}

func (l *zkLock) nodeErr(op string, err error) error {
	return &NodeError{Node: l.nodes, Op: op, Err: err}
}

// call runs f, a go-zookeeper request, giving up after the request timeout
// or ctx: go-zookeeper has no deadline of its own short of losing the
// connection. A request given up on may still take effect.
func (l *zkLock) call(ctx context.Context, f func() error) error {
	return zkCall(ctx, l.timeout, f)
}

// errZKSessionGone: the client learnt its session expired while a request
// of it waited for an answer.
var errZKSessionGone = errors.New("the session expired")

// callWhile is call for a request of session sid: it ends early when the
// client learns that the session expired (a request queued while the
// client reconnects is otherwise sent on the session that replaces it).
func (l *zkLock) callWhile(ctx context.Context, sid int64, f func() error) error {
	ctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- f() }()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			return err
		case <-tick.C:
			if l.conn.SessionID() != sid {
				return errZKSessionGone
			}
		case <-ctx.Done():
			return fmt.Errorf("no answer: %w", ctx.Err())
		}
	}
}

// ensureParents creates the key's node and its parents (persistent), once
// per client.
func (l *zkLock) ensureParents(ctx context.Context, key string) error {
	l.mu.Lock()
	done := l.parents[key]
	l.mu.Unlock()
	if done {
		return nil
	}
	p := ""
	for _, part := range strings.Split(strings.TrimPrefix(ZKPath(key), "/"), "/") {
		p += "/" + part
		err := l.call(ctx, func() error {
			_, err := l.conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll))
			return err
		})
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return l.nodeErr("create "+p, err)
		}
	}
	l.mu.Lock()
	l.parents[key] = true
	l.mu.Unlock()
	return nil
}

// Acquire creates this attempt's node, then waits (up to o.Wait) until it
// is the lowest, watching the node just below. A refusal deletes the node,
// leaving nothing behind.
func (l *zkLock) Acquire(ctx context.Context, key string, o AcquireOptions) (Lease, error) {
	lease := Lease{Key: key, Token: newToken(l.opts.Rand)}
	if err := l.ensureParents(ctx, key); err != nil {
		return lease, fmt.Errorf("%w: %w", err, ErrNotAcquired)
	}
	h := l.newHold(lease)
	start := time.Now()
	if err := l.create(ctx, h); err != nil {
		if errors.Is(err, ErrNotAcquired) {
			l.forget(h)
		}
		return lease, err // unknown: Release finds the node, or cleans up
	}
	l.mu.Lock()
	h.confirmed = start
	l.mu.Unlock()
	if err := l.awaitTurn(ctx, h, o); err != nil {
		return lease, err
	}
	if err := l.confirm(ctx, h); err != nil {
		return lease, err
	}
	return l.grant(h), nil
}

// newHold is the hold of an attempt at lease, under a new GUID that names
// its node, registered so that Release finds it whatever the outcome.
func (l *zkLock) newHold(lease Lease) *zkHold {
	var g [16]byte
	_, _ = rand.Read(g[:])
	h := &zkHold{guid: hex.EncodeToString(g[:]), lease: lease,
		stop: make(chan struct{}), done: make(chan struct{}), pending: make(chan struct{})}
	l.mu.Lock()
	l.holds[lease.Token] = h
	l.mu.Unlock()
	return h
}

// awaitTurn waits until h's node is the lowest of the key's, up to o.Wait,
// watching the node just below; it gives up (giveUp: deleting the node, a
// definite refusal) when o.Wait runs out, o.Stop closes or ctx ends. It
// returns nil only when h's node is the lowest.
func (l *zkLock) awaitTurn(ctx context.Context, h *zkHold, o AcquireOptions) error {
	deadline := time.Now().Add(o.Wait)
	for {
		first, pred, err := l.queue(ctx, h)
		if errors.Is(err, ErrNotAcquired) {
			l.forget(h) // our node went with an expired session
			return l.nodeErr("lock", err)
		}
		if err != nil {
			return l.nodeErr("lock", err) // unknown: Release finds the node
		}
		if first {
			return nil
		}
		if o.Wait <= 0 || !time.Now().Before(deadline) {
			return l.giveUp(ctx, h)
		}
		var ch <-chan zk.Event
		var exists bool
		err = l.call(ctx, func() error {
			var err error
			exists, _, ch, err = l.conn.ExistsW(pred)
			return err
		})
		if err != nil {
			return l.nodeErr("watch "+pred, err)
		}
		if !exists {
			continue
		}
		t := time.NewTimer(time.Until(deadline))
		select {
		case <-ch:
		case <-t.C:
		case <-o.Stop:
			deadline = time.Now()
		case <-ctx.Done():
			deadline = time.Now()
		}
		t.Stop()
	}
}

// grant marks h held, gives its lease its fence (fenced: the node's
// sequence number plus one) and its deadline (the last confirmation plus
// the session timeout), and starts keeping its session alive.
func (l *zkLock) grant(h *zkHold) Lease {
	l.mu.Lock()
	h.held = true
	if l.fenced {
		// Sequence numbers start at 0; a fence is > 0.
		seq, _ := zkSeq(h.path)
		h.lease.Fence = seq + 1
	}
	h.lease.ValidUntil = h.confirmed.Add(l.sessionLocked())
	lease := h.lease
	l.mu.Unlock()
	go l.keepAlive(h)
	return lease
}

func (l *zkLock) sessionLocked() time.Duration {
	if l.negotiated > 0 && l.negotiated < l.asked {
		return l.negotiated
	}
	return l.asked
}

// create makes h's node, ephemeral and sequential, named with its GUID.
// A create that loses its connection may have been done: the node is
// looked for by its GUID before trying again, so a retry never makes a
// second one. A create that gets no answer at all leaves the outcome
// unknown; the node, if it appears, is found by Release.
func (l *zkLock) create(ctx context.Context, h *zkHold) error {
	name := ZKPath(h.lease.Key) + "/" + zkNodePrefix + h.guid + "-lock-"
	res := make(chan zkCreated, 1)
	go func() {
		defer close(h.pending)
		r := l.createRetrying(h, name)
		if r.err == nil {
			l.mu.Lock()
			h.path = r.path
			l.mu.Unlock()
		}
		res <- r
	}()
	ctx, cancel := context.WithTimeout(ctx, 3*l.timeout)
	defer cancel()
	select {
	case r := <-res:
		switch {
		case r.err == nil:
		case errors.Is(r.err, zk.ErrSessionExpired), errors.Is(r.err, zk.ErrNoNode), errors.Is(r.err, zk.ErrNoServer):
			return l.nodeErr("create", fmt.Errorf("%v: %w", r.err, ErrNotAcquired))
		default:
			return l.nodeErr("create", r.err)
		}
		return l.readOwner(ctx, h, r.path)
	case <-ctx.Done():
		return l.nodeErr("create", fmt.Errorf("no answer: %w", ctx.Err()))
	}
}

// zkCreated is the outcome of a create: the node's path, the session it
// was sent on.
type zkCreated struct {
	path string
	sid  int64
	err  error
}

// createRetrying creates node name (sequential: name is its prefix) up to
// three times: again when the connection closed and the node is certainly
// not there (looked for by h's GUID), or when the session expired (its
// node would be gone with it).
func (l *zkLock) createRetrying(h *zkHold, name string) zkCreated {
	var r zkCreated
	for i := 0; i < 3; i++ {
		r.sid = l.conn.SessionID()
		r.path, r.err = l.conn.Create(name, nil, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
		if errors.Is(r.err, zk.ErrConnectionClosed) {
			if p, ok, err := l.find(h); err == nil && ok {
				r.path, r.err = p, nil
			} else if err == nil {
				continue // certainly not created: try again
			}
		}
		if errors.Is(r.err, zk.ErrSessionExpired) {
			continue // a node of the expired session is gone with it
		}
		break
	}
	return r
}

// readOwner records the session that owns h's node at path: the node is
// that session's, whichever the create was sent on.
func (l *zkLock) readOwner(ctx context.Context, h *zkHold, path string) error {
	var st *zk.Stat
	err := l.call(ctx, func() error {
		var err error
		_, st, err = l.conn.Exists(path)
		return err
	})
	if err != nil || st == nil {
		return l.nodeErr("create", fmt.Errorf("read the node made: %v", err))
	}
	l.mu.Lock()
	h.session = st.EphemeralOwner
	l.mu.Unlock()
	return nil
}

// find looks for h's node by its GUID among the key's children.
func (l *zkLock) find(h *zkHold) (string, bool, error) {
	kids, _, err := l.conn.Children(ZKPath(h.lease.Key))
	if err != nil {
		return "", false, err
	}
	for _, k := range kids {
		if strings.HasPrefix(k, zkNodePrefix+h.guid+"-") {
			return ZKPath(h.lease.Key) + "/" + k, true, nil
		}
	}
	return "", false, nil
}

// zkSeq is the sequence number ZooKeeper appended to a node's name.
func zkSeq(name string) (int64, bool) {
	if len(name) < 10 {
		return 0, false
	}
	n, err := strconv.ParseInt(name[len(name)-10:], 10, 64)
	return n, err == nil
}

// queue lists the key's nodes and says whether h's is the lowest, or
// which node is just below it.
func (l *zkLock) queue(ctx context.Context, h *zkHold) (bool, string, error) {
	var kids []string
	err := l.call(ctx, func() error {
		var err error
		kids, _, err = l.conn.Children(ZKPath(h.lease.Key))
		return err
	})
	if err != nil {
		return false, "", err
	}
	l.mu.Lock()
	mine := h.path[strings.LastIndex(h.path, "/")+1:]
	l.mu.Unlock()
	sort.Slice(kids, func(i, j int) bool {
		a, _ := zkSeq(kids[i])
		b, _ := zkSeq(kids[j])
		return a < b
	})
	for i, k := range kids {
		if k == mine {
			if i == 0 {
				return true, "", nil
			}
			return false, ZKPath(h.lease.Key) + "/" + kids[i-1], nil
		}
	}
	return false, "", fmt.Errorf("our node %s is gone (the session expired): %w", mine, ErrNotAcquired)
}

// giveUp deletes the node of an attempt that did not get the lock: a
// definite refusal once the delete is done.
func (l *zkLock) giveUp(ctx context.Context, h *zkHold) error {
	err := l.call(ctx, func() error { return l.conn.Delete(h.path, -1) })
	if err == nil || errors.Is(err, zk.ErrNoNode) {
		l.forget(h)
		return l.nodeErr("lock", ErrNotAcquired)
	}
	go l.deleteLater(h.path)
	return l.nodeErr("lock", fmt.Errorf("delete our node after waiting: %w", err)) // unknown: Release deletes it
}

// confirm renews once more when the last confirmation is older than a
// renewal period (a long wait in the queue): the deadline the holder is
// given is then the instant before this renewal plus the timeout. A
// session that has expired meanwhile means the node went with it: not
// acquired.
func (l *zkLock) confirm(ctx context.Context, h *zkHold) error {
	l.mu.Lock()
	stale := time.Since(h.confirmed) > l.sessionLocked()/3
	l.mu.Unlock()
	if !stale {
		return nil
	}
	if _, err := l.keepAliveOnce(ctx, h, h.lease); errors.Is(err, ErrNotHeld) {
		l.forget(h)
		return l.nodeErr("lock", fmt.Errorf("the session ran out while waiting for the lock: %w", ErrNotAcquired))
	} else if err != nil {
		return l.nodeErr("lock", err)
	}
	return nil
}

// Release stops the keep-alive loop and deletes the node: ErrNotHeld when
// it is gone (the session expired and the lock went to the next).
func (l *zkLock) Release(ctx context.Context, lease Lease) error {
	l.mu.Lock()
	h := l.holds[lease.Token]
	l.mu.Unlock()
	if h == nil {
		return l.nodeErr("release", fmt.Errorf("no lease with token %s on this client", lease.Token))
	}
	l.stopKeepAlive(h)
	l.mu.Lock()
	held, path := h.held, h.path
	l.mu.Unlock()
	if !held {
		return l.releaseUnknown(ctx, h)
	}
	err := l.call(ctx, func() error { return l.conn.Delete(path, -1) })
	switch {
	case err == nil:
		l.forget(h)
		return nil
	case errors.Is(err, zk.ErrNoNode):
		l.forget(h)
		return l.nodeErr("release", ErrNotHeld)
	}
	l.forget(h)
	go l.deleteLater(path)
	return l.nodeErr("release", err)
}

// cleanup removes whatever an attempt whose outcome stays unknown left
// behind, in the background: it waits for the create's outcome, finds the
// node by its GUID and deletes it, trying again until that is done or
// the client is closed. Without it a node made by a create that got no
// answer, or not deleted by a release that got none, would hold the lock
// for nobody as long as the client's session lives (a ghost).
func (l *zkLock) cleanup(h *zkHold) {
	go func() {
		select {
		case <-h.pending:
		case <-l.ctx.Done():
			return
		}
		for {
			var path string
			var ok bool
			err := l.call(l.ctx, func() error {
				var err error
				path, ok, err = l.find(h)
				return err
			})
			if err == nil && !ok {
				return
			}
			if err == nil {
				err = l.call(l.ctx, func() error { return l.conn.Delete(path, -1) })
				if err == nil || errors.Is(err, zk.ErrNoNode) {
					return
				}
			}
			if errors.Is(err, zk.ErrSessionExpired) {
				return // the node went with the session
			}
			select {
			case <-l.ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
}

// deleteLater deletes a node whose delete got no answer, trying again
// until it is done or gone, as Curator's guaranteed delete does: the
// session that owns it lives on, and so would the lock, held by nobody.
// It stops when the client is closed (the session then expires).
func (l *zkLock) deleteLater(path string) {
	for {
		err := l.call(l.ctx, func() error { return l.conn.Delete(path, -1) })
		if err == nil || errors.Is(err, zk.ErrNoNode) || errors.Is(err, zk.ErrSessionExpired) {
			return
		}
		select {
		case <-l.ctx.Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// releaseUnknown gives back whatever an acquire whose outcome is unknown
// left: nothing, a waiter's node, or the lock. It waits for the create's
// outcome, finds the node by its GUID, and deletes it: ok if it was the
// lowest (the acquire took the lock), "not held" if it was not or there is
// none. A release must never answer ok for a lock it did not hold.
func (l *zkLock) releaseUnknown(ctx context.Context, h *zkHold) error {
	select {
	case <-h.pending:
	case <-ctx.Done():
		l.forget(h)
		l.cleanup(h)
		return l.nodeErr("release", ctx.Err())
	case <-time.After(3 * l.timeout):
		l.forget(h)
		l.cleanup(h)
		return l.nodeErr("release", fmt.Errorf("the create still has no outcome"))
	}
	var path string
	var ok bool
	if err := l.call(ctx, func() error {
		var err error
		path, ok, err = l.find(h)
		return err
	}); err != nil {
		l.forget(h)
		l.cleanup(h)
		return l.nodeErr("release", err)
	}
	if !ok {
		l.forget(h)
		return l.nodeErr("release", fmt.Errorf("the acquire left no node: %w", ErrNotHeld))
	}
	l.mu.Lock()
	h.path = path
	l.mu.Unlock()
	first, _, qerr := l.queue(ctx, h)
	err := l.call(ctx, func() error { return l.conn.Delete(path, -1) })
	switch {
	case err != nil && !errors.Is(err, zk.ErrNoNode):
		l.forget(h)
		go l.deleteLater(path)
		return l.nodeErr("release", err)
	case err == nil && qerr == nil && first:
		l.forget(h)
		return nil
	case qerr != nil && !errors.Is(qerr, ErrNotAcquired):
		// Deleted, but whether it held is not known.
		l.forget(h)
		return l.nodeErr("release", qerr)
	}
	l.forget(h)
	return l.nodeErr("release", fmt.Errorf("the acquire had not taken the lock: %w", ErrNotHeld))
}

func (l *zkLock) forget(h *zkHold) {
	l.mu.Lock()
	delete(l.holds, h.lease.Token)
	l.mu.Unlock()
}

// Renew confirms the session now, as the careful client's "do I still
// hold it?": ErrNotHeld when the session has expired or the node is gone.
func (l *zkLock) Renew(ctx context.Context, lease Lease) (Lease, error) {
	l.mu.Lock()
	h := l.holds[lease.Token]
	held := h != nil && h.held
	l.mu.Unlock()
	if !held {
		return lease, l.nodeErr("renew", fmt.Errorf("no lease with token %s held on this client", lease.Token))
	}
	return l.keepAliveOnce(ctx, h, lease)
}

// keepAliveOnce confirms h's session: a sync (through the leader, so the
// server the client speaks to is in the quorum, and has applied any
// expiry of the session the leader decided), then a read of the node,
// which must still be there and belong to the session. It returns the
// lease extended from the instant before the sync, or ErrNotHeld when the
// session is gone.
func (l *zkLock) keepAliveOnce(ctx context.Context, h *zkHold, lease Lease) (Lease, error) {
	start := time.Now()
	l.mu.Lock()
	path, sid := h.path, h.session
	l.mu.Unlock()
	lost := func(why string) (Lease, error) {
		l.mu.Lock()
		h.lost = true
		l.mu.Unlock()
		return lease, l.nodeErr("keep-alive", fmt.Errorf("%s: %w", why, ErrNotHeld))
	}
	// go-zookeeper zeroes the session id when the server says it has
	// expired, and then makes a new one.
	if cur := l.conn.SessionID(); cur != sid {
		return lost(fmt.Sprintf("the session %#x expired (now %#x)", sid, cur))
	}
	var st *zk.Stat
	var exists bool
	err := l.callWhile(ctx, sid, func() error {
		if _, err := l.conn.Sync(path); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
		var err error
		exists, st, err = l.conn.Exists(path)
		return err
	})
	switch {
	case errors.Is(err, zk.ErrSessionExpired), errors.Is(err, errZKSessionGone):
		return lost("the session expired")
	case err != nil:
		return lease, l.nodeErr("keep-alive", err)
	case !exists:
		return lost("the lock node is gone")
	case st.EphemeralOwner != sid:
		return lost(fmt.Sprintf("the lock node belongs to session %#x", st.EphemeralOwner))
	case l.conn.SessionID() != sid:
		// Answered, but on a session that replaced ours: not a
		// confirmation of ours; the node, ephemeral, goes with it.
		return lost("the session was replaced")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if start.After(h.confirmed) {
		h.confirmed = start
	}
	lease.ValidUntil = start.Add(l.sessionLocked())
	if l.fenced {
		lease.Fence = h.lease.Fence
	}
	return lease, nil
}

// keepAlive confirms the session every timeout/3 while h holds, reporting
// each renewal (Options.OnRenew). A held-back report stops the client's
// connection (zkGate) until it returns, as a stopped process sends
// nothing. It ends with the hold, or when the session is lost.
func (l *zkLock) keepAlive(h *zkHold) {
	defer close(h.done)
	for {
		t := time.NewTimer(l.session() / 3)
		select {
		case <-h.stop:
			t.Stop()
			return
		case <-l.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		l.mu.Lock()
		lease := h.lease
		l.mu.Unlock()
		var report func(Lease, error)
		if l.opts.OnRenew != nil {
			l.gate.shut()
			report = l.opts.OnRenew(lease.Key)
			l.gate.open()
		}
		next, err := l.keepAliveOnce(l.ctx, h, lease)
		if report != nil {
			report(next, err)
		}
		if errors.Is(err, ErrNotHeld) {
			return
		}
	}
}

func (l *zkLock) stopKeepAlive(h *zkHold) {
	l.mu.Lock()
	held := h.held
	l.mu.Unlock()
	select {
	case <-h.stop:
	default:
		close(h.stop)
	}
	if held {
		<-h.done
	}
}

// Close kills the client at once without releasing: its connection is
// dropped without closing the session, whose nodes then go when it
// expires, as after a crash.
func (l *zkLock) Close() error {
	l.cancel()
	l.gate.kill()
	l.conn.Close()
	return nil
}

// zkGate stands between go-zookeeper and its connections: shut, it holds
// back every write (requests and pings) until opened; killed, it fails
// them and closes the connections, so a closing client sends no
// closeSession.
type zkGate struct {
	mu     sync.Mutex
	shuts  int
	opened chan struct{} // closed while open
	dead   bool
	conns  map[net.Conn]struct{}
}

func newZKGate() *zkGate {
	g := &zkGate{opened: make(chan struct{}), conns: map[net.Conn]struct{}{}}
	close(g.opened)
	return g
}

func (g *zkGate) shut() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.shuts == 0 {
		g.opened = make(chan struct{})
	}
	g.shuts++
}

func (g *zkGate) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.shuts--
	if g.shuts == 0 {
		close(g.opened)
	}
}

func (g *zkGate) kill() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.dead = true
	for c := range g.conns {
		_ = c.Close()
	}
	if g.shuts > 0 {
		g.shuts = 0
		close(g.opened)
	}
}

// wait blocks while the gate is shut; an error once it is killed.
func (g *zkGate) wait() error {
	g.mu.Lock()
	ch, dead := g.opened, g.dead
	g.mu.Unlock()
	if dead {
		return net.ErrClosed
	}
	<-ch
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.dead {
		return net.ErrClosed
	}
	return nil
}

func (g *zkGate) dial(network, addr string, timeout time.Duration) (net.Conn, error) {
	if err := g.wait(); err != nil {
		return nil, err
	}
	c, err := net.DialTimeout(network, addr, timeout)
	if err != nil {
		return nil, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.dead {
		_ = c.Close()
		return nil, net.ErrClosed
	}
	g.conns[c] = struct{}{}
	return &gatedConn{Conn: c, g: g}, nil
}

type gatedConn struct {
	net.Conn
	g *zkGate
}

func (c *gatedConn) Write(b []byte) (int, error) {
	if err := c.g.wait(); err != nil {
		return 0, err
	}
	return c.Conn.Write(b)
}

func (c *gatedConn) Close() error {
	c.g.mu.Lock()
	delete(c.g.conns, c.Conn)
	c.g.mu.Unlock()
	return c.Conn.Close()
}
