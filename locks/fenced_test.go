package locks_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/resource"
)

// TestFencedTokens: fencing tokens strictly increase across holders,
// including one whose lease ran out without a release; the storage then
// refuses the stale holder's write and accepts the new one's.
func TestFencedTokens(t *testing.T) {
	t.Parallel()
	c := up(t, 1, 1)
	ctx := context.Background()
	storage := direct(t, c.Storage)
	ttl := 300 * time.Millisecond
	var last int64
	var stale locks.Lease
	for i := 0; i < 6; i++ {
		l := newLock(t, "fenced", nodesOf(t, c, 0), uint64(i), locks.Options{TTL: ttl})
		lease, err := l.Acquire(ctx, "fenced", locks.AcquireOptions{Wait: 2 * ttl})
		if err != nil {
			t.Fatalf("holder %d: %v", i, err)
		}
		if lease.Fence <= last {
			t.Fatalf("holder %d got fencing token %d after %d", i, lease.Fence, last)
		}
		last = lease.Fence
		if i == 2 {
			stale = lease // never released: it expires
			continue
		}
		if i == 3 {
			// The next holder writes; the one whose lease expired comes
			// back and writes with its old token: refused.
			if ok, err := resource.Write(ctx, storage, "fenced", 10, lease.Fence); err != nil || !ok {
				t.Fatalf("current holder's write: %v %v", ok, err)
			}
			if ok, err := resource.Write(ctx, storage, "fenced", 99, stale.Fence); err != nil || ok {
				t.Fatalf("stale write with token %d < %d accepted=%v (%v), want rejected", stale.Fence, lease.Fence, ok, err)
			}
			if v, err := resource.Read(ctx, storage, "fenced"); err != nil || v != 10 {
				t.Fatalf("counter = %d (%v), want 10", v, err)
			}
		}
		if err := l.Release(ctx, lease); err != nil {
			t.Fatal(err)
		}
	}
}
