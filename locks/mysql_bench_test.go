package locks_test

import (
	"testing"
	"time"

	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/sut/mariadb/mariadbtest"
)

// BenchmarkAcquireReleaseMySQL is BenchmarkAcquireRelease for the MySQL
// locks: 10 clients, each its own lock instance and connection pool, on
// its own key, on one healthy MariaDB server, every client through its
// own link. A pair is, for mysql-for-update, START TRANSACTION, SELECT …
// FOR UPDATE NOWAIT, a ping and COMMIT (mysql-fenced adds the INSERT of
// its token; mysql-get-lock is GET_LOCK, a ping and RELEASE_LOCK), each a
// round trip through the client's proxy. The pairs/s metric is for all
// ten clients together; compare with BenchmarkAcquireRelease/token (one
// SET and one script on one Redis).
func BenchmarkAcquireReleaseMySQL(b *testing.B) {
	const clients = 10
	for _, name := range mysqlLocks {
		b.Run(name, func(b *testing.B) {
			mariadbtest.Require(b)
			c := mariadbtest.Up(b, sut.Config{Clients: clients})
			ls := make([]locks.Lock, clients)
			for i := range ls {
				ls[i] = newLock(b, name, c.ClientNodes(i, sut.ClientOptions{Timeout: 5 * time.Second}), uint64(i), locks.Options{})
			}
			benchPairs(b, ls)
		})
	}
}
