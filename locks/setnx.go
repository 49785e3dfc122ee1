package locks

import (
	"context"
	"fmt"
	"time"

	"github.com/lockharness/lockharness/sut"
)

var setNXInfo = Info{
	Name:        "setnx",
	Description: "SETNX key 1, DEL to release, no expiry: a crashed holder blocks everyone forever",
	MaxNodes:    1,
	New:         newSetNX,
}

// setNX is the oldest Redis lock recipe: SETNX with a constant value and no
// expiry. It is safe while every holder lives to release it, and deadlocks
// the key forever when one does not; and anyone's DEL releases it.
type setNX struct {
	node sut.ClientNode
	opts Options
}

func newSetNX(nodes []sut.ClientNode, opts Options) (Lock, error) {
	if len(nodes) != 1 {
		return nil, fmt.Errorf("setnx lock needs exactly 1 node, got %d", len(nodes))
	}
	return &setNX{node: nodes[0], opts: opts.WithDefaults()}, nil
}

// setnx sends SETNX key value and reports ErrNotAcquired when it returns 0.
// The instant returned is taken before the command is sent.
func setnx(ctx context.Context, n sut.ClientNode, key, value string) (time.Time, error) {
	start := time.Now()
	set, err := n.Client.SetNX(ctx, key, value, 0).Result()
	if err != nil {
		return start, &NodeError{Node: n.Name, Op: "SETNX", Err: err}
	}
	if !set {
		return start, ErrNotAcquired
	}
	return start, nil
}

func (l *setNX) Acquire(ctx context.Context, key string, o AcquireOptions) (Lease, error) {
	return retry(ctx, o, l.opts.RetryDelay, l.opts.Rand, func() (Lease, error) {
		lease := Lease{Key: key, Token: lockValue}
		_, err := setnx(ctx, l.node, key, lockValue)
		return lease, err // no expiry: ValidUntil stays zero, the lease never ends
	})
}

// Release deletes the key whoever holds it: the flaw it shares with
// set-nx-ex.
func (l *setNX) Release(ctx context.Context, lease Lease) error {
	return del(ctx, l.node, lease.Key)
}

// del sends DEL key; a missing key is not an error, the lock cannot tell.
func del(ctx context.Context, n sut.ClientNode, key string) error {
	if err := n.Client.Del(ctx, key).Err(); err != nil {
		return &NodeError{Node: n.Name, Op: "DEL", Err: err}
	}
	return nil
}
