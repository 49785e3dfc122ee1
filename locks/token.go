package locks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockharness/lockharness/sut"
)

var tokenInfo = Info{
	Name:        "token",
	Description: "SET key random-token NX PX ttl; release and renew are Lua scripts that compare the token first",
	MaxNodes:    1,
	New:         newTokenLock,
}

// compareAndDelete deletes the key only if it still holds our token: the
// release from the redis.io distlock page.
var compareAndDelete = redis.NewScript(`
if redis.call("get", KEYS[1]) == ARGV[1] then
  return redis.call("del", KEYS[1])
else
  return 0
end`)

// compareAndPexpire extends the key only if it still holds our token.
var compareAndPexpire = redis.NewScript(`
if redis.call("get", KEYS[1]) == ARGV[1] then
  return redis.call("pexpire", KEYS[1], ARGV[2])
else
  return 0
end`)

// tokenLock is the single-node lock the redis.io distlock page recommends:
// a random token per acquisition, so only the holder can release or extend.
type tokenLock struct {
	node sut.ClientNode
	opts Options
}

func newTokenLock(nodes []sut.ClientNode, opts Options) (Lock, error) {
	if len(nodes) != 1 {
		return nil, fmt.Errorf("token lock needs exactly 1 node, got %d", len(nodes))
	}
	return &tokenLock{node: nodes[0], opts: opts.WithDefaults()}, nil
}

// setNXPX sends SET key value PX ttl NX, always in milliseconds (go-redis's
// SetNX would send EX for whole seconds). It returns ErrNotAcquired when the
// key exists. The returned instant is taken before the command is sent: the
// server set the expiry no earlier than that, so it bounds the lease.
func setNXPX(ctx context.Context, n sut.ClientNode, key, value string, ttl time.Duration) (time.Time, error) {
	start := time.Now()
	err := n.Client.Do(ctx, "set", key, value, "px", ttl.Milliseconds(), "nx").Err()
	if errors.Is(err, redis.Nil) {
		return start, ErrNotAcquired
	}
	if err != nil {
		return start, &NodeError{Node: n.Name, Op: "SET NX PX", Err: err}
	}
	return start, nil
}

func (l *tokenLock) Acquire(ctx context.Context, key string, o AcquireOptions) (Lease, error) {
	return retry(ctx, o, l.opts.RetryDelay, l.opts.Rand, func() (Lease, error) {
		lease := Lease{Key: key, Token: newToken(l.opts.Rand)}
		start, err := setNXPX(ctx, l.node, key, lease.Token, l.opts.TTL)
		if err != nil {
			return lease, err
		}
		lease.ValidUntil = start.Add(l.opts.TTL)
		return lease, nil
	})
}

func (l *tokenLock) Release(ctx context.Context, lease Lease) error {
	return runCompare(ctx, l.node, compareAndDelete, "release", lease.Key, lease.Token)
}

func (l *tokenLock) Renew(ctx context.Context, lease Lease) (Lease, error) {
	start := time.Now()
	if err := runCompare(ctx, l.node, compareAndPexpire, "renew", lease.Key, lease.Token, l.opts.TTL.Milliseconds()); err != nil {
		return lease, err
	}
	lease.ValidUntil = start.Add(l.opts.TTL)
	return lease, nil
}

// runCompare runs a compare-token script that returns 1 on success and 0
// when the key holds another token (or none): ErrNotHeld.
func runCompare(ctx context.Context, n sut.ClientNode, s *redis.Script, op, key string, args ...any) error {
	res, err := s.Run(ctx, n.Client, []string{key}, args...).Int64()
	if err != nil {
		return &NodeError{Node: n.Name, Op: op, Err: err}
	}
	if res == 0 {
		return &NodeError{Node: n.Name, Op: op, Err: ErrNotHeld}
	}
	return nil
}
