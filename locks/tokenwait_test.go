package locks_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockharness/lockharness/locks"
)

// TestTokenWait: with a replica in sync the lock is granted; with the
// replication link frozen, WAIT sees no acknowledgement and the lock is
// refused, definitely, with the SET undone on the master.
func TestTokenWait(t *testing.T) {
	t.Parallel()
	c := up(t, 1, 1)
	ctx := context.Background()
	proxy, replica := withReplica(t, c.Nodes[0])
	l := newLock(t, "token-wait", nodesOf(t, c, 0), 1, locks.Options{TTL: time.Second})
	lease, err := l.Acquire(ctx, "tw", locks.AcquireOptions{})
	if err != nil {
		t.Fatalf("acquire with a replica: %v", err)
	}
	if v, _ := direct(t, replica).Get(ctx, "tw").Result(); v != lease.Token {
		t.Fatalf("replica holds %q, want the token", v)
	}
	if err := l.Release(ctx, lease); err != nil {
		t.Fatal(err)
	}
	cut(t, proxy)
	_, err = l.Acquire(ctx, "tw", locks.AcquireOptions{})
	if !errors.Is(err, locks.ErrNotAcquired) {
		t.Fatalf("acquire with replication cut: %v, want ErrNotAcquired", err)
	}
	if n, _ := direct(t, c.Nodes[0]).Exists(ctx, "tw").Result(); n != 0 {
		t.Fatal("the unacknowledged SET was left on the master")
	}
	t.Logf("refused: %v", err)
}
