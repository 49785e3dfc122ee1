package locks_test

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"testing"
	"time"

	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/locks"
)

// TestQuorumSubsets: for every subset of the five nodes already held by
// another owner, the lock is granted exactly when a majority is free; a
// refusal is definite and leaves no token of ours on any node; a grant (and
// a renew) names exactly the free nodes as the ones that granted it, with
// the quorum it needed, so a report can tell a bare majority.
func TestQuorumSubsets(t *testing.T) {
	for _, name := range []string{"redlock", "redsync"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := up(t, 5, 1)
			ctx := context.Background()
			rcs := nodeClients(t, c)
			nodes := nodesOf(t, c, 0)
			l := newLock(t, name, nodes, 1, locks.Options{TTL: 5 * time.Second})
			for mask := 0; mask < 32; mask++ {
				key := fmt.Sprintf("subset-%02d", mask)
				for i, rc := range rcs {
					if mask&(1<<i) != 0 {
						if err := rc.Set(ctx, key, "other-owner", 10*time.Second).Err(); err != nil {
							t.Fatal(err)
						}
					}
				}
				taken := bits.OnesCount(uint(mask))
				lease, err := l.Acquire(ctx, key, locks.AcquireOptions{})
				if want := 5-taken >= 3; (err == nil) != want {
					t.Fatalf("%d of 5 nodes taken (mask %05b): acquired=%v (%v), want %v", taken, mask, err == nil, err, want)
				}
				if err != nil {
					if !errors.Is(err, locks.ErrNotAcquired) || locks.Outcome(err) != history.Fail {
						t.Fatalf("mask %05b: refusal %v is not a definite ErrNotAcquired", mask, err)
					}
				}
				for i, rc := range rcs {
					v, _ := rc.Get(ctx, key).Result()
					switch {
					case mask&(1<<i) != 0 && v != "other-owner":
						t.Fatalf("mask %05b: node %d holds %q, want the other owner's", mask, i+1, v)
					case mask&(1<<i) == 0 && err == nil && v != lease.Token:
						t.Fatalf("mask %05b: granted, but free node %d holds %q", mask, i+1, v)
					case mask&(1<<i) == 0 && err != nil && v != "":
						t.Fatalf("mask %05b: refused, but left %q on node %d", mask, v, i+1)
					}
				}
				if err == nil {
					var free []string
					for i, n := range nodes {
						if mask&(1<<i) == 0 {
							free = append(free, n.Name)
						}
					}
					if !slices.Equal(lease.Nodes, free) || lease.Quorum != 3 {
						t.Fatalf("mask %05b: granted by %v with quorum %d, want %v with quorum 3", mask, lease.Nodes, lease.Quorum, free)
					}
					renewed, err := l.(locks.Renewer).Renew(ctx, lease)
					if err != nil {
						t.Fatalf("mask %05b: renew: %v", mask, err)
					}
					if !slices.Equal(renewed.Nodes, free) || renewed.Quorum != 3 {
						t.Fatalf("mask %05b: renewed by %v with quorum %d, want %v with quorum 3", mask, renewed.Nodes, renewed.Quorum, free)
					}
					if err := l.Release(ctx, lease); err != nil {
						t.Fatalf("mask %05b: release: %v", mask, err)
					}
				}
			}
		})
	}
}

// TestQuorumLatency: the validity left when the lock is granted shrinks by
// at least the latency added to every link; and when the acquisition takes
// longer than the TTL, the lock is refused.
func TestQuorumLatency(t *testing.T) {
	for _, name := range []string{"redlock", "redsync"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := up(t, 5, 1)
			ctx := context.Background()
			// 4s: each node gets a twentieth (200ms) to answer, room for the
			// 50ms of latency below on a loaded machine.
			ttl := 4 * time.Second
			drift := locks.RedlockDrift(ttl) // redsync's drift factor is the same 1%, without the 2ms
			l := newLock(t, name, nodesOf(t, c, 0), 1, locks.Options{TTL: ttl})
			validity := func(key string) time.Duration {
				t.Helper()
				lease, err := l.Acquire(ctx, key, locks.AcquireOptions{})
				if err != nil {
					t.Fatalf("acquire: %v", err)
				}
				left := time.Until(lease.ValidUntil)
				if err := l.Release(ctx, lease); err != nil {
					t.Fatalf("release: %v", err)
				}
				return left
			}
			before := validity("lat-0")
			links := c.Links()
			for _, link := range links {
				if err := link.AddToxic(`{"name":"lat","type":"latency","attributes":{"latency":50}}`); err != nil {
					t.Fatal(err)
				}
			}
			after := validity("lat-50")
			if max := ttl - 50*time.Millisecond; after > max {
				t.Fatalf("with 50ms latency the lease has %v left, more than TTL − 50ms = %v", after, max)
			}
			t.Logf("%s: validity left at grant: %v without latency, %v with 50ms (TTL %v, drift %v)", name, before, after, ttl, drift)
			for _, link := range links {
				link.Heal(ctx)
			}

			// Slower than the TTL: 300ms of latency against a 200ms TTL.
			short := newLock(t, name, nodesOf(t, c, 0), 2, locks.Options{TTL: 200 * time.Millisecond})
			for _, link := range links {
				if err := link.AddToxic(`{"name":"lat","type":"latency","attributes":{"latency":300}}`); err != nil {
					t.Fatal(err)
				}
			}
			lease, err := short.Acquire(ctx, "lat-slow", locks.AcquireOptions{})
			if err == nil {
				t.Fatalf("acquired with 300ms latency and a 200ms TTL: lease until %v (%v ago)", lease.ValidUntil, -time.Until(lease.ValidUntil))
			}
			t.Logf("%s: 300ms latency, TTL 200ms: %v (%s)", name, err, locks.Outcome(err))
			for _, link := range links {
				link.Heal(ctx)
			}
		})
	}
}
