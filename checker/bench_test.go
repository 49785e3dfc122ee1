package checker

import (
	"math/rand/v2"
	"testing"
	"time"
)

// The histories are simulated runs of a correct lock (see simValidRun):
// 10 clients cycling acquire, read, write, release, some failed and
// unknown acquires, nemesis events and a final heal. An operation is an
// invocation and its completion: two events.

// BenchmarkCheck100kOps checks 100k operations (200k events) on 4 keys.
func BenchmarkCheck100kOps(b *testing.B) {
	benchCheck(b, simConfig{procs: 10, keys: 4, events: 200_000, ttl: 1e9, pInfo: 0.01, heal: true})
}

// BenchmarkCheck1MOps checks a million operations (2M events) on 4 keys:
// the size of a minute of 50 clients on one key.
func BenchmarkCheck1MOps(b *testing.B) {
	if testing.Short() {
		b.Skip("large")
	}
	benchCheck(b, simConfig{procs: 10, keys: 4, events: 2_000_000, ttl: 1e9, pInfo: 0.01, heal: true})
}

// BenchmarkCheck20kKeys and BenchmarkCheck1MKeys check 100k operations
// spread over many keys (--keys 20000, --keys 1000000): the cost must grow
// with the operations, not with keys × operations.
func BenchmarkCheck20kKeys(b *testing.B) {
	benchCheck(b, simConfig{procs: 10, keys: 20_000, events: 200_000, ttl: 1e9, pInfo: 0.01, heal: true})
}

func BenchmarkCheck1MKeys(b *testing.B) {
	if testing.Short() {
		b.Skip("large")
	}
	benchCheck(b, simConfig{procs: 10, keys: 1_000_000, events: 200_000, ttl: 1e9, pInfo: 0.01, heal: true})
}

func benchCheck(b *testing.B, cfg simConfig) {
	ops := simValidRun(rand.New(rand.NewPCG(1, 2)), cfg)
	b.Logf("%d events", len(ops))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		r := Check(ctx, ops, Config{Timeout: time.Minute})
		if r.Verdict != Valid {
			b.Fatalf("verdict %s: %+v", r.Verdict, r.Checkers)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(ops)), "ns/event")
}
