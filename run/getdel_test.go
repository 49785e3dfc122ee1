package run_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/run"
	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/workloads"
)

// getDelLock is the classic broken release: GET the key, and if it holds
// our token, DEL it, as two commands. A client delayed between the two (a
// GC pause, a slow network: here a pause longer than the TTL in one
// release in four) deletes whatever is there by then: the next holder's
// key. Its DEL is a script that deletes unconditionally, as DEL does, and
// also returns what it deleted, so that the test knows each stale DEL and
// whether its victim was still inside its critical section (had not begun
// to release): only that breaks a promise.
type getDelLock struct {
	node  sut.ClientNode
	ttl   time.Duration
	rng   *rand.Rand
	truth *staleDels
	mu    sync.Mutex
}

// staleDels is the ground truth of one run, shared by its lock instances.
type staleDels struct {
	mu        sync.Mutex
	releasing map[string]bool // tokens whose holder has begun to release
	victims   map[string]bool // tokens deleted by a stale DEL in their critical section
	all       int             // DELs that removed another client's key
	harmful   int             // … while that client was in its critical section
	// told counts victims whose own release then found the key gone well
	// before their lease's end (10ms of margin for the recorder): the
	// history holds the evidence.
	told int
}

func (s *staleDels) releaseBegins(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.releasing[token] = true
}

func (s *staleDels) deleted(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.all++
	if !s.releasing[token] {
		s.harmful++
		s.victims[token] = true
	}
}

func (s *staleDels) notHeld(lease locks.Lease) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.victims[lease.Token] && time.Now().Before(lease.ValidUntil.Add(-10*time.Millisecond)) {
		s.told++
	}
}

var delReturning = redis.NewScript(`
local v = redis.call("get", KEYS[1])
redis.call("del", KEYS[1])
return v`)

func (l *getDelLock) Acquire(ctx context.Context, key string, _ locks.AcquireOptions) (locks.Lease, error) {
	l.mu.Lock()
	lease := locks.Lease{Key: key, Token: fmt.Sprintf("%016x", l.rng.Uint64())}
	l.mu.Unlock()
	start := time.Now()
	err := l.node.Client.Do(ctx, "set", key, lease.Token, "px", l.ttl.Milliseconds(), "nx").Err()
	if errors.Is(err, redis.Nil) {
		return lease, locks.ErrNotAcquired
	}
	if err != nil {
		return lease, err
	}
	lease.ValidUntil = start.Add(l.ttl)
	return lease, nil
}

func (l *getDelLock) Release(ctx context.Context, lease locks.Lease) error {
	l.truth.releaseBegins(lease.Token)
	v, err := l.node.Client.Get(ctx, lease.Key).Result()
	if errors.Is(err, redis.Nil) || (err == nil && v != lease.Token) {
		l.truth.notHeld(lease)
		return locks.ErrNotHeld // a definite answer from the one node
	}
	if err != nil {
		return err
	}
	l.mu.Lock()
	pause := l.rng.IntN(4) == 0
	l.mu.Unlock()
	if pause {
		time.Sleep(l.ttl + l.ttl/5)
	}
	deleted, err := delReturning.Run(ctx, l.node.Client, []string{lease.Key}).Text()
	if err == nil && deleted != lease.Token {
		l.truth.deleted(deleted) // another client's live key
	}
	if errors.Is(err, redis.Nil) {
		err = nil
	}
	return err
}

// TestGetDelLockLosesLeasesAndIsCaught: with no work inside the critical
// section (Hold 0), a stale DEL rarely lets a third client in before the
// victim releases, so the overlap analysis alone seldom sees it; but the
// victim's own release is then answered "not held" before its deadline: a
// lost lease. Every run in which a stale DEL removed the key of a client
// still inside its critical section, and that client's release then found
// its key gone before its lease's end, must be invalid with one. (A stale
// DEL whose victim had already begun to release, and found its own token,
// breaks no promise: that client had let go. A victim that learns of it
// only after its deadline, on a loaded machine, leaves no evidence.)
func TestGetDelLockLosesLeasesAndIsCaught(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real Redis")
	}
	t.Parallel()
	const runs = 6
	harmfulRuns, caught, byOverlap := 0, 0, 0
	for seed := uint64(1); seed <= runs; seed++ {
		truth := &staleDels{releasing: map[string]bool{}, victims: map[string]bool{}}
		reg := locks.Builtin()
		err := reg.Register(locks.Info{
			Name: "get-del", Description: "GET then DEL as two commands", MaxNodes: 1,
			New: func(nodes []sut.ClientNode, opts locks.Options) (locks.Lock, error) {
				opts = opts.WithDefaults()
				return &getDelLock{node: nodes[0], ttl: opts.TTL, rng: opts.Rand, truth: truth}, nil
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		out, err := run.Run(context.Background(), run.Config{
			Lock: "get-del", Registry: reg, Seed: seed, Store: storeDir(t),
			TimeLimit: 3 * time.Second, Recovery: 500 * time.Millisecond,
			Workload: workloads.Config{Clients: 3, Keys: 1, TTL: 200 * time.Millisecond, Hold: 0},
		})
		if err != nil {
			t.Fatal(err)
		}
		res := out.Results
		kinds := map[string]int{}
		for _, v := range res.Violations {
			kinds[v.Kind]++
		}
		verdict := res.Checkers[checker.LockPromise].Verdict
		t.Logf("seed %d: %d stale DELs, %d of a client inside its critical section, %d victims told before their deadline; lock promise %s; violations %v",
			seed, truth.all, truth.harmful, truth.told, verdict, kinds)
		if truth.harmful == 0 {
			continue
		}
		if truth.told == 0 {
			t.Logf("seed %d: no victim was told in time: nothing to require", seed)
			continue
		}
		harmfulRuns++
		if kinds[checker.KindOverlap] > 0 || kinds[checker.KindForeignRelease] > 0 {
			byOverlap++
		}
		if verdict == checker.Invalid && kinds[checker.KindLostLease] >= truth.told {
			caught++
		} else {
			t.Errorf("seed %d: %d harmful stale DELs, but lock promise %s with %v", seed, truth.harmful, verdict, kinds)
		}
	}
	t.Logf("%d of %d runs had a stale DEL of a client inside its critical section that it was told of in time; %d of them caught with a lost lease; %d would be caught by overlaps and foreign releases alone",
		harmfulRuns, runs, caught, byOverlap)
	if harmfulRuns == 0 {
		t.Fatal("no run had a harmful stale DEL: the test exercised nothing")
	}
}

func storeDir(t *testing.T) string {
	if d := os.Getenv("GETDEL_STORE"); d != "" {
		return d
	}
	return t.TempDir()
}
