package locks

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/lockharness/lockharness/sut"
)

var zkNewLockInfo = Info{
	Name:   "zk-newlock",
	System: SystemZooKeeper,
	Description: "go-zookeeper v1.0.4's stock zk.NewLock recipe: a protected ephemeral sequential node, the lowest holds, each waiter watches its predecessor; " +
		"blocking only (no try, no timeout, never refuses); the lease is the session (timeout = TTL), kept alive by the library's pings",
	MinNodes: 3,
	MaxNodes: 5,
	New:      newZKNewLock,
}

// ZKNewLockPath is the node under which zk-newlock queues for key, apart
// from the project's own ZooKeeper lock (ZKPath).
func ZKNewLockPath(key string) string { return "/lockharness/newlock/" + key }

// zkNewLock is go-zookeeper's own lock recipe, zk.NewLock, as a user runs
// it: one zk.Conn per client (session timeout = the TTL, dialled at every
// server through the client's own links, as the project's zk lock does),
// one zk.Lock per acquire, Lock() to take it, Unlock() to give it back.
//
// Mechanism (go-zookeeper v1.0.4, lock.go): Lock creates a protected
// ephemeral sequential node "_c_<guid>-lock-N" under the lock's path
// (creating the parents), lists the children, holds when its sequence
// number is the lowest, else watches the next lower node and lists again
// when it changes. The node lives as long as the session: the library
// pings every timeout/3 from its own goroutines, the server expires a
// session it has not heard from for the timeout and deletes its nodes.
// Nothing tells the holder: the recipe has no deadline, no fencing token
// and no watch of its own node or session state, so a holder whose
// session expired (a partition, a process stopped for longer than the
// timeout) goes on believing it holds. The lease is therefore a session
// (Lease.Session, no ValidUntil).
//
// The recipe can only wait: Lock has no try, no timeout and no
// cancellation, and a create or list that fails half-way leaves its node
// in the queue (held by a live session, it blocks everyone behind it).
// The adapter bounds the wait by o.Wait, o.Stop and ctx, and then answers
// unknown: the recipe goes on waiting in the background and, should it
// get the lock, gives it back at once. It never answers "not acquired".
type zkNewLock struct {
	conn    *zk.Conn
	gate    *zkGate
	opts    Options
	timeout time.Duration
	nodes   string

	mu    sync.Mutex
	holds map[string]*zkRecipeHold // by lease token
}

// zkRecipeHold is one acquire: the recipe's lock and its outcome.
type zkRecipeHold struct {
	lk   *zk.Lock
	done chan struct{} // closed when Lock returned; err is then set
	err  error

	mu        sync.Mutex
	abandoned bool // nobody waits for it: unlock as soon as granted
}

func newZKNewLock(nodes []sut.ClientNode, opts Options) (Lock, error) {
	addrs, timeout, err := zkServers("zk-newlock", nodes)
	if err != nil {
		return nil, err
	}
	opts = opts.WithDefaults()
	l := &zkNewLock{opts: opts, timeout: timeout, gate: newZKGate(), holds: map[string]*zkRecipeHold{},
		nodes: fmt.Sprintf("zookeeper(%d servers)", len(nodes))}
	conn, _, err := zk.Connect(addrs, opts.TTL, zk.WithDialer(l.gate.dial), zk.WithLogger(zkNoLog{}))
	if err != nil {
		return nil, fmt.Errorf("zookeeper client for %v: %w", addrs, err)
	}
	l.conn = conn
	return l, nil
}

// zkNoLog drops go-zookeeper's log lines.
type zkNoLog struct{}

func (zkNoLog) Printf(string, ...interface{}) {}

func (l *zkNewLock) nodeErr(op string, err error) error {
	return &NodeError{Node: l.nodes, Op: "zk-newlock " + op, Err: err}
}

// Acquire runs the recipe's Lock and waits for it up to o.Wait (with
// Wait 0, as long as ctx allows: the recipe has no try), o.Stop or ctx.
func (l *zkNewLock) Acquire(ctx context.Context, key string, o AcquireOptions) (Lease, error) {
	lease := Lease{Key: key, Token: newToken(l.opts.Rand), Session: true}
	h := &zkRecipeHold{lk: zk.NewLock(l.conn, ZKNewLockPath(key), zk.WorldACL(zk.PermAll)), done: make(chan struct{})}
	l.mu.Lock()
	l.holds[lease.Token] = h
	l.mu.Unlock()
	go func() {
		h.err = h.lk.Lock()
		close(h.done)
		h.mu.Lock()
		abandoned := h.abandoned
		h.mu.Unlock()
		if abandoned && h.err == nil {
			_ = h.lk.Unlock()
		}
	}()
	var bound <-chan time.Time
	if o.Wait > 0 {
		t := time.NewTimer(o.Wait)
		defer t.Stop()
		bound = t.C
	}
	select {
	case <-h.done:
		if h.err != nil {
			return lease, l.nodeErr("lock", fmt.Errorf("%w (the recipe may have left its node in the queue)", h.err))
		}
		return lease, nil
	case <-bound:
	case <-o.Stop:
	case <-ctx.Done():
	}
	return lease, l.nodeErr("lock", errors.New("gave up waiting; the recipe cannot be cancelled and waits on, giving the lock back if it gets it"))
}

// Release waits (up to ctx) for an acquire still waiting, then unlocks:
// ok, not held when the node is gone (the session expired), unknown
// otherwise. An acquire that failed or still waits is unknown.
func (l *zkNewLock) Release(ctx context.Context, lease Lease) error {
	l.mu.Lock()
	h := l.holds[lease.Token]
	delete(l.holds, lease.Token)
	l.mu.Unlock()
	if h == nil {
		return l.nodeErr("release", fmt.Errorf("no lease with token %s on this client", lease.Token))
	}
	select {
	case <-h.done:
	case <-ctx.Done():
		h.mu.Lock()
		h.abandoned = true
		h.mu.Unlock()
		select {
		case <-h.done: // granted meanwhile: fall through and unlock
		default:
			return l.nodeErr("release", fmt.Errorf("the recipe still waits for the lock (it gives it back if it gets it): %w", ctx.Err()))
		}
	}
	if h.err != nil {
		return l.nodeErr("release", fmt.Errorf("the acquire failed (%v): nothing the recipe can unlock", h.err))
	}
	err := zkCall(ctx, l.timeout, h.lk.Unlock)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, zk.ErrNoNode):
		return l.nodeErr("release", fmt.Errorf("the lock node is gone (the session expired): %w", ErrNotHeld))
	}
	return l.nodeErr("release", err)
}

// zkCall runs f, a go-zookeeper request, giving up after timeout or ctx:
// go-zookeeper has no deadline of its own. A request given up on may
// still take effect.
func zkCall(ctx context.Context, timeout time.Duration, f func() error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("no answer: %w", ctx.Err())
	}
}

// Close kills the client as a crash does: its connections are dropped
// without closing the session, whose nodes go when it expires.
func (l *zkNewLock) Close() error {
	l.gate.kill()
	l.conn.Close()
	return nil
}
