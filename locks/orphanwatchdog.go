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

// WithDeliberateBugs returns the built-in locks plus the deliberately buggy
// variants that reproduce one library bug each for the catalogue. They are
// kept out of Builtin so that what runs against "every lock" (the
// mutual-exclusion tests, `--locks all`) stays the locks people use; a
// scenario that needs one sets its Config.Registry to this.
func WithDeliberateBugs() *Registry {
	r := Builtin()
	if err := r.Register(orphanWatchdogInfo); err != nil {
		panic(err) // a programming error in this package, caught by its tests
	}
	return r
}

var orphanWatchdogInfo = Info{
	Name: "reentrant-orphan-watchdog",
	Description: "deliberately buggy: the Redisson pattern of redisson#7272, an acquire whose caller stopped waiting " +
		"is granted later and its watchdog renews a lock nobody will release",
	MaxNodes: 1,
	New:      newOrphanWatchdog,
}

// errStoppedWaiting is what a caller of the orphan-watchdog lock gets when
// it stops waiting while the lock's wait for the key goes on: the outcome
// is unknown (the wait may still be granted), which is the truth.
var errStoppedWaiting = errors.New("stopped waiting for the lock; the wait goes on in the background")

// orphanWatchdog reproduces redisson/redisson#7272 ("Watchdog renewal can
// outlive unlock(): cancelLockRenewal races the acquire's async
// scheduleExpirationRenewal"). It is the reentrant lock's scripts (the
// owner→count hash, the hexists-guarded renewal, the unlock that deletes
// and publishes) driven the way Redisson's asynchronous API drives them:
//
//   - An acquire that may wait runs in the background on the client's own
//     life, not the caller's (RedissonLock.lockAsync and tryLockAsync: a
//     try, then a subscription and a try on every release message or when
//     the holder's PTTL runs out). A caller that stops waiting (its wait
//     is over, lockInterruptibly is interrupted) gets an unknown outcome,
//     but nothing cancels the wait: it may still be granted.
//   - The watchdog is armed by the grant's completion callback
//     (tryAcquireAsync's thenApply → scheduleExpirationRenewal), whoever
//     still waits for it; unlock cancels only a watchdog already armed
//     (cancelExpirationRenewal finds no entry and does nothing).
//   - Each acquire runs as its own owner (Redisson's client id plus the
//     thread id: the async API's callers run on pool threads), so a later
//     acquire of the same client is no re-entry of an orphan.
//
// A caller that gave up releases what it asked for (the workload does, for
// an unknown outcome): the unlock finds no hold (the wait has not been
// granted yet) and cancels no watchdog. When the holder's release wakes the
// background wait, it is granted, arms a watchdog, and that watchdog renews
// every TTL/3, successfully, a key whose owner no caller knows of: nobody
// acquires it again until the client is closed. That is the orphan the
// harness must report (a liveness finding: one holder at a time, always).
// The correct lock is "reentrant": its wait runs in the caller and its
// watchdog is armed before the grant is returned.
type orphanWatchdog struct {
	node sut.ClientNode
	opts Options
	base string // the client id; owners are base:call

	ctx    context.Context // the client's life; Close cancels it
	cancel context.CancelFunc
	wg     sync.WaitGroup // background waits and watchdogs

	mu        sync.Mutex
	calls     int
	watchdogs map[string]chan struct{} // owner → stop, once armed
	wakers    map[string]*waker        // key → release messages
}

// waker broadcasts the release messages of one key's channel to every
// background wait of the client (Redisson shares one subscription per
// channel among its waiters).
type waker struct {
	mu   sync.Mutex
	wake chan struct{} // closed and replaced on each message
}

func (w *waker) next() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.wake
}

func (w *waker) fire() {
	w.mu.Lock()
	defer w.mu.Unlock()
	close(w.wake)
	w.wake = make(chan struct{})
}

func newOrphanWatchdog(nodes []sut.ClientNode, opts Options) (Lock, error) {
	if len(nodes) != 1 {
		return nil, fmt.Errorf("reentrant-orphan-watchdog lock needs exactly 1 node, got %d", len(nodes))
	}
	opts = opts.WithDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	return &orphanWatchdog{
		node: nodes[0], opts: opts, base: newToken(opts.Rand),
		ctx: ctx, cancel: cancel,
		watchdogs: map[string]chan struct{}{}, wakers: map[string]*waker{},
	}, nil
}

// try runs the lock script once for owner; on a grant it arms the
// watchdog, as the grant's completion callback does.
func (l *orphanWatchdog) try(ctx context.Context, key, owner string) (Lease, time.Duration, error) {
	lease := Lease{Key: key, Token: owner}
	start := time.Now()
	pttl, err := reentrantLock.Run(ctx, l.node.Client, []string{key}, l.opts.TTL.Milliseconds(), owner).Int64()
	if errors.Is(err, redis.Nil) {
		lease.ValidUntil = start.Add(l.opts.TTL)
		l.arm(key, owner)
		return lease, 0, nil
	}
	if err != nil {
		return lease, 0, &NodeError{Node: l.node.Name, Op: "lock script", Err: err}
	}
	return lease, time.Duration(pttl) * time.Millisecond, ErrNotAcquired
}

