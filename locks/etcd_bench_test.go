package locks_test

import (
	"testing"
	"time"

	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/sut/etcd/etcdtest"
)

// BenchmarkAcquireReleaseEtcd is BenchmarkAcquireRelease for the etcd
// locks: 10 clients, each its own lock instance and etcd client, on its
// own key, on a healthy three-member group, every client through its own
// links. A cycle is a grant, the mutex's transaction, the compare-and-
// delete and the revoke: four writes through raft, each fsynced by a
// majority. The pairs/s metric is for all ten clients together; compare
// with BenchmarkAcquireRelease/token (one SET and one script on one
// Redis).
func BenchmarkAcquireReleaseEtcd(b *testing.B) {
	const clients = 10
	for _, name := range []string{"etcd", "etcd-fenced"} {
		b.Run(name, func(b *testing.B) {
			etcdtest.Require(b)
			c := etcdtest.Up(b, sut.Config{Clients: clients})
			ls := make([]locks.Lock, clients)
			for i := range ls {
				ls[i] = newLock(b, name, c.ClientNodes(i, sut.ClientOptions{Timeout: 5 * time.Second}), uint64(i), locks.Options{TTL: 10 * time.Second})
			}
			benchPairs(b, ls)
		})
	}
}
