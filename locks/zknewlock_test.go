package locks_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/run"
	"github.com/lockharness/lockharness/sut/zookeeper/zktest"
	"github.com/lockharness/lockharness/workloads"
)

// zk.NewLock excludes: while one client holds, another's acquire waits in
// the queue and, given up, is unknown (the recipe cannot refuse); once
// the holder unlocks, the waiter gets it. Its leases are sessions.
func TestZKNewLockExcludes(t *testing.T) {
	zktest.Require(t)
	t.Parallel()
	c := zkEnsemble(t, 2)
	ctx := context.Background()
	a := newLock(t, "zk-newlock", zkNodes(c, 0), 1, locks.Options{TTL: 2 * time.Second})
	b := newLock(t, "zk-newlock", zkNodes(c, 1), 2, locks.Options{TTL: 2 * time.Second})
	la, err := a.Acquire(ctx, "exclude", locks.AcquireOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !la.Session || la.Expires() || la.Fence != 0 {
		t.Errorf("lease %+v, want a session lease without deadline or fence", la)
	}
	lb, err := b.Acquire(ctx, "exclude", locks.AcquireOptions{Wait: 300 * time.Millisecond})
	if locks.Outcome(err) != history.Info {
		t.Fatalf("acquire while held: %v, want an unknown outcome (the recipe waits on)", err)
	}
	if err := a.Release(ctx, la); err != nil {
		t.Fatal(err)
	}
	// The waiter's recipe gets the lock now; its release gives it back.
	if err := b.Release(ctx, lb); err != nil {
		t.Fatalf("release of the waiter that got the lock after all: %v", err)
	}
	lb, err = b.Acquire(ctx, "exclude", locks.AcquireOptions{Wait: 2 * time.Second})
	if err != nil {
		t.Fatalf("acquire after release: %v", err)
	}
	if err := b.Release(ctx, lb); err != nil {
		t.Fatal(err)
	}
	if err := b.Release(ctx, lb); err == nil {
		t.Error("second release of the same lease succeeded")
	}
}

// A holder whose session expires (its client crashed: nothing is sent)
// loses the node; the next waiter gets the lock after the session
// timeout, not before.
func TestZKNewLockOfACrashedClientExpires(t *testing.T) {
	zktest.Require(t)
	t.Parallel()
	c := zkEnsemble(t, 2)
	ctx := context.Background()
	info, err := locks.Builtin().Lookup("zk-newlock")
	if err != nil {
		t.Fatal(err)
	}
	a, err := info.New(zkNodes(c, 0), locks.Options{TTL: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	b := newLock(t, "zk-newlock", zkNodes(c, 1), 2, locks.Options{TTL: 2 * time.Second})
	if _, err := a.Acquire(ctx, "crash", locks.AcquireOptions{}); err != nil {
		t.Fatal(err)
	}
	crashed := time.Now()
	_ = a.(locks.Closer).Close()
	lb, err := b.Acquire(ctx, "crash", locks.AcquireOptions{Wait: 8 * time.Second})
	if err != nil {
		t.Fatalf("acquire after the crashed holder's session expired: %v", err)
	}
	if d := time.Since(crashed); d < time.Second {
		t.Errorf("B acquired %v after the crash, before the 2s session could expire", d)
	}
	if err := b.Release(ctx, lb); err != nil {
		t.Fatal(err)
	}
}

// Mutual exclusion under contention: five clients, each its own session,
// queue on one key through the recipe's predecessor watch.
func TestZKNewLockMutualExclusion(t *testing.T) {
	zktest.Require(t)
	t.Parallel()
	const clients, rounds = 5, 10
	c := zkEnsemble(t, clients)
	ls := make([]locks.Lock, clients)
	for i := range ls {
		ls[i] = newLock(t, "zk-newlock", zkNodes(c, i), uint64(i), locks.Options{TTL: 4 * time.Second})
	}
	mutualExclusion(t, ls, rounds)
}

// zk.NewLock through the whole run: valid with no faults; and valid when
// holders pause for 1.5 session timeouts between read and write, because
// an in-process pause stops the workload's goroutine, not go-zookeeper's
// pings: the session, and with it the node, lives on.
func TestZKNewLockRuns(t *testing.T) {
	zktest.Require(t)
	t.Parallel()
	for _, pause := range []time.Duration{0, 3 * time.Second} {
		t.Run(pause.String(), func(t *testing.T) {
			out := runVerdict(t, run.Config{
				Lock: "zk-newlock", Seed: 5, TimeLimit: 5 * time.Second, Recovery: 2 * time.Second,
				Workload: workloads.Config{Clients: 4, Keys: 2, TTL: 2 * time.Second, ClientPause: pause},
			}, 10)
			if out.Results.Verdict != checker.Valid {
				t.Fatalf("verdict %s, want valid: %+v", out.Results.Verdict, out.Results.Violations)
			}
		})
	}
}
