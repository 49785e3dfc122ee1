package locks

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"

	"github.com/lockharness/lockharness/sut"
)

var etcdInfo = Info{
	Name:        "etcd",
	System:      SystemEtcd,
	Description: "etcd's concurrency.Mutex (TryLock) over a session lease with a TTL (a lease per hold, kept alive every TTL/3); release deletes the key if it is still ours, then revokes the lease",
	MinNodes:    3,
	MaxNodes:    5,
	New:         func(nodes []sut.ClientNode, opts Options) (Lock, error) { return newEtcdLock(nodes, opts, false) },
}

var etcdFencedInfo = Info{
	Name:        "etcd-fenced",
	System:      SystemEtcd,
	Description: "the etcd lock with the lock key's create revision as fencing token, checked by the storage",
	MinNodes:    3,
	MaxNodes:    5,
	Fenced:      true,
	New:         func(nodes []sut.ClientNode, opts Options) (Lock, error) { return newEtcdLock(nodes, opts, true) },
}

// EtcdPrefix is where the etcd locks keep the waiters of key: each holder
// and waiter puts prefix/<lease id>, and the lowest create revision holds.
func EtcdPrefix(key string) string { return "/lockharness/lock/" + key }

// etcdLock is the lock etcd's own concurrency package offers, as its users
// write it: a session (a lease with a TTL that a client keeps alive) and a
// Mutex over it. The holder keeps the lock as long as the lease lives; a
// client that stops for longer than the TTL (a GC pause) loses it without
// knowing until it next speaks to etcd, and if it writes to the resource
// first, another holder's update is lost. With the fencing token (the key's
// create revision, which grows with every grant) the storage refuses the
// late write: Kleppmann's answer to Redlock, and what the etcd Jepsen
// analysis (2020) recommends.
//
// Each hold has its own lease, granted by Acquire, so the lease deadline in
// the history is what etcd promised: the instant before the last grant or
// keep-alive that etcd confirmed, plus the TTL it granted. The keep-alives
// are this lock's own loop behind the session (clientv3's Lease.KeepAlive,
// replaced on the client), one every TTL/3, so that the history sees each
// renewal as the watchdog lock's are seen (Options.OnRenew, stalled by the
// renewer-stall nemesis as a process-wide pause stalls them), and a renewal
// that etcd answers "lease not found" is recorded as what it is: the client
// learning it lost the lock. The session is then Done.
type etcdLock struct {
	cli     *clientv3.Client
	opts    Options
	fenced  bool
	ttl     int64         // seconds asked of etcd
	timeout time.Duration // one request
	nodes   string

	ctx    context.Context // cancelled by Close: a crash
	cancel context.CancelFunc

	mu    sync.Mutex
	holds map[string]*etcdHold // by lease token
	byID  map[clientv3.LeaseID]*etcdHold
}

// etcdHold is one lease and, once granted, the lock it holds.
type etcdHold struct {
	id    clientv3.LeaseID
	sess  *concurrency.Session
	mutex *concurrency.Mutex
	lease Lease         // key and token; fence once held
	done  chan struct{} // closed when the keep-alive loop has stopped

	// guarded by etcdLock.mu
	held      bool      // the mutex is ours: renewals are reported
	confirmed time.Time // before the last grant or keep-alive etcd confirmed
	granted   int64     // the TTL etcd granted, seconds
	lost      bool      // etcd said the lease is gone
}

func newEtcdLock(nodes []sut.ClientNode, opts Options, fenced bool) (Lock, error) {
	if len(nodes) == 0 {
		return nil, fmt.Errorf("etcd lock needs the members' addresses, got none")
	}
	var eps []string
	for _, n := range nodes {
		if n.Addr == "" {
			return nil, fmt.Errorf("etcd lock: node %s has no address", n.Name)
		}
		eps = append(eps, n.Addr)
	}
	opts = opts.WithDefaults()
	timeout := nodes[0].Timeout
	if timeout <= 0 {
		timeout = time.Second
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints: eps,
		// A stalled connection (a cut link) is given up once a keep-alive
		// ping goes unanswered for a second, and the balancer moves on;
		// gRPC sends them 10s apart at the least (it raises any shorter
		// time), so until then every third request goes to the cut-off
		// member and times out.
		DialKeepAliveTime:    10 * time.Second,
		DialKeepAliveTimeout: time.Second,
		Logger:               zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("etcd client for %v: %w", eps, err)
	}
	l := &etcdLock{cli: cli, opts: opts, fenced: fenced, timeout: timeout,
		ttl:   max(int64(math.Ceil(opts.TTL.Seconds())), 1),
		nodes: fmt.Sprintf("etcd(%d members)", len(nodes)),
		holds: map[string]*etcdHold{}, byID: map[clientv3.LeaseID]*etcdHold{}}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	cli.Lease = &etcdKeeper{Lease: cli.Lease, l: l}
	return l, nil
}

