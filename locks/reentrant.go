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

var reentrantInfo = Info{
	Name:        "reentrant",
	Description: "Redisson-style: a hash owner→count in Lua, a watchdog renewing every TTL/3 while held, waiters woken through pub/sub",
	MaxNodes:    1,
	New:         newReentrant,
}

// The scripts follow Redisson's RedissonLock (tryLockInnerAsync,
// unlockInnerAsync, renewExpirationAsync): the key is a hash from owner id
// to hold count.
var (
	// reentrantLock returns nil when the owner now holds the key, or the
	// key's PTTL when someone else does.
	reentrantLock = redis.NewScript(`
if redis.call("exists", KEYS[1]) == 0 then
  redis.call("hincrby", KEYS[1], ARGV[2], 1)
  redis.call("pexpire", KEYS[1], ARGV[1])
  return nil
end
if redis.call("hexists", KEYS[1], ARGV[2]) == 1 then
  redis.call("hincrby", KEYS[1], ARGV[2], 1)
  redis.call("pexpire", KEYS[1], ARGV[1])
  return nil
end
return redis.call("pttl", KEYS[1])`)

	// reentrantUnlock returns nil when the owner does not hold the key, 0
	// when it still does (count decremented, expiry reset), 1 when the count
	// reached zero: the key is deleted and waiters are told on the channel.
	reentrantUnlock = redis.NewScript(`
if redis.call("hexists", KEYS[1], ARGV[3]) == 0 then
  return nil
end
local counter = redis.call("hincrby", KEYS[1], ARGV[3], -1)
if counter > 0 then
  redis.call("pexpire", KEYS[1], ARGV[2])
  return 0
end
redis.call("del", KEYS[1])
redis.call("publish", KEYS[2], ARGV[1])
return 1`)

	// reentrantRenew extends the key if the owner still holds it.
	reentrantRenew = redis.NewScript(`
if redis.call("hexists", KEYS[1], ARGV[2]) == 1 then
  return redis.call("pexpire", KEYS[1], ARGV[1])
end
return 0`)
)

// unlockMessage is what the release publishes (Redisson's UNLOCK_MESSAGE).
const unlockMessage = "0"

// ReentrantChannel is the pub/sub channel on which the reentrant lock's
// release of key wakes the waiters (Redisson's naming).
func ReentrantChannel(key string) string { return "redisson_lock__channel:{" + key + "}" }

// reentrant is a Redisson RLock: one owner id per lock instance (Redisson's
// client UUID plus thread id; a lock instance here is one client with one
// thread), so the same client can take the lock again and must release it as
// many times. While held, a watchdog renews the key every TTL/3; it stops
// when the last hold is released, when a renewal fails (the lease is then
// lost), or when the client dies (Close).
type reentrant struct {
	node  sut.ClientNode
	opts  Options
	owner string

	ctx    context.Context // the client's life; Close cancels it
	cancel context.CancelFunc

	mu    sync.Mutex
	holds map[string]*hold
}

// hold is this client's hold on one key.
type hold struct {
	count int
	stop  chan struct{} // closed to stop the watchdog
	done  chan struct{} // closed when the watchdog has stopped
	lost  bool          // the watchdog failed to renew: the lease is gone
}

func newReentrant(nodes []sut.ClientNode, opts Options) (Lock, error) {
	if len(nodes) != 1 {
		return nil, fmt.Errorf("reentrant lock needs exactly 1 node, got %d", len(nodes))
	}
	opts = opts.WithDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	return &reentrant{
		node: nodes[0], opts: opts,
		owner: newToken(opts.Rand) + ":1",
		ctx:   ctx, cancel: cancel,
		holds: map[string]*hold{},
	}, nil
}

// Owner is the id this instance writes into the hash.
func (l *reentrant) Owner() string { return l.owner }

// tryOnce runs the lock script once. It returns the key's PTTL with
// ErrNotAcquired when another owner holds it.
func (l *reentrant) tryOnce(ctx context.Context, key string) (Lease, time.Duration, error) {
	lease := Lease{Key: key, Token: l.owner}
	start := time.Now()
	pttl, err := reentrantLock.Run(ctx, l.node.Client, []string{key}, l.opts.TTL.Milliseconds(), l.owner).Int64()
	if errors.Is(err, redis.Nil) {
		lease.ValidUntil = start.Add(l.opts.TTL)
		l.held(key)
		return lease, 0, nil
	}
	if err != nil {
		return lease, 0, &NodeError{Node: l.node.Name, Op: "lock script", Err: err}
	}
	return lease, time.Duration(pttl) * time.Millisecond, ErrNotAcquired
}

// held counts a successful acquire and starts the watchdog on the first.
func (l *reentrant) held(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	h := l.holds[key]
	if h != nil && h.lost {
		// The watchdog gave up: whatever Redis held for us before is gone
		// or about to be; this grant starts afresh.
		delete(l.holds, key)
		h = nil
	}
	if h != nil {
		h.count++
		return
	}
	h = &hold{count: 1, stop: make(chan struct{}), done: make(chan struct{})}
	l.holds[key] = h
	go l.watchdog(key, h)
}

