package locks_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/locks"
)

// errCrash is what a failpoint hook returns to crash the client there.
var errCrash = errors.New("client crashed at failpoint")

// hook records the failpoints that fire and acts at one of them.
type hook struct {
	mu    sync.Mutex
	fired []string
	at    string
	act   func() error
}

func (h *hook) fn(ctx context.Context, name string) error {
	h.mu.Lock()
	h.fired = append(h.fired, name)
	h.mu.Unlock()
	if name == h.at && h.act != nil {
		return h.act()
	}
	return nil
}

// TestFailpointsFire: every failpoint a lock lists fires during a
// successful acquire, in the order listed.
func TestFailpointsFire(t *testing.T) {
	for _, info := range locks.Builtin().All() {
		if len(info.Failpoints) == 0 {
			continue
		}
		t.Run(info.Name, func(t *testing.T) {
			t.Parallel()
			c := setup(t, info.Name)
			h := &hook{}
			// 4s: Redlock gives each node a twentieth of the TTL, and on a
			// loaded machine 50ms can be too little for a majority.
			l := newLock(t, info.Name, nodesOf(t, c, 0), 1, locks.Options{TTL: 4 * time.Second, Failpoint: h.fn})
			if _, err := l.Acquire(context.Background(), "fp", locks.AcquireOptions{}); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(h.fired, info.Failpoints) {
				t.Fatalf("fired %v, want %v", h.fired, info.Failpoints)
			}
		})
	}
}

// TestSetNXExpireCrash: a client that dies between SETNX and EXPIRE leaves
// a key that never expires.
func TestSetNXExpireCrash(t *testing.T) {
	t.Parallel()
	c := up(t, 1, 1)
	ctx := context.Background()
	h := &hook{at: locks.FailpointAfterSetNX, act: func() error { return errCrash }}
	l := newLock(t, "setnx-expire", nodesOf(t, c, 0), 1, locks.Options{TTL: time.Second, Failpoint: h.fn})
	if _, err := l.Acquire(ctx, "crash", locks.AcquireOptions{}); !errors.Is(err, errCrash) {
		t.Fatalf("acquire: %v, want the crash", err)
	}
	if pttl, err := direct(t, c.Nodes[0]).PTTL(ctx, "crash").Result(); err != nil || pttl != -1 {
		t.Fatalf("PTTL after a crash between SETNX and EXPIRE = %v (%v), want -1 (no expiry)", pttl, err)
	}
}

// TestRedlockPausePastTTL: a client paused after winning the majority for
// longer than the TTL must not believe it holds the lock: the validity check
// refuses it, definitely, and it releases on every node.
func TestRedlockPausePastTTL(t *testing.T) {
	t.Parallel()
	c := up(t, 5, 1)
	ctx := context.Background()
	// A 2s TTL gives each node 100ms to answer (a twentieth): on a loaded
	// machine a shorter one can miss the majority before the failpoint.
	ttl := 2 * time.Second
	h := &hook{at: locks.FailpointAfterMajority, act: func() error { time.Sleep(ttl + 50*time.Millisecond); return nil }}
	l := newLock(t, "redlock", nodesOf(t, c, 0), 1, locks.Options{TTL: ttl, Failpoint: h.fn})
	_, err := l.Acquire(ctx, "pause", locks.AcquireOptions{})
	if !errors.Is(err, locks.ErrNotAcquired) || locks.Outcome(err) != history.Fail {
		t.Fatalf("acquire after a pause past the TTL: %v, want a definite ErrNotAcquired", err)
	}
	if !slices.Contains(h.fired, locks.FailpointAfterMajority) {
		t.Fatalf("no majority was won, so nothing paused (failpoints fired: %v): %v", h.fired, err)
	}
	if slices.Contains(h.fired, locks.FailpointAfterValidityCheck) {
		t.Fatal("the validity check passed")
	}
	for i, rc := range nodeClients(t, c) {
		if n, _ := rc.Exists(ctx, "pause").Result(); n != 0 {
			t.Fatalf("node %d still holds the key", i+1)
		}
	}
	t.Logf("refused: %v", err)
}

// TestRedlockCrashAfterCheck: a client that dies after the validity check
// leaves its token on a majority of the nodes, expiring within the TTL,
// and nothing else anywhere. (Every node, on a quiet machine; at load 41
// node 4 missed its per-node timeout and held nothing, which the check
// passes with a majority, as the algorithm means it to.)
func TestRedlockCrashAfterCheck(t *testing.T) {
	t.Parallel()
	c := up(t, 5, 1)
	ctx := context.Background()
	ttl := 2 * time.Second
	h := &hook{at: locks.FailpointAfterValidityCheck, act: func() error { return errCrash }}
	l := newLock(t, "redlock", nodesOf(t, c, 0), 1, locks.Options{TTL: ttl, Failpoint: h.fn})
	// Wait: on a loaded machine a node may miss the per-node timeout and
	// an attempt end without a quorum, before the failpoint; the lock
	// tries again.
	lease, err := l.Acquire(ctx, "crash", locks.AcquireOptions{Wait: ttl})
	if !errors.Is(err, errCrash) {
		t.Fatalf("acquire: %v, want the crash", err)
	}
	holding := 0
	for i, rc := range nodeClients(t, c) {
		v, _ := rc.Get(ctx, "crash").Result()
		pttl, _ := rc.PTTL(ctx, "crash").Result()
		switch {
		case v == "":
			t.Logf("node %d holds nothing (its SET missed the per-node timeout)", i+1)
		case v != lease.Token || pttl <= 0 || pttl > ttl:
			t.Fatalf("node %d: %q with PTTL %v, want our token expiring within the TTL", i+1, v, pttl)
		default:
			holding++
		}
	}
	if holding < 3 {
		t.Fatalf("%d of 5 nodes hold the token after the validity check passed, want a majority", holding)
	}
}
