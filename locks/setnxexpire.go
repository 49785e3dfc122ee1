package locks

import (
	"context"
	"fmt"
	"time"

	"github.com/lockharness/lockharness/sut"
)

// FailpointAfterSetNX fires in setnx-expire between SETNX and EXPIRE: a
// client that crashes there leaves a key with no expiry behind.
const FailpointAfterSetNX = "after-setnx"

var setNXExpireInfo = Info{
	Name:        "setnx-expire",
	Description: "SETNX then EXPIRE as a second command (not atomic), DEL to release: a crash between the two leaves a key that never expires",
	MaxNodes:    1,
	Failpoints:  []string{FailpointAfterSetNX},
	New:         newSetNXExpire,
}

// setNXExpire is the recipe that predates SET's NX and PX options: take the
// key with SETNX, then give it an expiry with a second command. Between the
// two the key has no expiry, so a crash there is the setnx deadlock.
type setNXExpire struct {
	node sut.ClientNode
	opts Options
}

func newSetNXExpire(nodes []sut.ClientNode, opts Options) (Lock, error) {
	if len(nodes) != 1 {
		return nil, fmt.Errorf("setnx-expire lock needs exactly 1 node, got %d", len(nodes))
	}
	return &setNXExpire{node: nodes[0], opts: opts.WithDefaults()}, nil
}

func (l *setNXExpire) Acquire(ctx context.Context, key string, o AcquireOptions) (Lease, error) {
	return retry(ctx, o, l.opts.RetryDelay, l.opts.Rand, func() (Lease, error) {
		lease := Lease{Key: key, Token: lockValue}
		if _, err := setnx(ctx, l.node, key, lockValue); err != nil {
			return lease, err
		}
		if err := l.opts.failpoint(ctx, FailpointAfterSetNX); err != nil {
			return lease, err
		}
		// PEXPIRE is EXPIRE in milliseconds, so sub-second TTLs work; it is
		// the same second command with the same window.
		start := time.Now()
		if err := l.node.Client.PExpire(ctx, key, l.opts.TTL).Err(); err != nil {
			// The key is ours (SETNX succeeded) but may have no expiry: the
			// client holds a lease with no deadline. Acquire succeeded.
			return lease, nil
		}
		lease.ValidUntil = start.Add(l.opts.TTL)
		return lease, nil
	})
}

func (l *setNXExpire) Release(ctx context.Context, lease Lease) error {
	return del(ctx, l.node, lease.Key)
}
