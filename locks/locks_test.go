package locks_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/locks"
	redisbackend "github.com/lockharness/lockharness/sut/redis"
)

// lockNames is every built-in lock.
// lockNames are the Redis locks; the other systems' locks are tested with
// their own servers (etcd_test.go).
func lockNames() []string {
	var out []string
	for _, info := range locks.Builtin().All() {
		if info.SystemName() == locks.SystemRedis {
			out = append(out, info.Name)
		}
	}
	return out
}

func TestCatalogue(t *testing.T) {
	want := []string{"fenced", "redislock", "redlock", "redsync", "reentrant", "rueidislock", "set-nx-ex", "setnx", "setnx-expire", "token", "token-wait"}
	got := lockNames()
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("built-in locks = %v, want %v", got, want)
	}
	if all := strings.Join(locks.Builtin().Names(), ","); !strings.Contains(all, "etcd,etcd-fenced") {
		t.Errorf("built-in locks %s lack the etcd locks", all)
	}
	for _, info := range locks.Builtin().All() {
		if info.Description == "" {
			t.Errorf("%s has no description", info.Name)
		}
		if info.Fenced != strings.HasSuffix(info.Name, "fenced") {
			t.Errorf("%s: Fenced = %v", info.Name, info.Fenced)
		}
		if _, err := info.New(nil, locks.Options{}); err == nil {
			t.Errorf("%s accepted zero nodes", info.Name)
		}
	}
	if _, err := locks.Builtin().Lookup("nope"); err == nil || !strings.Contains(err.Error(), "redlock") {
		t.Fatalf("unknown lock: %v, want an error listing the known locks", err)
	}
}

// setup starts the topology the named lock needs: five nodes for the
// multi-node locks, one otherwise, plus a replica for token-wait.
func setup(t *testing.T, name string) *redisbackend.Cluster {
	t.Helper()
	n := 1
	if multiNode(name) {
		n = 5
	}
	c := up(t, n, 1)
	if name == "token-wait" {
		withReplica(t, c.Nodes[0])
	}
	return c
}

// holders tracks who is inside the critical section of one key, with the
// lease each holds, and reports two live leases at once.
type holders struct {
	mu         sync.Mutex
	in         map[int]locks.Lease
	violations []string
	maxInside  int
}

// enter records that client id got lease, at now, and reports every other
// holder whose lease has not ended: the lock told two clients they hold it.
func (h *holders) enter(id int, lease locks.Lease) {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := time.Now()
	for other, l := range h.in {
		if !l.Expires() || now.Before(l.ValidUntil) {
			h.violations = append(h.violations, fmt.Sprintf("client %d acquired while client %d's lease runs until %v (%v from now)", id, other, l.ValidUntil, l.ValidUntil.Sub(now)))
		}
	}
	h.in[id] = lease
	h.maxInside = max(h.maxInside, len(h.in))
}

func (h *holders) leave(id int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.in, id)
}