func (l *etcdLock) rpc(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, l.timeout)
}

func (l *etcdLock) nodeErr(op string, err error) error {
	return &NodeError{Node: l.nodes, Op: op, Err: err}
}

// Acquire grants a lease, opens a session on it and takes the mutex
// (TryLock, again and again for up to o.Wait). A refusal revokes the
// lease, leaving nothing behind.
func (l *etcdLock) Acquire(ctx context.Context, key string, o AcquireOptions) (Lease, error) {
	lease := Lease{Key: key, Token: newToken(l.opts.Rand)}
	h, err := l.newHold(ctx, lease)
	if err != nil {
		return lease, err
	}
	// Waiting is trying again: TryLock until it succeeds, fails with
	// something other than "locked", or o.Wait runs out. Mutex.Lock would
	// watch the predecessor instead, but when its wait is cancelled it
	// deletes its key under the client's own context, which has no
	// deadline: on a connection to a member that is cut off it was seen
	// to hang until the partition healed, long past the caller's deadline.
	_, err = retry(ctx, o, max(l.opts.RetryDelay, 25*time.Millisecond), l.opts.Rand, func() (Lease, error) {
		lctx, cancel := l.rpc(ctx)
		defer cancel()
		if err := h.mutex.TryLock(lctx); errors.Is(err, concurrency.ErrLocked) {
			return lease, ErrNotAcquired
		} else if err != nil {
			return lease, err
		}
		return lease, nil
	})
	if errors.Is(err, ErrNotAcquired) {
		// TryLock says "locked" only once it has deleted our key: the
		// refusal is definite. The lease holds nothing; revoke it, or let
		// it run out with its keep-alives stopped.
		_ = l.revoke(ctx, h)
		l.forget(h)
		return lease, l.nodeErr("lock", ErrNotAcquired)
	}
	if err != nil {
		return lease, l.nodeErr("lock", err) // unknown: Release revokes
	}
	if err := l.confirm(ctx, h); err != nil {
		return lease, err
	}
	l.mu.Lock()
	h.held = true
	if l.fenced {
		h.lease.Fence = createRevision(h.mutex)
	}
	h.lease.ValidUntil = h.confirmed.Add(time.Duration(h.granted) * time.Second)
	lease = h.lease
	l.mu.Unlock()
	return lease, nil
}

// newHold grants an etcd lease for an attempt at lease, registers the
// hold (so that Release finds it whatever the outcome) and opens its
// session and mutex on key. A grant that fails is a definite refusal.
func (l *etcdLock) newHold(ctx context.Context, lease Lease) (*etcdHold, error) {
	start := time.Now()
	gctx, cancel := l.rpc(ctx)
	g, err := l.cli.Grant(gctx, l.ttl)
	cancel()
	if err != nil {
		// A lease that was granted after all holds nothing and expires.
		return nil, l.nodeErr("grant", fmt.Errorf("%v: %w", err, ErrNotAcquired))
	}
	h := &etcdHold{id: g.ID, lease: lease, done: make(chan struct{}), confirmed: start, granted: g.TTL}
	l.mu.Lock()
	l.holds[lease.Token] = h
	l.byID[g.ID] = h
	l.mu.Unlock()
	// With the lease given, NewSession sends nothing: it starts the keep-
	// alive loop (etcdKeeper.KeepAlive).
	if h.sess, err = concurrency.NewSession(l.cli, concurrency.WithLease(g.ID), concurrency.WithContext(l.ctx)); err != nil {
		close(h.done)
		l.forget(h)
		return nil, l.nodeErr("session", err)
	}
	h.mutex = concurrency.NewMutex(h.sess, EtcdPrefix(lease.Key))
	return h, nil
}

// confirm renews the lease once more when the last confirmation is older
// than a renewal period, as after a long wait for the mutex or keep-alives
// that went unanswered while the leader changed: the deadline the holder
// is given is then the instant before this renewal plus the TTL, not one
// that may have passed already. etcd answering that the lease is gone
// means the key went with it: not acquired. A renewal that gets no answer
// leaves the older deadline, which is still a true lower bound.
func (l *etcdLock) confirm(ctx context.Context, h *etcdHold) error {
	l.mu.Lock()
	stale := time.Since(h.confirmed) > time.Duration(h.granted)*time.Second/3
	l.mu.Unlock()
	if !stale {
		return nil
	}
	if _, err := l.keepAliveOnce(ctx, h, h.lease); errors.Is(err, ErrNotHeld) {
		if rerr := l.revoke(ctx, h); rerr != nil && !errors.Is(rerr, rpctypes.ErrLeaseNotFound) {
			return l.nodeErr("revoke after losing the lease", rerr)
		}
		return l.nodeErr("lock", fmt.Errorf("the lease ran out while waiting for the lock: %w", ErrNotAcquired))
	}
	return nil
}

