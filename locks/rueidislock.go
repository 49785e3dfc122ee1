package locks

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"

	"github.com/lockharness/lockharness/sut"
)

// rueidislockVersion is the version go.mod pins; the scripts the hook
// recognises (rueidisScripts) are that version's.
const rueidislockVersion = "v1.0.79"

var rueidislockInfo = Info{
	Name: "rueidislock",
	Description: "redis/rueidis's rueidislock " + rueidislockVersion + " on one node (KeyMajority 1): SET NX PXAT in Lua with the library's own random value, " +
		"auto-extended every validity/2 (PEXPIREAT), waiters woken by client-side caching invalidations; reported renewals are the library's own",
	MaxNodes: 1,
	New:      newRueidislock,
}

// rueidisLock runs github.com/redis/rueidis/rueidislock as its users do:
// its own rueidis client (RESP3, client-side caching with OPTOUT NOLOOP
// tracking, the library's default retries) dialled at the client's own
// link, KeyValidity = the TTL, the library's ExtendInterval (validity/2)
// and its own auto-extension.
//
// Mechanism (read from the library's source): a lock on name is
// KeyMajority·2−1 keys "rueidislock:i:name"; each is taken by a Lua
// script SET NX PXAT deadline (the deadline computed on the client's wall
// clock before the request, validity from then) followed by a GET, which
// makes the server track the key for this client. A majority held within
// the validity is the lock. While held, one goroutine per key extends it
// every ExtendInterval (compare the value, PEXPIREAT now+validity) and, on
// an invalidation of the key (someone else wrote it), checks it at once;
// a failed or refused extension cancels the lock's context and deletes
// the key (compare and delete). A waiter (WithContext) sleeps until an
// invalidation of the key, not a poll. There is no fencing token, and the
// lease is only as good as the client's and server's clocks agree (PXAT).
// With one Redis node the README's KeyMajority 1 applies: one key, and
// TryNextAfter (a try's request timeout, "try the next key") is the
// node's request timeout, there being no next key.
//
// The library hides its value and its extensions, so the adapter hooks its
// client (rueidisHook): it sees every script the library sends, takes the
// lease's deadline from the PXAT/PEXPIREAT argument (the library's own
// promise, truncated to the millisecond as the server sees it), reports
// each extension that moves the deadline as a renewal (Options.OnRenew,
// before it is sent, so a stalled renewer holds the extension back as a
// stopped process would; the check on an invalidation moves nothing and
// is not one), and reads the outcome of the library's compare-and-delete
// for Release. It follows the scripts by the library's value, which they
// compare, not by the lock's name (see rueidisHook).
type rueidisLock struct {
	node    sut.ClientNode
	opts    Options
	locker  rueidislock.Locker
	hook    *rueidisHook
	timeout time.Duration
	// unknown holds the tokens of acquires whose outcome is unknown, until
	// released (the workload releases every one).
	unknown map[string]bool
}