// TestMutualExclusion runs 50 clients, each its own lock instance over its
// own connections, on one key of a healthy topology: at no instant may two of
// them hold a live lease.
func TestMutualExclusion(t *testing.T) {
	for _, name := range lockNames() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := setup(t, name)
			const clients = 50
			run := 1500 * time.Millisecond
			h := &holders{in: map[int]locks.Lease{}}
			var acquired, unknown atomic.Int64
			var inside atomic.Int32
			var maxInside atomic.Int32
			// Fifty clients splitting the votes of five nodes can keep
			// Redlock from any majority for long: the distlock page's remedy
			// is a longer random delay before retrying.
			// A longer TTL gives Redlock a longer per-node timeout
			// (TTL/20), which a loaded machine needs.
			opts := locks.Options{TTL: time.Second}
			if multiNode(name) {
				opts.RetryDelay = 100 * time.Millisecond
				opts.TTL = 2 * time.Second
			}
			ctx := context.Background()
			ls := make([]locks.Lock, clients)
			for i := range ls {
				nodes := nodesOf(t, c, 0)
				// Dial first, so the run does not start with 250 dials at once.
				for _, n := range nodes {
					if err := n.Client.Ping(ctx).Err(); err != nil {
						t.Fatalf("ping %s: %v", n.Name, err)
					}
				}
				ls[i] = newLock(t, name, nodes, uint64(i), opts)
			}
			// Run at least run, and on until a few clients got the lock (a
			// loaded machine can make Redlock's short per-node timeouts
			// expire for a while), but never past maxRun.
			start := time.Now()
			maxRun := 10 * time.Second
			more := func() bool {
				d := time.Since(start)
				return d < run || (acquired.Load() < 5 && d < maxRun)
			}
			var wg sync.WaitGroup
			for i, l := range ls {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for more() {
						lease, err := l.Acquire(ctx, "mutex", locks.AcquireOptions{Wait: 500 * time.Millisecond})
						if err != nil {
							if locks.Outcome(err) == history.Info {
								if unknown.Add(1) <= 2 {
									t.Logf("unknown outcome: %v", err)
								}
							}
							continue
						}
						acquired.Add(1)
						h.enter(i, lease)
						n := inside.Add(1)
						for m := maxInside.Load(); n > m && !maxInside.CompareAndSwap(m, n); m = maxInside.Load() {
						}
						time.Sleep(time.Millisecond)
						inside.Add(-1)
						h.leave(i)
						if err := l.Release(ctx, lease); err != nil && locks.Outcome(err) == history.Info {
							unknown.Add(1)
						}
					}
				}()
			}
			wg.Wait()
			for _, v := range h.violations {
				t.Error(v)
			}
			if acquired.Load() == 0 {
				t.Fatalf("no client acquired the lock in %v", maxRun)
			}
			t.Logf("%s: %d acquisitions by %d clients in %v, %d unknown outcomes, at most %d inside at once",
				name, acquired.Load(), clients, time.Since(start).Round(time.Millisecond), unknown.Load(), maxInside.Load())
		})
	}
}

// TestExpiry: a holder that never releases loses the lock when its lease
// ends, and not before: the next client gets it, no earlier than the first
// lease's ValidUntil. setnx has no expiry: it is held forever.
func TestExpiry(t *testing.T) {
	for _, name := range lockNames() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := setup(t, name)
			ctx := context.Background()
			ttl := time.Second
			a := newLock(t, name, nodesOf(t, c, 0), 1, locks.Options{TTL: ttl})
			b := newLock(t, name, nodesOf(t, c, 0), 2, locks.Options{TTL: ttl})
			// Wait, and untilDefinite below: on a loaded machine a Redlock
			// node may miss its per-node timeout (no quorum, or unknown).
			// The first acquire too: at load 28 all three of its tries on
			// n1–n3 missed the per-node timeout (unknown; released on all).
			var la locks.Lease
			err := untilDefinite(func() (err error) {
				la, err = a.Acquire(ctx, "expiry", locks.AcquireOptions{Wait: ttl / 2})
				return err
			})
			if err != nil {
				t.Fatalf("first acquire: %v", err)
			}
			if cl, ok := a.(locks.Closer); ok {
				_ = cl.Close() // the reentrant holder dies: its watchdog stops
			}
			err = untilDefinite(func() error { _, err := b.Acquire(ctx, "expiry", locks.AcquireOptions{}); return err })
			if !errors.Is(err, locks.ErrNotAcquired) {
				t.Fatalf("second acquire while held: %v, want ErrNotAcquired", err)
			}
			if name == "setnx" {
				if la.Expires() {
					t.Fatalf("setnx lease expires at %v; it has no expiry", la.ValidUntil)
				}
				if _, err := b.Acquire(ctx, "expiry", locks.AcquireOptions{Wait: 2 * ttl}); !errors.Is(err, locks.ErrNotAcquired) {
					t.Fatalf("setnx acquired after 2 TTLs: %v; an abandoned setnx lock is held forever", err)
				}
				return
			}
			if !la.Expires() {
				t.Fatalf("lease has no deadline")
			}
			if d := time.Until(la.ValidUntil); d > ttl {
				t.Fatalf("lease ends %v from now, more than the TTL %v", d, ttl)
			}
			lb, err := b.Acquire(ctx, "expiry", locks.AcquireOptions{Wait: 3 * ttl})
			got := time.Now()
			if err != nil {
				t.Fatalf("acquire after the holder went away: %v", err)
			}
			if got.Before(la.ValidUntil) {
				t.Fatalf("second holder got the lock %v before the first lease ended", la.ValidUntil.Sub(got))
			}
			t.Logf("%s: lock free again %v after the first lease's end", name, got.Sub(la.ValidUntil).Round(time.Millisecond))
			if err := b.Release(ctx, lb); err != nil {
				t.Fatalf("release: %v", err)
			}
		})
	}
}

