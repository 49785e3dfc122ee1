package locks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockharness/lockharness/sut"
)

var setNXEXInfo = Info{
	Name:         "set-nx-ex",
	Description:  "SET key 1 NX EX ttl with a constant value, DEL to release: a late release deletes another client's lock",
	MaxNodes:     1,
	CheckOptions: checkWholeSeconds,
	New:          newSetNXEX,
}

// checkWholeSeconds refuses a TTL that EX cannot express.
func checkWholeSeconds(opts Options) error {
	opts = opts.WithDefaults()
	if opts.TTL < time.Second || opts.TTL%time.Second != 0 {
		return fmt.Errorf("set-nx-ex uses EX (whole seconds): TTL %v is not a whole number of seconds; use --ttl 1s, 2s, …", opts.TTL)
	}
	return nil
}

// setNXEX is the common single-command lock with no owner check: atomic
// acquire with expiry, but anyone's DEL releases it.
type setNXEX struct {
	node sut.ClientNode
	opts Options
}

func newSetNXEX(nodes []sut.ClientNode, opts Options) (Lock, error) {
	if len(nodes) != 1 {
		return nil, fmt.Errorf("set-nx-ex lock needs exactly 1 node, got %d", len(nodes))
	}
	if err := checkWholeSeconds(opts); err != nil {
		return nil, err
	}
	return &setNXEX{node: nodes[0], opts: opts.WithDefaults()}, nil
}

// lockValue is the constant every set-nx-ex holder writes: nothing tells two
// holders apart.
const lockValue = "1"

func (l *setNXEX) Acquire(ctx context.Context, key string, o AcquireOptions) (Lease, error) {
	return retry(ctx, o, l.opts.RetryDelay, l.opts.Rand, func() (Lease, error) {
		lease := Lease{Key: key, Token: lockValue}
		start := time.Now()
		err := l.node.Client.Do(ctx, "set", key, lockValue, "ex", int64(l.opts.TTL/time.Second), "nx").Err()
		if errors.Is(err, redis.Nil) {
			return lease, ErrNotAcquired
		}
		if err != nil {
			return lease, &NodeError{Node: l.node.Name, Op: "SET NX EX", Err: err}
		}
		lease.ValidUntil = start.Add(l.opts.TTL)
		return lease, nil
	})
}

// Release deletes the key whoever holds it. DEL of a missing key is not an
// error for this lock (it cannot tell), so it always succeeds when Redis
// answers: that is its flaw.
func (l *setNXEX) Release(ctx context.Context, lease Lease) error {
	if err := l.node.Client.Del(ctx, lease.Key).Err(); err != nil {
		return &NodeError{Node: l.node.Name, Op: "DEL", Err: err}
	}
	return nil
}
