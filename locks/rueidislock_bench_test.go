package locks_test

import (
	"testing"
	"time"

	"github.com/lockharness/lockharness/locks"
)

// BenchmarkAcquireReleaseRueidislock is BenchmarkAcquireRelease for
// rueidislock: 10 clients, each its own Locker and rueidis client, on its
// own key, on one healthy node. A cycle is the acquire script (SET NX PXAT
// + GET) and the release's compare-and-delete, sent by the library's
// monitoring goroutine; compare with BenchmarkAcquireRelease/redislock.
func BenchmarkAcquireReleaseRueidislock(b *testing.B) {
	const clients = 10
	c := up(b, 1, 1)
	ls := make([]locks.Lock, clients)
	for i := range ls {
		ls[i] = newLock(b, "rueidislock", nodesOf(b, c, 0), uint64(i), locks.Options{TTL: 10 * time.Second})
	}
	benchPairs(b, ls)
}