// Acquire takes the lock, or waits for it: after a first failed try it
// subscribes to the key's channel and tries again whenever a release is
// published there, or when the holder's PTTL has run out, whichever comes
// first, until opts.Wait has passed.
func (l *reentrant) Acquire(ctx context.Context, key string, o AcquireOptions) (Lease, error) {
	lease, _, err := l.tryOnce(ctx, key)
	if err == nil || o.Wait <= 0 || !errors.Is(err, ErrNotAcquired) {
		return lease, err
	}
	deadline := time.Now().Add(o.Wait)
	ps := l.node.Client.Subscribe(ctx, ReentrantChannel(key))
	defer ps.Close()
	if _, serr := ps.Receive(ctx); serr != nil {
		// Only the refused try reached the lock: nothing is held.
		return lease, fmt.Errorf("%w (cannot wait: %v)", err, &NodeError{Node: l.node.Name, Op: "SUBSCRIBE", Err: serr})
	}
	msgs := ps.Channel()
	for {
		// Try again now that we are subscribed: a release between the first
		// try and the subscription would otherwise go unheard.
		var pttl time.Duration
		lease, pttl, err = l.tryOnce(ctx, key)
		if err == nil || !errors.Is(err, ErrNotAcquired) {
			return lease, err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return lease, err
		}
		d := left
		if pttl > 0 && pttl < d {
			d = pttl
		}
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return lease, err
		case <-o.Stop:
			t.Stop()
			return lease, err
		case <-msgs:
		case <-t.C:
		}
		t.Stop()
	}
}

// Release gives one hold up. The watchdog stops when the last one goes,
// before the unlock is sent, so no renewal can follow it.
func (l *reentrant) Release(ctx context.Context, lease Lease) error {
	if lease.Token != l.owner {
		// A lease of another owner: send it anyway, Redis refuses it.
		return l.unlock(ctx, lease.Key, lease.Token)
	}
	l.mu.Lock()
	h := l.holds[lease.Key]
	if h != nil {
		h.count--
		if h.count <= 0 {
			delete(l.holds, lease.Key)
		} else {
			h = nil
		}
	}
	l.mu.Unlock()
	if h != nil {
		close(h.stop)
		<-h.done
	}
	return l.unlock(ctx, lease.Key, l.owner)
}

func (l *reentrant) unlock(ctx context.Context, key, owner string) error {
	_, err := reentrantUnlock.Run(ctx, l.node.Client, []string{key, ReentrantChannel(key)}, unlockMessage, l.opts.TTL.Milliseconds(), owner).Int64()
	if errors.Is(err, redis.Nil) {
		return &NodeError{Node: l.node.Name, Op: "unlock script", Err: ErrNotHeld}
	}
	if err != nil {
		return &NodeError{Node: l.node.Name, Op: "unlock script", Err: err}
	}
	return nil
}

// Renew extends the lease by hand, as the watchdog does.
func (l *reentrant) Renew(ctx context.Context, lease Lease) (Lease, error) {
	return l.renew(ctx, lease)
}

func (l *reentrant) renew(ctx context.Context, lease Lease) (Lease, error) {
	start := time.Now()
	if err := runCompare(ctx, l.node, reentrantRenew, "renew script", lease.Key, l.opts.TTL.Milliseconds(), lease.Token); err != nil {
		return lease, err
	}
	lease.ValidUntil = start.Add(l.opts.TTL)
	return lease, nil
}

// watchdog renews key every TTL/3 until stopped, until the client dies, or
// until a renewal fails: then the hold is marked lost and the lease runs
// out at its last deadline.
func (l *reentrant) watchdog(key string, h *hold) {
	defer close(h.done)
	t := time.NewTicker(l.opts.TTL / 3)
	defer t.Stop()
	lease := Lease{Key: key, Token: l.owner}
	for {
		select {
		case <-h.stop:
			return
		case <-l.ctx.Done():
			return
		case <-t.C:
		}
		var report func(Lease, error)
		if l.opts.OnRenew != nil {
			report = l.opts.OnRenew(key)
		}
		next, err := l.renew(l.ctx, lease)
		if report != nil {
			report(next, err)
		}
		if err != nil {
			l.mu.Lock()
			h.lost = true
			l.mu.Unlock()
			return
		}
		lease = next
	}
}

// Close kills the client's background work at once, without releasing
// anything: held keys expire within a TTL, as after a crash.
func (l *reentrant) Close() error {
	l.cancel()
	l.mu.Lock()
	holds := make([]*hold, 0, len(l.holds))
	for _, h := range l.holds {
		holds = append(holds, h)
	}
	l.holds = map[string]*hold{}
	l.mu.Unlock()
	for _, h := range holds {
		<-h.done
	}
	return nil
}
