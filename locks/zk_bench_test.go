package locks_test

import (
	"testing"
	"time"

	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/sut/zookeeper/zktest"
)

// BenchmarkAcquireReleaseZK is BenchmarkAcquireRelease for the ZooKeeper
// locks: 10 clients, each its own lock instance and session, on its own
// key, on a healthy three-server ensemble, every client through its own
// links. A cycle is the create of the lock node (a write through the
// leader's atomic broadcast, logged by a majority), a read of its owner,
// the listing of the key's children and the delete (another write). The
// pairs/s metric is for all ten clients together; compare with
// BenchmarkAcquireReleaseEtcd and BenchmarkAcquireRelease/token.
func BenchmarkAcquireReleaseZK(b *testing.B) {
	const clients = 10
	for _, name := range []string{"zk", "zk-fenced"} {
		b.Run(name, func(b *testing.B) {
			zktest.Require(b)
			c := zktest.Up(b, sut.Config{Clients: clients})
			ls := make([]locks.Lock, clients)
			for i := range ls {
				ls[i] = newLock(b, name, c.ClientNodes(i, sut.ClientOptions{Timeout: 5 * time.Second}), uint64(i), locks.Options{TTL: 10 * time.Second})
			}
			benchPairs(b, ls)
		})
	}
}