// createRevision is the revision that created the mutex's key: the
// fencing token. Grants follow the lowest create revision among live keys,
// and a new key's is higher than every earlier one, so they grow with the
// grants.
func createRevision(m *concurrency.Mutex) int64 {
	c := m.IsOwner()
	return c.GetCompare().GetCreateRevision()
}

// Release stops the keep-alive loop, deletes the key if it is still ours
// (a transaction comparing its create revision; ErrNotHeld when it is
// gone) and revokes the lease.
func (l *etcdLock) Release(ctx context.Context, lease Lease) error {
	l.mu.Lock()
	h := l.holds[lease.Token]
	l.mu.Unlock()
	if h == nil {
		return l.nodeErr("release", fmt.Errorf("no lease with token %s on this client", lease.Token))
	}
	l.stop(h)
	l.mu.Lock()
	held := h.held
	l.mu.Unlock()
	if !held {
		return l.releaseUnknown(ctx, h)
	}
	tctx, cancel := l.rpc(ctx)
	resp, err := l.cli.Txn(tctx).If(h.mutex.IsOwner()).Then(clientv3.OpDelete(h.mutex.Key())).Commit()
	cancel()
	if err == nil && !resp.Succeeded {
		_ = l.revoke(ctx, h)
		return l.nodeErr("release", ErrNotHeld)
	}
	rerr := l.revoke(ctx, h)
	switch {
	case err == nil:
		return nil // deleted; a failed revoke leaves a lease that holds nothing
	case errors.Is(rerr, rpctypes.ErrLeaseNotFound):
		return l.nodeErr("release", ErrNotHeld) // the lease, and with it the key, was gone
	case rerr == nil:
		// The lease lived until the revoke, and with it our key, which
		// owned the lock since the grant: the revoke released it.
		return nil
	}
	return l.nodeErr("release", err)
}

// releaseUnknown gives back whatever an acquire whose outcome is unknown
// left: nothing, a waiter's key, or the lock itself. It asks who owns the
// lock (the lowest create revision under the prefix): if our key does,
// the acquire took effect and the release deletes it (ok); if not, it
// revokes the lease, taking any waiter's key with it, and answers "not
// held", which is what it was when asked. A release must never answer ok
// for a lock it did not hold: the checker reads that as removing the
// holder's lock.
func (l *etcdLock) releaseUnknown(ctx context.Context, h *etcdHold) error {
	pfx := EtcdPrefix(h.lease.Key) + "/"
	mine := fmt.Sprintf("%s%x", pfx, h.id)
	gctx, cancel := l.rpc(ctx)
	resp, err := l.cli.Get(gctx, pfx, clientv3.WithFirstCreate()...)
	cancel()
	if err != nil {
		_ = l.revoke(ctx, h)
		return l.nodeErr("release", err)
	}
	if len(resp.Kvs) > 0 && string(resp.Kvs[0].Key) == mine {
		tctx, cancel := l.rpc(ctx)
		tr, err := l.cli.Txn(tctx).If(clientv3.Compare(clientv3.CreateRevision(mine), "=", resp.Kvs[0].CreateRevision)).
			Then(clientv3.OpDelete(mine)).Commit()
		cancel()
		_ = l.revoke(ctx, h)
		switch {
		case err != nil:
			return l.nodeErr("release", err)
		case !tr.Succeeded:
			return l.nodeErr("release", ErrNotHeld)
		}
		return nil
	}
	if rerr := l.revoke(ctx, h); rerr != nil && !errors.Is(rerr, rpctypes.ErrLeaseNotFound) {
		// A waiter's key may live on, and own the lock for nobody until
		// the lease runs out: the release's effect is unknown.
		return l.nodeErr("release", rerr)
	}
	return l.nodeErr("release", fmt.Errorf("the acquire had not taken the lock: %w", ErrNotHeld))
}

// revoke ends the hold's lease (and every key on it) and forgets the hold.
func (l *etcdLock) revoke(ctx context.Context, h *etcdHold) error {
	l.stop(h)
	rctx, cancel := l.rpc(ctx)
	_, err := l.cli.Revoke(rctx, h.id)
	cancel()
	if err == nil || errors.Is(err, rpctypes.ErrLeaseNotFound) {
		l.forget(h)
	}
	return err
}

