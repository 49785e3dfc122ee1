package locks_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/locks"
)

// TestOrphanWatchdogKeepsAReleasedWaitAlive reproduces redisson#7272 with
// the deliberately buggy variant: B stops waiting while A holds (an
// unknown outcome) and releases what it asked for ("not held": nothing
// was granted yet); A releases; B's wait, still running, is granted and
// arms a watchdog that renews the key every TTL/3. Two TTLs later the key
// is still there, held for B's abandoned call, and nobody else gets it;
// closing B's client ends it within a TTL. The reentrant lock, whose
// wait runs in the caller, leaves nothing behind in the same steps.
func TestOrphanWatchdogKeepsAReleasedWaitAlive(t *testing.T) {
	for _, tc := range []struct {
		name   string
		orphan bool
	}{{"reentrant-orphan-watchdog", true}, {"reentrant", false}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := up(t, 1, 3)
			ctx := context.Background()
			ttl := 600 * time.Millisecond
			var renewals atomic.Int64
			onRenew := func(string) func(locks.Lease, error) {
				return func(_ locks.Lease, err error) {
					if err == nil {
						renewals.Add(1)
					}
				}
			}
			a := newLock(t, tc.name, nodesOf(t, c, 0), 1, locks.Options{TTL: ttl})
			b := newLock(t, tc.name, nodesOf(t, c, 1), 2, locks.Options{TTL: ttl, OnRenew: onRenew})
			other := newLock(t, tc.name, nodesOf(t, c, 2), 3, locks.Options{TTL: ttl})
			la, err := a.Acquire(ctx, "orphan", locks.AcquireOptions{})
			if err != nil {
				t.Fatal(err)
			}
			lb, err := b.Acquire(ctx, "orphan", locks.AcquireOptions{Wait: 100 * time.Millisecond})
			if got, want := locks.Outcome(err), map[bool]history.Type{true: history.Info, false: history.Fail}[tc.orphan]; got != want {
				t.Fatalf("B's acquire while A holds: %v (%s), want %s", err, got, want)
			}
			if err := b.Release(ctx, lb); !errors.Is(err, locks.ErrNotHeld) {
				t.Fatalf("B's release of what it asked for: %v, want not held", err)
			}
			if err := a.Release(ctx, la); err != nil {
				t.Fatal(err)
			}
			time.Sleep(2 * ttl)
			_, err = other.Acquire(ctx, "orphan", locks.AcquireOptions{})
			if tc.orphan {
				if !errors.Is(err, locks.ErrNotAcquired) {
					t.Fatalf("acquire two TTLs after everyone let go: %v, want refused by the orphan", err)
				}
				if renewals.Load() < 3 {
					t.Fatalf("%d renewals of the orphan in two TTLs, want its watchdog's 5 or so", renewals.Load())
				}
				_ = b.(locks.Closer).Close() // the client dies: its watchdog stops
				lo, err := other.Acquire(ctx, "orphan", locks.AcquireOptions{Wait: 2 * ttl})
				if err != nil {
					t.Fatalf("acquire after the orphan's client closed: %v", err)
				}
				_ = other.Release(ctx, lo)
				return
			}
			if err != nil {
				t.Fatalf("acquire two TTLs after everyone let go: %v", err)
			}
			if n := renewals.Load(); n != 0 {
				t.Fatalf("%d renewals for B, which never held the lock", n)
			}
		})
	}
}
