package locks_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/sut/etcd"
	"github.com/lockharness/lockharness/sut/etcd/etcdtest"
)

// etcdGroup starts a three-member etcd group for clients slots, stopped in
// Cleanup; etcdNodes is slot cl's view of it.
func etcdGroup(t *testing.T, clients int) *etcd.Cluster {
	t.Helper()
	return etcdtest.Up(t, sut.Config{Clients: clients})
}

func etcdNodes(c *etcd.Cluster, cl int) []sut.ClientNode {
	return c.ClientNodes(cl, sut.ClientOptions{Timeout: 2 * time.Second})
}

// Both etcd locks exclude: a second client is refused while the first
// holds, and gets the lock once it is released; the lease deadline is
// the TTL etcd granted (2s, its shortest, for the 1s asked); the fenced
// one's token grows with every grant.
func TestEtcdLocksExclude(t *testing.T) {
	t.Parallel()
	c := etcdGroup(t, 2)
	for _, name := range []string{"etcd", "etcd-fenced"} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			a := newLock(t, name, etcdNodes(c, 0), 1, locks.Options{TTL: time.Second})
			b := newLock(t, name, etcdNodes(c, 1), 2, locks.Options{TTL: time.Second})
			key := "exclude-" + name
			before := time.Now()
			la, err := a.Acquire(ctx, key, locks.AcquireOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if d := la.ValidUntil.Sub(before); d < time.Second || d > 2*time.Second+100*time.Millisecond {
				t.Errorf("lease runs %v from before the acquire, want etcd's 2s", d)
			}
			handOver(t, ctx, a, b, key, la, name == "etcd-fenced")
		})
	}
}

// A blocking acquire waits for the holder (trying again) and
// gets the lock when it is released.
func TestEtcdLockWaitsForTheHolder(t *testing.T) {
	t.Parallel()
	c := etcdGroup(t, 2)
	ctx := context.Background()
	a := newLock(t, "etcd", etcdNodes(c, 0), 1, locks.Options{TTL: 2 * time.Second})
	b := newLock(t, "etcd", etcdNodes(c, 1), 2, locks.Options{TTL: 2 * time.Second})
	la, err := a.Acquire(ctx, "wait", locks.AcquireOptions{})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(300 * time.Millisecond)
		_ = a.Release(ctx, la)
	}()
	start := time.Now()
	lb, err := b.Acquire(ctx, "wait", locks.AcquireOptions{Wait: 5 * time.Second})
	if err != nil {
		t.Fatalf("waiting acquire: %v", err)
	}
	if waited := time.Since(start); waited < 250*time.Millisecond {
		t.Errorf("acquired after %v, before the holder released", waited)
	}
	if err := b.Release(ctx, lb); err != nil {
		t.Fatal(err)
	}
	// A wait that runs out is a definite refusal and leaves nothing.
	la, err = a.Acquire(ctx, "wait", locks.AcquireOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Acquire(ctx, "wait", locks.AcquireOptions{Wait: 300 * time.Millisecond}); !errors.Is(err, locks.ErrNotAcquired) {
		t.Fatalf("wait ran out: %v, want not acquired", err)
	}
	if err := a.Release(ctx, la); err != nil {
		t.Fatal(err)
	}
}

// While held, the lock keeps its lease alive every TTL/3 and reports each
// renewal; when its renewals are held up (a process-wide pause) past the
// TTL, etcd expires the lease, another client acquires, and the late
// renewal learns the lease is gone: "not held", as does the release.
func TestEtcdLockLearnsItLostTheLease(t *testing.T) {
	t.Parallel()
	c := etcdGroup(t, 2)
	ctx := context.Background()
	var mu sync.Mutex
	var stall time.Duration
	var results []error
	onRenew := func(string) func(locks.Lease, error) {
		mu.Lock()
		d := stall
		stall = 0
		mu.Unlock()
		time.Sleep(d)
		return func(_ locks.Lease, err error) {
			mu.Lock()
			results = append(results, err)
			mu.Unlock()
		}
	}
	a := newLock(t, "etcd", etcdNodes(c, 0), 1, locks.Options{TTL: 2 * time.Second, OnRenew: onRenew})
	b := newLock(t, "etcd", etcdNodes(c, 1), 2, locks.Options{TTL: 2 * time.Second})
	la, err := a.Acquire(ctx, "lost", locks.AcquireOptions{})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond) // two renewals
	mu.Lock()
	ok := len(results)
	stall = 4 * time.Second // the next renewal is held up past the TTL
	mu.Unlock()
	if ok < 1 {
		t.Fatalf("%d renewals reported in 1.5s, want 2", ok)
	}
	lb, err := b.Acquire(ctx, "lost", locks.AcquireOptions{Wait: 6 * time.Second})
	if err != nil {
		t.Fatalf("acquire after A's lease ran out: %v", err)
	}
	if time.Now().Before(la.ValidUntil) {
		t.Errorf("B acquired before A's recorded deadline")
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		last := results[len(results)-1]
		mu.Unlock()
		if errors.Is(last, locks.ErrNotHeld) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the late renewal reported %v, want not held", last)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := a.Release(ctx, la); !errors.Is(err, locks.ErrNotHeld) {
		t.Fatalf("release of the lost lease: %v, want not held", err)
	}
	r, ok2 := a.(locks.Renewer)
	if !ok2 {
		t.Fatal("etcd lock has no Renew")
	}
	if _, err := r.Renew(ctx, la); err == nil {
		t.Error("renewed a released lease")
	}
	if err := b.Release(ctx, lb); err != nil {
		t.Fatal(err)
	}
}

// The release after an acquire whose outcome was unknown finds out what
// it left: the lock itself (released, ok), or a waiter's key behind
// another holder (removed, "not held"; the holder keeps its lock). It
// never answers ok for a lock it did not hold: the checker would read
// that as removing the holder's lock.
func TestEtcdReleaseAfterAnUnknownAcquire(t *testing.T) {
	t.Parallel()
	c := etcdGroup(t, 2)
	ctx := context.Background()
	a := newLock(t, "etcd", etcdNodes(c, 0), 1, locks.Options{TTL: 2 * time.Second})
	b := newLock(t, "etcd", etcdNodes(c, 1), 2, locks.Options{TTL: 2 * time.Second})

	lb, err := b.Acquire(ctx, "took", locks.AcquireOptions{})
	if err != nil {
		t.Fatal(err)
	}
	locks.EtcdForgetGrant(b, lb.Token)
	if err := b.Release(ctx, lb); err != nil {
		t.Fatalf("release of a lock the unknown acquire took: %v, want ok", err)
	}
	if keys, err := locks.EtcdKeys(ctx, b, "took"); err != nil || len(keys) != 0 {
		t.Fatalf("keys left %v (%v)", keys, err)
	}

	la, err := a.Acquire(ctx, "waiting", locks.AcquireOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lw, err := locks.EtcdWaitOnly(ctx, b, "waiting")
	if err != nil {
		t.Fatal(err)
	}
	if keys, _ := locks.EtcdKeys(ctx, b, "waiting"); len(keys) != 2 {
		t.Fatalf("keys %v, want the holder's and the waiter's", keys)
	}
	if err := b.Release(ctx, lw); !errors.Is(err, locks.ErrNotHeld) {
		t.Fatalf("release of a waiter's key: %v, want not held", err)
	}
	if keys, _ := locks.EtcdKeys(ctx, b, "waiting"); len(keys) != 1 {
		t.Fatalf("keys %v, want the holder's alone", keys)
	}
	if err := a.Release(ctx, la); err != nil {
		t.Fatalf("the holder's release after the waiter's: %v", err)
	}
}
