package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/sut"
)

// myLock is the team's lock under test: SET key token NX PX ttl over the
// go-redis client the harness gives each client (it reaches the node
// through the harness's proxies, so faults reach it), and a release that
// deletes the key only while it holds the caller's token.
type myLock struct {
	client redis.UniversalClient
	opts   locks.Options
}

func newMyLock(nodes []sut.ClientNode, opts locks.Options) (locks.Lock, error) {
	if len(nodes) != 1 {
		return nil, fmt.Errorf("my-setnx-px needs 1 node, got %d", len(nodes))
	}
	return &myLock{client: nodes[0].Client, opts: opts.WithDefaults()}, nil
}

// Acquire tries until the lock is free or o.Wait has passed. The lease is
// valid until the instant before the SET plus the TTL: the server's expiry
// is no earlier.
func (l *myLock) Acquire(ctx context.Context, key string, o locks.AcquireOptions) (locks.Lease, error) {
	lease := locks.Lease{Key: key, Token: fmt.Sprintf("%016x", l.opts.Rand.Uint64())}
	deadline := time.Now().Add(o.Wait)
	for {
		start := time.Now()
		err := l.client.SetArgs(ctx, key, lease.Token, redis.SetArgs{Mode: "NX", TTL: l.opts.TTL}).Err()
		switch {
		case err == nil:
			lease.ValidUntil = start.Add(l.opts.TTL)
			return lease, nil
		case !errors.Is(err, redis.Nil):
			return lease, err // no answer: the outcome is unknown
		case time.Now().After(deadline) || ctx.Err() != nil:
			return lease, locks.ErrNotAcquired // held by someone else
		}
		time.Sleep(10 * time.Millisecond)
	}
}

var release = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) end return 0`)

// Release deletes the key if it still holds the lease's token; a key
// that holds another token (or none) is a definite "not held".
func (l *myLock) Release(ctx context.Context, lease locks.Lease) error {
	n, err := release.Run(ctx, l.client, []string{lease.Key}, lease.Token).Int64()
	if err != nil {
		return err
	}
	if n == 0 {
		return locks.ErrNotHeld
	}
	return nil
}
