package lockharness_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockharness/lockharness"
	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/workloads"
)

// ownLock is a lock of your own: here SET NX PX with a per-client token and
// a release that checks it.
type ownLock struct {
	node  sut.ClientNode
	ttl   time.Duration
	token string
}

var checkedRelease = redis.NewScript(`
if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) end
return 0`)

func (l *ownLock) Acquire(ctx context.Context, key string, _ locks.AcquireOptions) (locks.Lease, error) {
	lease := locks.Lease{Key: key, Token: l.token}
	start := time.Now() // taken before the SET: the server's expiry is no earlier
	err := l.node.Client.Do(ctx, "set", key, l.token, "px", l.ttl.Milliseconds(), "nx").Err()
	if errors.Is(err, redis.Nil) {
		return lease, locks.ErrNotAcquired // held by someone else: certainly not acquired
	}
	if err != nil {
		return lease, err // a timeout or a reset: the outcome is unknown
	}
	lease.ValidUntil = start.Add(l.ttl)
	return lease, nil
}

func (l *ownLock) Release(ctx context.Context, lease locks.Lease) error {
	n, err := checkedRelease.Run(ctx, l.node.Client, []string{lease.Key}, lease.Token).Int64()
	if err != nil {
		return err
	}
	if n == 0 {
		return locks.ErrNotHeld
	}
	return nil
}

// Test a lock of your own: register it next to the built-in ones and run
// the harness on it, here with a client that pauses inside its critical
// section for longer than the TTL. The lock keeps its promise (its release
// checks the token), but the paused client's late write loses an update:
// only fencing tokens make such pauses harmless.
func ExampleRun() {
	reg := locks.Builtin()
	err := reg.Register(locks.Info{
		Name:        "own",
		Description: "SET NX PX with a per-client token, checked release",
		MaxNodes:    1,
		New: func(nodes []sut.ClientNode, opts locks.Options) (locks.Lock, error) {
			opts = opts.WithDefaults()
			return &ownLock{node: nodes[0], ttl: opts.TTL, token: fmt.Sprintf("%x", opts.Rand.Uint64())}, nil
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	store, _ := os.MkdirTemp("", "example-store-")
	defer os.RemoveAll(store)

	out, err := lockharness.Run(context.Background(), lockharness.Config{
		Lock: "own", Registry: reg, Seed: 7, Store: store,
		TimeLimit: 4 * time.Second, Recovery: time.Second,
		Workload: workloads.Config{Clients: 3, TTL: 500 * time.Millisecond, ClientPause: time.Second, ClientPauseRate: 0.2},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, name := range []string{"lock-promise", "resource", "liveness"} {
		fmt.Println(name, out.Results.Checkers[name].Verdict)
	}
	// Output:
	// lock-promise valid
	// resource invalid
	// liveness valid
}
