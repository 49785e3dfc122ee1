package locks_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/lockharness/lockharness/cluster"
	"github.com/lockharness/lockharness/cluster/mariadb/mariadbtest"
	"github.com/lockharness/lockharness/locks"
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
			c := mariadbtest.Up(b, cluster.Config{Clients: clients})
			ls := make([]locks.Lock, clients)
			for i := range ls {
				ls[i] = newLock(b, name, c.ClientNodes(i, cluster.ClientOptions{Timeout: 5 * time.Second}), uint64(i), locks.Options{})
			}
			ctx := context.Background()
			errs := make(chan error, clients)
			var wg sync.WaitGroup
			b.ResetTimer()
			start := time.Now()
			for i, l := range ls {
				share := b.N / clients
				if i < b.N%clients {
					share++
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					key := fmt.Sprintf("bench-%d", i)
					for j := 0; j < share; j++ {
						lease, err := l.Acquire(ctx, key, locks.AcquireOptions{})
						if err != nil {
							errs <- fmt.Errorf("client %d acquire: %w", i, err)
							return
						}
						if err := l.Release(ctx, lease); err != nil {
							errs <- fmt.Errorf("client %d release: %w", i, err)
							return
						}
					}
				}()
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			close(errs)
			for err := range errs {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "pairs/s")
		})
	}
}