// TestNonOwnerRelease: a release by a client that does not hold the lock is
// refused by every lock that checks a token, and goes through for the ones
// that only DEL (their flaw: a late holder deletes the next one's lock).
func TestNonOwnerRelease(t *testing.T) {
	unchecked := map[string]bool{"setnx": true, "setnx-expire": true, "set-nx-ex": true}
	for _, name := range lockNames() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := setup(t, name)
			ctx := context.Background()
			a := newLock(t, name, nodesOf(t, c, 0), 1, locks.Options{TTL: 2 * time.Second})
			b := newLock(t, name, nodesOf(t, c, 0), 2, locks.Options{TTL: 2 * time.Second})
			third := newLock(t, name, nodesOf(t, c, 0), 3, locks.Options{TTL: 2 * time.Second})
			// Wait and untilDefinite: a loaded machine may time out a command,
			// an unknown outcome this test is not about (a refused release
			// and a refused acquire can be tried again).
			la, err := a.Acquire(ctx, "owner", locks.AcquireOptions{Wait: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			forged := locks.Lease{Key: "owner", Token: "not-" + la.Token}
			err = untilDefinite(func() error { return b.Release(ctx, forged) })
			if unchecked[name] {
				if err != nil {
					t.Fatalf("DEL by a non-owner: %v", err)
				}
				lt, err := third.Acquire(ctx, "owner", locks.AcquireOptions{})
				if err != nil {
					t.Fatalf("after a non-owner's DEL the lock should be free: %v", err)
				}
				t.Logf("%s: a non-owner's release freed the lock; a third client took it while the first still believes it holds it", name)
				_ = third.Release(ctx, lt)
				return
			}
			if !errors.Is(err, locks.ErrNotHeld) {
				t.Fatalf("release by a non-owner: %v, want ErrNotHeld", err)
			}
			if locks.Outcome(err) != history.Fail {
				t.Fatalf("refused release is %s, want fail", locks.Outcome(err))
			}
			if err := untilDefinite(func() error { _, err := third.Acquire(ctx, "owner", locks.AcquireOptions{}); return err }); !errors.Is(err, locks.ErrNotAcquired) {
				t.Fatalf("the lock should still be held: %v", err)
			}
			if err := a.Release(ctx, la); err != nil {
				t.Fatalf("owner's release: %v", err)
			}
			if err := a.Release(ctx, la); !errors.Is(err, locks.ErrNotHeld) {
				t.Fatalf("second release: %v, want ErrNotHeld", err)
			}
		})
	}
}

// TestStopEndsTheWait: an acquire waiting for a held lock gives up with a
// definite refusal soon after its Stop channel closes, well before its
// Wait runs out (the workload closes it at teardown).
func TestStopEndsTheWait(t *testing.T) {
	for _, name := range []string{"token", "token-wait", "redlock", "reentrant"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := setup(t, name)
			ctx := context.Background()
			a := newLock(t, name, nodesOf(t, c, 0), 1, locks.Options{TTL: 20 * time.Second})
			b := newLock(t, name, nodesOf(t, c, 0), 2, locks.Options{TTL: 20 * time.Second})
			if _, err := a.Acquire(ctx, "stop", locks.AcquireOptions{}); err != nil {
				t.Fatalf("first acquire: %v", err)
			}
			stop := make(chan struct{})
			time.AfterFunc(300*time.Millisecond, func() { close(stop) })
			start := time.Now()
			_, err := b.Acquire(ctx, "stop", locks.AcquireOptions{Wait: 10 * time.Second, Stop: stop})
			if !errors.Is(err, locks.ErrNotAcquired) {
				t.Fatalf("stopped acquire: %v, want ErrNotAcquired", err)
			}
			if d := time.Since(start); d > 3*time.Second {
				t.Fatalf("the acquire waited %v after its stop (wait 10s)", d)
			}
		})
	}
}
