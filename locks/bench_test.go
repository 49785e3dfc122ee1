package locks_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/lockharness/lockharness/locks"
)

// BenchmarkAcquireRelease measures acquire+release pairs per second with 10
// clients, each its own lock instance and connections, on its own key, on
// one healthy local node (five for redlock and redsync). Each iteration is
// one pair; the pairs/s metric is for all ten clients together.
func BenchmarkAcquireRelease(b *testing.B) {
	const clients = 10
	for _, name := range lockNames() {
		b.Run(name, func(b *testing.B) {
			n := 1
			if multiNode(name) {
				n = 5
			}
			c := up(b, n, 1)
			if name == "token-wait" {
				withReplica(b, c.Nodes[0])
			}
			ls := make([]locks.Lock, clients)
			for i := range ls {
				ls[i] = newLock(b, name, nodesOf(b, c, 0), uint64(i), locks.Options{TTL: 10 * time.Second})
			}
			benchPairs(b, ls)
		})
	}
}

// benchPairs has each of ls acquire and release a key of its own, b.N
// pairs in all, at once, and reports pairs/s.
func benchPairs(b *testing.B, ls []locks.Lock) {
	clients := len(ls)
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
}
