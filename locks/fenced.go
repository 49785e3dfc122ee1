package locks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockharness/lockharness/sut"
)

var fencedInfo = Info{
	Name:        "fenced",
	Description: "token plus a fencing token from INCR fence:<key>, taken in the same Lua script as the SET; storage rejects writes with a stale token",
	MaxNodes:    1,
	Fenced:      true,
	New:         newFencedLock,
}

// FenceKey is the counter that numbers the grants of key: every successful
// acquire of the fenced lock increments it, on the lock's node.
func FenceKey(key string) string { return "fence:" + key }

// setNXPXIncr takes the lock and draws the fencing token in one script, so
// no grant goes without a token and no token is drawn without a grant: a
// second command could be lost after the SET and leave the holder unfenced.
var setNXPXIncr = redis.NewScript(`
if redis.call("set", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then
  return redis.call("incr", KEYS[2])
end
return false`)

// fencedLock is the token lock plus Kleppmann's fencing token: a number that
// grows with every grant, which the protected storage checks, so a client
// that outlived its lease (a GC pause, a slow network) is refused there.
type fencedLock struct {
	tokenLock
}

func newFencedLock(nodes []sut.ClientNode, opts Options) (Lock, error) {
	if len(nodes) != 1 {
		return nil, fmt.Errorf("fenced lock needs exactly 1 node, got %d", len(nodes))
	}
	return &fencedLock{tokenLock{node: nodes[0], opts: opts.WithDefaults()}}, nil
}

func (l *fencedLock) Acquire(ctx context.Context, key string, o AcquireOptions) (Lease, error) {
	return retry(ctx, o, l.opts.RetryDelay, l.opts.Rand, func() (Lease, error) {
		lease := Lease{Key: key, Token: newToken(l.opts.Rand)}
		start := time.Now()
		fence, err := setNXPXIncr.Run(ctx, l.node.Client, []string{key, FenceKey(key)}, lease.Token, l.opts.TTL.Milliseconds()).Int64()
		if errors.Is(err, redis.Nil) {
			return lease, ErrNotAcquired
		}
		if err != nil {
			return lease, &NodeError{Node: l.node.Name, Op: "SET NX PX + INCR", Err: err}
		}
		lease.Fence = fence
		lease.ValidUntil = start.Add(l.opts.TTL)
		return lease, nil
	})
}
