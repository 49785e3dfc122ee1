package locks_test

import (
	"testing"
	"time"

	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/sut/zookeeper/zktest"
)

// BenchmarkAcquireReleaseZKNewLock is BenchmarkAcquireReleaseZK for
// go-zookeeper's zk.NewLock: 10 clients, each its own session, on its own
// key, on a healthy three-server ensemble. A cycle is the protected create
// (a write), the listing of the children and the delete (a write); compare
// with BenchmarkAcquireReleaseZK/zk.
func BenchmarkAcquireReleaseZKNewLock(b *testing.B) {
	const clients = 10
	zktest.Require(b)
	c := zktest.Up(b, sut.Config{Clients: clients})
	ls := make([]locks.Lock, clients)
	for i := range ls {
		ls[i] = newLock(b, "zk-newlock", c.ClientNodes(i, sut.ClientOptions{Timeout: 5 * time.Second}), uint64(i), locks.Options{TTL: 10 * time.Second})
	}
	benchPairs(b, ls)
}