// Acquire with a wait runs the whole acquisition in the background, as
// lockAsync does (the first try included), and waits for it at most o.Wait;
// without a wait it tries once, in the caller.
func (l *orphanWatchdog) Acquire(ctx context.Context, key string, o AcquireOptions) (Lease, error) {
	l.mu.Lock()
	l.calls++
	owner := fmt.Sprintf("%s:%d", l.base, l.calls)
	l.mu.Unlock()
	if o.Wait <= 0 {
		lease, _, err := l.try(ctx, key, owner)
		return lease, err
	}
	lease := Lease{Key: key, Token: owner}
	w, err := l.waker(key)
	if err != nil {
		return lease, err
	}
	granted := make(chan Lease, 1)
	failed := make(chan error, 1)
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		l.wait(key, owner, w, granted, failed)
	}()
	t := time.NewTimer(o.Wait)
	defer t.Stop()
	select {
	case g := <-granted:
		return g, nil
	case err := <-failed:
		return lease, err
	case <-t.C:
	case <-o.Stop:
	case <-ctx.Done():
	}
	// The caller stops waiting; the background wait does not (the bug). A
	// grant that came just now is still the caller's.
	select {
	case g := <-granted:
		return g, nil
	default:
	}
	return lease, &NodeError{Node: l.node.Name, Op: "lock wait", Err: errStoppedWaiting}
}

// wait tries the lock script for owner, then again on every release
// message of key and whenever the holder's PTTL has run out, until it is
// granted or the client dies. The grant goes to granted, where its caller
// may no longer listen; a try that fails with a node error ends the wait
// (failed), as Redisson's future completes exceptionally.
func (l *orphanWatchdog) wait(key, owner string, w *waker, granted chan<- Lease, failed chan<- error) {
	for {
		wake := w.next()
		lease, pttl, err := l.try(l.ctx, key, owner)
		if err == nil {
			granted <- lease // buffered: never blocks
			return
		}
		if !errors.Is(err, ErrNotAcquired) {
			failed <- err // buffered
			return
		}
		if pttl <= 0 {
			pttl = l.opts.TTL
		}
		t := time.NewTimer(pttl)
		select {
		case <-l.ctx.Done():
			t.Stop()
			return
		case <-wake:
		case <-t.C:
		}
		t.Stop()
	}
}

// waker returns key's broadcaster, subscribing to its channel on first use.
func (l *orphanWatchdog) waker(key string) (*waker, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if w := l.wakers[key]; w != nil {
		return w, nil
	}
	ps := l.node.Client.Subscribe(l.ctx, ReentrantChannel(key))
	if _, err := ps.Receive(l.ctx); err != nil {
		_ = ps.Close()
		return nil, &NodeError{Node: l.node.Name, Op: "SUBSCRIBE", Err: err}
	}
	w := &waker{wake: make(chan struct{})}
	l.wakers[key] = w
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		defer ps.Close()
		msgs := ps.Channel()
		for {
			select {
			case <-l.ctx.Done():
				return
			case _, ok := <-msgs:
				if !ok {
					return
				}
				w.fire()
			}
		}
	}()
	return w, nil
}

// arm starts owner's watchdog on key: the grant's completion callback.
func (l *orphanWatchdog) arm(key, owner string) {
	stop := make(chan struct{})
	l.mu.Lock()
	l.watchdogs[owner] = stop
	l.mu.Unlock()
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		l.watchdog(key, owner, stop)
	}()
}

// Release cancels owner's watchdog if it is armed (nothing otherwise), and
// sends the unlock.
func (l *orphanWatchdog) Release(ctx context.Context, lease Lease) error {
	l.mu.Lock()
	if stop := l.watchdogs[lease.Token]; stop != nil {
		close(stop)
		delete(l.watchdogs, lease.Token)
	}
	l.mu.Unlock()
	_, err := reentrantUnlock.Run(ctx, l.node.Client, []string{lease.Key, ReentrantChannel(lease.Key)}, unlockMessage, l.opts.TTL.Milliseconds(), lease.Token).Int64()
	if errors.Is(err, redis.Nil) {
		return &NodeError{Node: l.node.Name, Op: "unlock script", Err: ErrNotHeld}
	}
	if err != nil {
		return &NodeError{Node: l.node.Name, Op: "unlock script", Err: err}
	}
	return nil
}

// Renew extends the lease by hand, as the watchdog does.
func (l *orphanWatchdog) Renew(ctx context.Context, lease Lease) (Lease, error) {
	start := time.Now()
	if err := runCompare(ctx, l.node, reentrantRenew, "renew script", lease.Key, l.opts.TTL.Milliseconds(), lease.Token); err != nil {
		return lease, err
	}
	lease.ValidUntil = start.Add(l.opts.TTL)
	return lease, nil
}

// watchdog renews owner's hold on key every TTL/3 until stopped, until the
// client dies, or until a renewal fails.
func (l *orphanWatchdog) watchdog(key, owner string, stop <-chan struct{}) {
	t := time.NewTicker(l.opts.TTL / 3)
	defer t.Stop()
	lease := Lease{Key: key, Token: owner}
	for {
		select {
		case <-stop:
			return
		case <-l.ctx.Done():
			return
		case <-t.C:
		}
		var report func(Lease, error)
		if l.opts.OnRenew != nil {
			report = l.opts.OnRenew(key)
		}
		next, err := l.Renew(l.ctx, lease)
		if report != nil {
			report(next, err)
		}
		if err != nil {
			l.mu.Lock()
			if l.watchdogs[owner] == stop {
				delete(l.watchdogs, owner)
			}
			l.mu.Unlock()
			return
		}
		lease = next
	}
}

// Close kills the client's background work (waits, watchdogs) at once,
// without releasing anything: held keys expire within a TTL.
func (l *orphanWatchdog) Close() error {
	l.cancel()
	l.wg.Wait()
	return nil
}
