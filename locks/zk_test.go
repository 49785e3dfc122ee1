package locks_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/sut/zookeeper"
	"github.com/lockharness/lockharness/sut/zookeeper/zktest"
)

// zkEnsemble starts a three-server ensemble for clients slots, stopped in
// Cleanup; zkNodes is slot cl's view of it.
func zkEnsemble(t testing.TB, clients int) *zookeeper.Cluster {
	t.Helper()
	return zktest.Up(t, sut.Config{Clients: clients})
}

func zkNodes(c *zookeeper.Cluster, cl int) []sut.ClientNode {
	return c.ClientNodes(cl, sut.ClientOptions{Timeout: 2 * time.Second})
}

// Both ZooKeeper locks exclude: a second client is refused while the
// first holds, and gets the lock once it is released; the lease deadline
// is the session timeout from before the acquire; the fenced one's token
// grows with every grant.
func TestZKLocksExclude(t *testing.T) {
	t.Parallel()
	c := zkEnsemble(t, 2)
	for _, name := range []string{"zk", "zk-fenced"} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			a := newLock(t, name, zkNodes(c, 0), 1, locks.Options{TTL: 2 * time.Second})
			b := newLock(t, name, zkNodes(c, 1), 2, locks.Options{TTL: 2 * time.Second})
			key := "exclude-" + name
			before := time.Now()
			la, err := a.Acquire(ctx, key, locks.AcquireOptions{})
			if err != nil {
				t.Fatal(err)
			}
			after := time.Now()
			if la.ValidUntil.Before(before) || la.ValidUntil.After(after.Add(2*time.Second)) {
				t.Errorf("lease ends %v after the acquire began (which took %v), want within the 2s session timeout of a confirmation during it", la.ValidUntil.Sub(before), after.Sub(before))
			}
			handOver(t, ctx, a, b, key, la, name == "zk-fenced")
		})
	}
}

