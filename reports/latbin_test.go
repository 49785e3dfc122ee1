package reports

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// The latency classes looked up are the formula's (latClassOf), for
// every latency: nanosecond by nanosecond around each range's start and
// below 2 ms, at random over every length, and past the table.
func TestLatClassesAreTheFormulas(t *testing.T) {
	tab := newLatClasses()
	check := func(d int64) {
		t.Helper()
		if got, want := tab.of(d), latClassOf(d); got != want {
			t.Fatalf("latency %d ns: class %+v looked up, %+v by the formula", d, got, want)
		}
	}
	for d := int64(-10); d < 2_000_000; d++ {
		check(d)
	}
	for _, lo := range tab.lo {
		w := max(int64(64), lo/int64(1e10))
		for d := lo - w; d <= lo+w; d++ {
			check(d)
		}
	}
	rng := rand.New(rand.NewPCG(32, 33))
	for range 500_000 {
		check(int64(math.Pow(2, rng.Float64()*63)))
	}
	for _, d := range []int64{latMaxNS - 1, latMaxNS, latMaxNS + 1, int64(time.Hour) * 10, math.MaxInt64, math.MinInt64} {
		check(d)
	}
	if len(tab.lo) < latBins {
		t.Fatalf("%d ranges, fewer than the %d bins", len(tab.lo), latBins)
	}
}

// BenchmarkLatClass is the class of a latency looked up (latClasses.of)
// and by the formula (latClassOf), over latencies of 0.1 to 100 ms.
func BenchmarkLatClass(b *testing.B) {
	ds := make([]int64, 4096)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range ds {
		ds[i] = int64(math.Pow(10, 5+3*rng.Float64()))
	}
	tab := newLatClasses()
	var sink latClass
	b.Run("lookup", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			sink = tab.of(ds[i&4095])
		}
	})
	b.Run("formula", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			sink = latClassOf(ds[i&4095])
		}
	})
	b.Run("build", func(b *testing.B) {
		for b.Loop() {
			tab = newLatClasses()
		}
	})
	_ = sink
}