func newRueidislock(nodes []sut.ClientNode, opts Options) (Lock, error) {
	if len(nodes) != 1 {
		return nil, fmt.Errorf("rueidislock lock needs exactly 1 node, got %d", len(nodes))
	}
	if nodes[0].Addr == "" {
		return nil, fmt.Errorf("rueidislock lock: node %s has no address", nodes[0].Name)
	}
	opts = opts.WithDefaults()
	timeout := nodes[0].Timeout
	if timeout <= 0 {
		timeout = sut.ClientOptions{}.WithDefaults().Timeout
	}
	l := &rueidisLock{node: nodes[0], opts: opts, timeout: timeout, unknown: map[string]bool{}}
	l.hook = &rueidisHook{opts: opts, holds: map[string]*rueidisHold{}, byToken: map[string]*rueidisHold{}, tries: map[string]*rueidisTry{}}
	lo := rueidislock.LockerOption{
		ClientOption: rueidis.ClientOption{
			InitAddress:       []string{nodes[0].Addr},
			ForceSingleClient: true,
			ConnWriteTimeout:  timeout,
			Dialer:            netDialer(timeout),
		},
		ClientBuilder: func(o rueidis.ClientOption) (rueidis.Client, error) {
			c, err := rueidis.NewClient(o)
			if err != nil {
				return nil, err
			}
			l.hook.Client = c
			return l.hook, nil
		},
		KeyValidity:    opts.TTL,
		KeyMajority:    1,
		TryNextAfter:   timeout,
		NoLoopTracking: true, // Redis >= 7.0.5, as the README advises
	}
	locker, err := rueidislock.NewLocker(lo)
	// rueidis dials and does its handshake (HELLO, CLIENT TRACKING) at
	// once, within the node's request timeout; on this loaded 2-core
	// machine that timed out now and then (5 of 60 runs at load 25-30,
	// 2026-11-27), which lost the run's evidence. Nothing is locked yet: a
	// timed-out setup is tried again, as a user starting a service would.
	for try := 1; try < rueidisSetupTries && err != nil && rueidisSetupTimedOut(err); try++ {
		locker, err = rueidislock.NewLocker(lo)
	}
	if err != nil {
		return nil, fmt.Errorf("rueidislock client for %s (%s): %w", nodes[0].Name, nodes[0].Addr, err)
	}
	l.locker = locker
	return l, nil
}

// rueidisSetupTries bounds the tries at setting the client up.
const rueidisSetupTries = 3