// Mutual exclusion under contention: five clients, each its own session,
// take one key 20 times each with blocking acquires (the predecessor
// watch), and nobody is ever inside while another is.
func TestZKLockMutualExclusion(t *testing.T) {
	t.Parallel()
	const clients, rounds = 5, 20
	c := zkEnsemble(t, clients)
	ctx := context.Background()
	var inside, maxInside, grants int
	var mu sync.Mutex
	var fences []int64
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for i := 0; i < clients; i++ {
		l := newLock(t, "zk-fenced", zkNodes(c, i), uint64(i), locks.Options{TTL: 4 * time.Second})
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < rounds; j++ {
				lease, err := l.Acquire(ctx, "mutex", locks.AcquireOptions{Wait: 30 * time.Second})
				if err != nil {
					errs <- fmt.Errorf("client %d: %w", i, err)
					return
				}
				mu.Lock()
				inside++
				maxInside = max(maxInside, inside)
				grants++
				fences = append(fences, lease.Fence)
				mu.Unlock()
				time.Sleep(time.Millisecond)
				mu.Lock()
				inside--
				mu.Unlock()
				if err := l.Release(ctx, lease); err != nil {
					errs <- fmt.Errorf("client %d release: %w", i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if maxInside != 1 || grants != clients*rounds {
		t.Fatalf("%d inside at once, %d grants; want 1 and %d", maxInside, grants, clients*rounds)
	}
	for i := 1; i < len(fences); i++ {
		if fences[i] <= fences[i-1] {
			t.Fatalf("fence %d after %d: grants in order of their tokens break", fences[i], fences[i-1])
		}
	}
}

// While held, the lock confirms its session every timeout/3 and reports
// each renewal; when a renewal is held up (a process-wide pause: the
// client's connection sends nothing meanwhile, pings included) past the
// session timeout, ZooKeeper expires the session, another client
// acquires, and the late renewal learns the lock is gone: "not held", as
// does the release.
func TestZKLockLearnsItLostTheSession(t *testing.T) {
	t.Parallel()
	c := zkEnsemble(t, 2)
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
	a := newLock(t, "zk", zkNodes(c, 0), 1, locks.Options{TTL: 2 * time.Second, OnRenew: onRenew})
	b := newLock(t, "zk", zkNodes(c, 1), 2, locks.Options{TTL: 2 * time.Second})
	la, err := a.Acquire(ctx, "lost", locks.AcquireOptions{})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond) // two renewals
	mu.Lock()
	ok := len(results)
	for _, r := range results {
		if r != nil {
			t.Errorf("renewal while healthy: %v", r)
		}
	}
	stall = 5 * time.Second // the next renewal is held up past the timeout
	mu.Unlock()
	if ok < 1 {
		t.Fatalf("%d renewals reported in 1.5s, want 2", ok)
	}
	lb, err := b.Acquire(ctx, "lost", locks.AcquireOptions{Wait: 8 * time.Second})
	if err != nil {
		t.Fatalf("acquire after A's session ran out: %v", err)
	}
	if time.Now().Before(la.ValidUntil) {
		t.Errorf("B acquired before A's recorded deadline")
	}
	deadline := time.Now().Add(8 * time.Second)
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
		t.Fatalf("release of the lost lock: %v, want not held", err)
	}
	if err := b.Release(ctx, lb); err != nil {
		t.Fatal(err)
	}
	// A's client goes on with a new session and can take the lock again.
	la, err = a.Acquire(ctx, "lost", locks.AcquireOptions{Wait: 5 * time.Second})
	if err != nil {
		t.Fatalf("acquire on the client's new session: %v", err)
	}
	if err := a.Release(ctx, la); err != nil {
		t.Fatal(err)
	}
}

// A client that dies holding the lock (Close: no closeSession sent) keeps
// it until its session expires; then the next waiter gets it.
func TestZKLockOfACrashedClientExpires(t *testing.T) {
	t.Parallel()
	c := zkEnsemble(t, 2)
	ctx := context.Background()
	info, err := locks.Builtin().Lookup("zk")
	if err != nil {
		t.Fatal(err)
	}
	a, err := info.New(zkNodes(c, 0), locks.Options{TTL: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	b := newLock(t, "zk", zkNodes(c, 1), 2, locks.Options{TTL: 2 * time.Second})
	la, err := a.Acquire(ctx, "crash", locks.AcquireOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_ = a.(locks.Closer).Close()
	if _, err := b.Acquire(ctx, "crash", locks.AcquireOptions{}); !errors.Is(err, locks.ErrNotAcquired) {
		t.Fatalf("acquire right after the crash: %v, want not acquired (the session lives on)", err)
	}
	lb, err := b.Acquire(ctx, "crash", locks.AcquireOptions{Wait: 6 * time.Second})
	if err != nil {
		t.Fatalf("acquire after the crashed client's session expired: %v", err)
	}
	if time.Now().Before(la.ValidUntil) {
		t.Errorf("B acquired before the crashed holder's deadline")
	}
	if err := b.Release(ctx, lb); err != nil {
		t.Fatal(err)
	}
}

// A ZooKeeper acquire waiting in the queue stops waiting when its Stop
// channel closes (a definite refusal: its node is deleted) or its context
// ends (an error, soon), well before its Wait runs out; the holder keeps
// the lock, and once the unknown acquire is released too the next one is
// not held up.
func TestZKLockWaitEndsOnStopOrContext(t *testing.T) {
	t.Parallel()
	c := zkEnsemble(t, 2)
	ctx := context.Background()
	a := newLock(t, "zk", zkNodes(c, 0), 1, locks.Options{TTL: 5 * time.Second})
	b := newLock(t, "zk", zkNodes(c, 1), 2, locks.Options{TTL: 5 * time.Second})
	la, err := a.Acquire(ctx, "wait-ends", locks.AcquireOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	time.AfterFunc(300*time.Millisecond, func() { close(stop) })
	start := time.Now()
	if _, err := b.Acquire(ctx, "wait-ends", locks.AcquireOptions{Wait: 10 * time.Second, Stop: stop}); !errors.Is(err, locks.ErrNotAcquired) {
		t.Fatalf("stopped acquire: %v, want ErrNotAcquired", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("the acquire waited %v after its stop (wait 10s)", d)
	}
	cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	start = time.Now()
	unknown, err := b.Acquire(cctx, "wait-ends", locks.AcquireOptions{Wait: 10 * time.Second})
	if err == nil {
		t.Fatal("an acquire whose context ended while the lock was held got it")
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("the acquire waited %v after its context ended (wait 10s)", d)
	}
	// Its outcome is unknown: its node may still be in the queue until it
	// is released, as the workload releases every unknown acquire.
	_ = b.Release(ctx, unknown)
	if err := a.Release(ctx, la); err != nil {
		t.Fatalf("the holder's release after the others gave up: %v", err)
	}
	lb, err := b.Acquire(ctx, "wait-ends", locks.AcquireOptions{Wait: 5 * time.Second})
	if err != nil {
		t.Fatalf("acquire after the release: %v", err)
	}
	if err := b.Release(ctx, lb); err != nil {
		t.Fatal(err)
	}
}
