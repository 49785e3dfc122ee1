package locks_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/lockharness/lockharness/locks"
)

func TestReentrantNesting(t *testing.T) {
	t.Parallel()
	c := up(t, 1, 1)
	ctx := context.Background()
	rc := direct(t, c.Nodes[0])
	a := newLock(t, "reentrant", nodesOf(t, c, 0), 1, locks.Options{TTL: time.Second})
	b := newLock(t, "reentrant", nodesOf(t, c, 0), 2, locks.Options{TTL: time.Second})
	l1, err := a.Acquire(ctx, "nest", locks.AcquireOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l2, err := a.Acquire(ctx, "nest", locks.AcquireOptions{})
	if err != nil {
		t.Fatalf("re-acquire by the owner: %v", err)
	}
	if n, _ := rc.HGet(ctx, "nest", l1.Token).Int(); n != 2 {
		t.Fatalf("hold count %d, want 2", n)
	}
	if _, err := b.Acquire(ctx, "nest", locks.AcquireOptions{}); !errors.Is(err, locks.ErrNotAcquired) {
		t.Fatalf("another owner: %v, want ErrNotAcquired", err)
	}
	if err := a.Release(ctx, l2); err != nil {
		t.Fatal(err)
	}
	if n, _ := rc.HGet(ctx, "nest", l1.Token).Int(); n != 1 {
		t.Fatalf("after one release: count %d, want 1", n)
	}
	if _, err := b.Acquire(ctx, "nest", locks.AcquireOptions{}); !errors.Is(err, locks.ErrNotAcquired) {
		t.Fatalf("still held once: %v, want ErrNotAcquired", err)
	}
	if err := a.Release(ctx, l1); err != nil {
		t.Fatal(err)
	}
	if n, _ := rc.Exists(ctx, "nest").Result(); n != 0 {
		t.Fatal("key left after the last release")
	}
	if err := a.Release(ctx, l1); !errors.Is(err, locks.ErrNotHeld) {
		t.Fatalf("release of a lock not held: %v, want ErrNotHeld", err)
	}
}

// TestReentrantWatchdog: the watchdog keeps a 1s lease alive through a 3s
// critical section, reporting each renewal; when the holder dies without
// releasing, the key is gone within a TTL.
func TestReentrantWatchdog(t *testing.T) {
	t.Parallel()
	c := up(t, 1, 1)
	ctx := context.Background()
	rc := direct(t, c.Nodes[0])
	ttl := time.Second
	var mu sync.Mutex
	var renewed []locks.Lease
	var renewErrs []error
	opts := locks.Options{TTL: ttl, OnRenew: func(key string) func(locks.Lease, error) {
		return func(l locks.Lease, err error) {
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				renewErrs = append(renewErrs, err)
				return
			}
			renewed = append(renewed, l)
		}
	}}
	a := newLock(t, "reentrant", nodesOf(t, c, 0), 1, opts)
	lease, err := a.Acquire(ctx, "dog", locks.AcquireOptions{})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * ttl)
	if ok, _ := rc.HExists(ctx, "dog", lease.Token).Result(); !ok {
		t.Fatal("lock lost during a 3s critical section with a watchdog")
	}
	mu.Lock()
	n, last, errs := len(renewed), renewed[len(renewed)-1], len(renewErrs)
	mu.Unlock()
	if n < 5 || errs > 0 {
		t.Fatalf("%d renewals (%d failed) in 3 TTLs, want about 9", n, errs)
	}
	if time.Until(last.ValidUntil) <= 0 {
		t.Fatalf("last renewal's lease ended %v ago", -time.Until(last.ValidUntil))
	}
	if err := a.Release(ctx, lease); err != nil {
		t.Fatal(err)
	}
	t.Logf("watchdog: %d renewals in %v", n, 3*ttl)

	// The holder dies: no release, the watchdog stops with it.
	b := newLock(t, "reentrant", nodesOf(t, c, 0), 2, locks.Options{TTL: ttl})
	if _, err := b.Acquire(ctx, "dog", locks.AcquireOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(ttl / 2) // at least one renewal
	_ = b.(locks.Closer).Close()
	killed := time.Now()
	if pttl, _ := rc.PTTL(ctx, "dog").Result(); pttl <= 0 || pttl > ttl {
		t.Fatalf("after the holder died the key's PTTL is %v, want (0, %v]", pttl, ttl)
	}
	time.Sleep(time.Until(killed.Add(ttl + 10*time.Millisecond)))
	if n, _ := rc.Exists(ctx, "dog").Result(); n != 0 {
		t.Fatalf("key still there %v after the holder died", time.Since(killed))
	}
}

// TestReentrantWakeup: a waiter is woken by the release's publish, not by
// the holder's PTTL running out.
func TestReentrantWakeup(t *testing.T) {
	t.Parallel()
	c := up(t, 1, 1)
	ctx := context.Background()
	ttl := 10 * time.Second
	a := newLock(t, "reentrant", nodesOf(t, c, 0), 1, locks.Options{TTL: ttl})
	b := newLock(t, "reentrant", nodesOf(t, c, 0), 2, locks.Options{TTL: ttl})
	var lats []time.Duration
	for i := 0; i < 5; i++ {
		la, err := a.Acquire(ctx, "wake", locks.AcquireOptions{})
		if err != nil {
			t.Fatal(err)
		}
		type res struct {
			lease locks.Lease
			err   error
			at    time.Time
		}
		ch := make(chan res, 1)
		go func() {
			l, err := b.Acquire(ctx, "wake", locks.AcquireOptions{Wait: 8 * time.Second})
			ch <- res{l, err, time.Now()}
		}()
		time.Sleep(200 * time.Millisecond) // the waiter is subscribed and waiting
		released := time.Now()
		if err := a.Release(ctx, la); err != nil {
			t.Fatal(err)
		}
		r := <-ch
		if r.err != nil {
			t.Fatalf("waiter: %v", r.err)
		}
		lat := r.at.Sub(released)
		if lat > ttl/2 {
			t.Fatalf("waiter woke %v after the release; the PTTL was about %v: not woken by pub/sub", lat, ttl)
		}
		lats = append(lats, lat)
		if err := b.Release(ctx, r.lease); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("wake-up latency after release (PTTL ≈ %v): %v", ttl, lats)
}
