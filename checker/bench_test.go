package checker

import (
	"math/rand/v2"
	"testing"
	"time"
)

// BenchmarkCheck100kOps checks a simulated valid run of a correct lock with
// 100k operations (200k events: 10 clients, 4 keys, acquire/read/write/
// release cycles, some failed and unknown acquires, nemesis events).
func BenchmarkCheck100kOps(b *testing.B) {
	benchCheck(b, 200_000)
}

// BenchmarkCheck1MEvents is the top of the size range the runner may hand
// over: 500k operations.
func BenchmarkCheck1MEvents(b *testing.B) {
	if testing.Short() {
		b.Skip("large")
	}
	benchCheck(b, 1_000_000)
}

func benchCheck(b *testing.B, events int) {
	ops := simValidRun(rand.New(rand.NewPCG(1, 2)), simConfig{procs: 10, keys: 4, events: events, ttl: 1e9, pInfo: 0.01, heal: true})
	b.Logf("%d events", len(ops))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		r := Check(ctx, ops, Config{Timeout: time.Minute})
		if r.Verdict != Valid {
			b.Fatalf("verdict %s: %+v", r.Verdict, r.Checkers)
		}
	}
}