// stop ends the hold's keep-alive loop and waits for it, so that no
// renewal follows the release.
func (l *etcdLock) stop(h *etcdHold) {
	h.sess.Orphan()
	<-h.done
}

func (l *etcdLock) forget(h *etcdHold) {
	l.mu.Lock()
	delete(l.holds, h.lease.Token)
	delete(l.byID, h.id)
	l.mu.Unlock()
}

// Renew asks etcd to keep the lease alive now, as the careful client's
// "do I still hold it?": ErrNotHeld when etcd says the lease is gone.
func (l *etcdLock) Renew(ctx context.Context, lease Lease) (Lease, error) {
	l.mu.Lock()
	h := l.holds[lease.Token]
	l.mu.Unlock()
	if h == nil {
		return lease, l.nodeErr("renew", fmt.Errorf("no lease with token %s on this client", lease.Token))
	}
	return l.keepAliveOnce(ctx, h, lease)
}

// keepAliveOnce sends one keep-alive for h and returns the lease extended
// from the instant before it was sent, or ErrNotHeld when etcd says the
// lease is gone.
func (l *etcdLock) keepAliveOnce(ctx context.Context, h *etcdHold, lease Lease) (Lease, error) {
	start := time.Now()
	kctx, cancel := l.rpc(ctx)
	resp, err := l.cli.Lease.(*etcdKeeper).Lease.KeepAliveOnce(kctx, h.id)
	cancel()
	l.mu.Lock()
	defer l.mu.Unlock()
	if errors.Is(err, rpctypes.ErrLeaseNotFound) {
		h.lost = true
		return lease, l.nodeErr("keep-alive", fmt.Errorf("%v: %w", err, ErrNotHeld))
	}
	if err != nil {
		return lease, l.nodeErr("keep-alive", err)
	}
	if start.After(h.confirmed) {
		h.confirmed, h.granted = start, resp.TTL
	}
	lease.ValidUntil = start.Add(time.Duration(resp.TTL) * time.Second)
	return lease, nil
}

// Close kills the client at once without releasing: its leases run out
// within a TTL, as after a crash.
func (l *etcdLock) Close() error {
	l.cancel()
	l.mu.Lock()
	hs := make([]*etcdHold, 0, len(l.holds))
	for _, h := range l.holds {
		hs = append(hs, h)
	}
	l.mu.Unlock()
	for _, h := range hs {
		if h.sess != nil {
			<-h.done
		}
	}
	return l.cli.Close()
}

// etcdKeeper is the client's Lease with this lock's own keep-alive loop in
// place of clientv3's stream: same period (TTL/3), but each renewal is
// visible to the harness (reported through Options.OnRenew while the lock
// is held) and the loop stops with the hold.
type etcdKeeper struct {
	clientv3.Lease
	l *etcdLock
}

// KeepAlive starts the loop for a lease this lock granted; the session
// reads the channel and is Done when it closes: the lease is gone, or the
// hold was released or orphaned.
func (k *etcdKeeper) KeepAlive(ctx context.Context, id clientv3.LeaseID) (<-chan *clientv3.LeaseKeepAliveResponse, error) {
	k.l.mu.Lock()
	h := k.l.byID[id]
	k.l.mu.Unlock()
	if h == nil {
		return k.Lease.KeepAlive(ctx, id)
	}
	ch := make(chan *clientv3.LeaseKeepAliveResponse, 1)
	go k.l.keepAlive(ctx, h, ch)
	return ch, nil
}

func (l *etcdLock) keepAlive(ctx context.Context, h *etcdHold, ch chan<- *clientv3.LeaseKeepAliveResponse) {
	defer close(h.done)
	defer close(ch)
	for {
		l.mu.Lock()
		period := time.Duration(h.granted) * time.Second / 3
		l.mu.Unlock()
		t := time.NewTimer(period)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		l.mu.Lock()
		held, lease := h.held, h.lease
		l.mu.Unlock()
		var report func(Lease, error)
		if held && l.opts.OnRenew != nil {
			report = l.opts.OnRenew(lease.Key)
		}
		// Sent whatever happened while the report was held up, as a
		// process that resumes sends the renewal it was about to send.
		next, err := l.keepAliveOnce(context.WithoutCancel(ctx), h, lease)
		if report != nil {
			report(next, err)
		}
		if errors.Is(err, ErrNotHeld) {
			return // the session is Done
		}
		if err == nil {
			select {
			case ch <- &clientv3.LeaseKeepAliveResponse{ID: h.id}:
			default:
			}
		}
	}
}
