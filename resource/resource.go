// Package resource is the storage side of the protected resource: a counter
// per lock key on a storage node, read and written by clients inside their
// critical sections. A write may carry a fencing token; the storage then
// accepts it only if no higher token has been seen for that counter, checked
// and recorded atomically in one Lua script, as Kleppmann's fencing requires
// of the storage ("How to do distributed locking", 2016).
package resource

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// CounterKey is where the counter protected by lock key k lives on the
// storage node.
func CounterKey(k string) string { return "counter:" + k }

// FenceKey holds the highest fencing token the storage has accepted for the
// counter of lock key k.
func FenceKey(k string) string { return "counter-fence:" + k }

// fencedSet writes KEYS[1] = ARGV[1] unless ARGV[2] is lower than the
// highest token seen (KEYS[2]), and records the token: 1 accepted, 0
// rejected. Equal tokens are accepted: one holder may write several times.
var fencedSet = redis.NewScript(`
local seen = tonumber(redis.call("get", KEYS[2]) or "0")
local token = tonumber(ARGV[2])
if token < seen then
  return 0
end
redis.call("set", KEYS[2], ARGV[2])
redis.call("set", KEYS[1], ARGV[1])
return 1`)

// Write sets the counter of lock key k to value. With fence > 0 the storage
// checks the token and reports whether it accepted the write; with fence 0
// it is a plain SET, always accepted. An error means the outcome is unknown
// unless it is a Redis error reply.
func Write(ctx context.Context, client redis.Cmdable, k string, value, fence int64) (accepted bool, err error) {
	if fence < 0 {
		return false, fmt.Errorf("write %s: negative fencing token %d", CounterKey(k), fence)
	}
	if fence == 0 {
		if err := client.Set(ctx, CounterKey(k), value, 0).Err(); err != nil {
			return false, fmt.Errorf("write %s: %w", CounterKey(k), err)
		}
		return true, nil
	}
	res, err := fencedSet.Run(ctx, client, []string{CounterKey(k), FenceKey(k)}, value, fence).Int64()
	if err != nil {
		return false, fmt.Errorf("fenced write %s with token %d: %w", CounterKey(k), fence, err)
	}
	return res == 1, nil
}

// Read returns the counter of lock key k, 0 when it was never written.
func Read(ctx context.Context, client redis.Cmdable, k string) (int64, error) {
	v, err := client.Get(ctx, CounterKey(k)).Int64()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", CounterKey(k), err)
	}
	return v, nil
}