// rueidisSetupTimedOut reports whether err is a dial's or a handshake's timeout.
func rueidisSetupTimedOut(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

func (l *rueidisLock) nodeErr(op string, err error) error {
	return &NodeError{Node: l.node.Name, Op: "rueidislock " + op, Err: err}
}

// Acquire takes key with TryWithContext (Wait 0) or WithContext (waiting
// for invalidations up to o.Wait). The library ties the lock's life to the
// context it is given, so the wait is bounded by a context of its own that
// ends with o.Wait, o.Stop or ctx only until the lock is granted.
func (l *rueidisLock) Acquire(ctx context.Context, key string, o AcquireOptions) (Lease, error) {
	lease := Lease{Key: key, Token: newToken(l.opts.Rand)}
	start := time.Now()
	l.hook.beginTry(lease)
	src, settle := waitContext(ctx, o)
	var cancel context.CancelFunc
	var err error
	if o.Wait <= 0 {
		_, cancel, err = l.locker.TryWithContext(src, key)
	} else {
		_, cancel, err = l.locker.WithContext(src, key)
	}
	ended := settle()
	try := l.hook.endTry(key, err == nil)
	if err == nil && try.hold == nil {
		// Not seen to happen: the hook saw no try granted, so it could not
		// follow the lock; give it up, its outcome unknown.
		cancel()
		err = errors.New("the library granted a lock the hook saw no granted try for")
	}
	if err != nil {
		err = l.acquireErr(err, try)
		if !errors.Is(err, ErrNotAcquired) {
			l.unknown[lease.Token] = true
		}
		return lease, err
	}
	lease.ValidUntil = start.Add(l.opts.TTL - time.Millisecond)
	if !try.deadline.IsZero() && try.deadline.Before(lease.ValidUntil) {
		lease.ValidUntil = try.deadline
	}
	lease = l.hook.grant(try.hold, lease, try.deadline, cancel)
	if ended {
		// The wait ended as the lock was granted: the library has been
		// told to give it up. Release reports how that went.
		return lease, l.nodeErr("acquire", errors.New("granted as the wait ended; the library gives it up at once"))
	}
	return lease, nil
}

// acquireErr classifies a refused acquire: not acquired only when the
// server's last answer to this attempt was "the key is held" (the SET NX
// returned nil); a timeout, a closed client or a wait that ended after a
// try with no answer are unknown (the library deletes what such a try may
// have set, but whether that worked is not known).
func (l *rueidisLock) acquireErr(err error, try rueidisTry) error {
	if try.heldByOther && (errors.Is(err, rueidislock.ErrNotLocked) || errors.Is(err, context.Canceled)) {
		return l.nodeErr("acquire", fmt.Errorf("%w: %w", ErrNotAcquired, err))
	}
	if try.lastErr != nil {
		err = fmt.Errorf("%w (last try: %w)", err, try.lastErr)
	}
	return l.nodeErr("acquire", err)
}

// waitContext returns the context the library's lock lives in and a
// function, settle, that stops ctx, o.Wait and o.Stop from ending it,
// reporting whether one of them already had. Whether one had is decided
// under a lock with the cancellation itself: an end that comes as settle
// runs (o.Stop closed, ctx done, the timer fired, but its goroutine not
// yet run) either cancelled the lock's context before settle, which then
// reports it, or never cancels it. Without that, a lock granted as the run
// stopped was returned as held and then given up by the library a moment
// later, on a cancellation nobody reported: a lease lost at once, found
// by the checker as a lost lease (seen under load, 2026-11-27).
func waitContext(ctx context.Context, o AcquireOptions) (context.Context, func() bool) {
	src, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	settled, ended := false, false
	end := func() {
		mu.Lock()
		defer mu.Unlock()
		if !settled {
			ended = true
			cancel()
		}
	}
	stopCtx := context.AfterFunc(ctx, end)
	var timer *time.Timer
	if o.Wait > 0 {
		timer = time.AfterFunc(o.Wait, end)
	}
	done := make(chan struct{})
	if o.Stop != nil {
		go func() {
			select {
			case <-o.Stop:
				end()
			case <-done:
			}
		}()
	}
	return src, func() bool {
		mu.Lock()
		settled = true
		mu.Unlock()
		stopCtx()
		if timer != nil {
			timer.Stop()
		}
		close(done)
		return ended
	}
}

// Release cancels the lock's context, which makes the library delete its
// key (compare and delete) and waits for it: ok when the delete removed
// the key, not held when the key was no longer this client's (or the
// library had already found it lost, or given it up on its own after an
// extension failed), unknown otherwise.
func (l *rueidisLock) Release(ctx context.Context, lease Lease) error {
	h := l.hook.find(lease)
	if h == nil && l.unknown[lease.Token] {
		delete(l.unknown, lease.Token)
		return l.nodeErr("release", errors.New("the acquire's outcome was unknown; the library deleted what it may have set, with no answer kept"))
	}
	if h == nil {
		// The library's value is its own: a lease this client never
		// tried for cannot be a key it holds.
		return l.nodeErr("release", fmt.Errorf("no lease with token %s on this client: %w", lease.Token, ErrNotHeld))
	}
	h.mu.Lock()
	h.releasing = true
	h.mu.Unlock()
	done := make(chan struct{})
	go func() { h.cancel(); l.hook.drop(h); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		return l.nodeErr("release", fmt.Errorf("the library's delete has no outcome yet: %w", ctx.Err()))
	}
	return l.releaseOutcome(h)
}

func (l *rueidisLock) releaseOutcome(h *rueidisHold) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.delSeen && h.delBefore && h.delErr == nil:
		return l.nodeErr("release", fmt.Errorf("the library gave the lock up on its own after an extension failed (%v): %w", h.extErr, ErrNotHeld))
	case h.delSeen && h.delErr == nil && h.delOK:
		return nil
	case h.delSeen && h.delErr == nil:
		return l.nodeErr("release", fmt.Errorf("the key was no longer this client's: %w", ErrNotHeld))
	case h.delSeen:
		return l.nodeErr("release", h.delErr)
	case h.lost:
		return l.nodeErr("release", fmt.Errorf("an extension found the key no longer this client's: %w", ErrNotHeld))
	}
	return l.nodeErr("release", fmt.Errorf("the library sent no delete (last extension: %v)", h.extErr))
}

// Close stops the client as a crash does: the hook fails every command
// from now, so the library's goroutines, woken by the close, delete
// nothing; the keys live until their validity ends.
func (l *rueidisLock) Close() error {
	l.hook.kill()
	l.locker.Close()
	return nil
}
