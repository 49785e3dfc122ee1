package reports

import (
	"math"
	"math/bits"
	"slices"
	"sync"
)

// The latency digest puts every acquire in a histogram bin
// (1/binsPerDecade decade) and a row of points (1/pointBinsPerDecade
// decade) by the logarithm of its latency, which took a logarithm (log10)
// and two floors per acquire, half of what the digest spent on one. A
// latency is a whole number of nanoseconds, and a class (a bin and a
// row) is a range of them: latClasses are those ranges, found once from
// the same formula (latClassOf), and an acquire's class is looked up by
// comparing integers. The bins and rows are those of the formula,
// nanosecond by nanosecond, which the tests check at every boundary.

// latClass is a latency's histogram bin and points' row.
type latClass struct {
	bin int32
	row int32
}

// latClassOf is the class of a latency of d ns by the formula: its
// logarithm in ms (at least 1 µs, the log scale has no 0) binned.
func latClassOf(d int64) latClass {
	ms := float64(d) / 1e6
	if ms < 1e-3 {
		ms = 1e-3
	}
	lg := log10(ms)
	return latClass{bin: int32(latBinOf(lg)), row: int32(math.Floor(lg * pointBinsPerDecade))}
}

// sharedLatClasses is the latency classes, found once (about a third of
// a millisecond) for every latency digest of the process: a table that
// no one changes.
var sharedLatClasses = sync.OnceValue(newLatClasses)

// latClasses is the classes of latencies as ranges of nanoseconds: from
// lo[i] up to lo[i+1], class cls[i], for latencies of latMinNS up to
// latMaxNS (longer ones, hours, are rare, and go by the formula). first
// indexes, for each latency's leading bit and the latSlotBits bits after
// it (latSlot), the range holding the least latency of that slot: a 16th
// of a doubling is narrower than a bin or a row, so a latency is at most
// a few ranges past its slot's first.
type latClasses struct {
	lo    []int64
	cls   []latClass
	first [latMaxBits << latSlotBits]int32
}

const (
	// latMinNS is the least latency the digest tells apart: shorter
	// ones are in its class (the formula takes them to 1 µs).
	latMinNS    = 1000
	latMaxBits  = 44 // latencies below 2^44 ns (4.9 h) are looked up
	latMaxNS    = 1 << latMaxBits
	latSlotBits = 6
)

// latSlot is the slot of latency d, latMinNS ≤ d < latMaxNS.
func latSlot(d int64) int {
	n := bits.Len64(uint64(d)) // 10 to 44
	return (n-1)<<latSlotBits | int(d>>(n-1-latSlotBits))&(1<<latSlotBits-1)
}

// newLatClasses finds the ranges of latClassOf: for each bin and each
// row from that of latMinNS on, the least latency of that bin or row or
// a later one, searched for near where the logarithm puts it (the
// formula is monotonic in the latency).
func newLatClasses() *latClasses {
	lowest, highest := latClassOf(latMinNS), latClassOf(latMaxNS-1)
	starts := []int64{latMinNS}
	for b := lowest.bin + 1; b <= highest.bin; b++ {
		g := math.Pow(10, float64(b)/binsPerDecade-3) * 1e6
		starts = append(starts, leastNear(g, func(c latClass) bool { return c.bin >= b }))
	}
	for r := lowest.row + 1; r <= highest.row; r++ {
		g := math.Pow(10, float64(r)/pointBinsPerDecade) * 1e6
		starts = append(starts, leastNear(g, func(c latClass) bool { return c.row >= r }))
	}
	slices.Sort(starts)
	starts = slices.Compact(starts)
	t := &latClasses{lo: starts}
	for _, s := range starts {
		t.cls = append(t.cls, latClassOf(s))
	}
	t.lo = append(t.lo, latMaxNS) // a sentinel no latency looked up reaches
	for s := range t.first {
		n, top := s>>latSlotBits+1, int64(s&(1<<latSlotBits-1)|1<<latSlotBits)
		if n <= latSlotBits {
			continue // below latMinNS
		}
		d := max(top<<(n-1-latSlotBits), latMinNS)
		i, found := slices.BinarySearch(t.lo, d)
		if !found {
			i--
		}
		t.first[s] = int32(max(i, 0))
	}
	return t
}

// leastNear is the least latency from latMinNS to latMaxNS-1 whose class
// reaches, one there being, searched for from g ns: by steps that
// double away from g, then by halves.
func leastNear(g float64, reaches func(latClass) bool) int64 {
	at := func(d int64) bool { return reaches(latClassOf(d)) }
	x := min(max(int64(g), latMinNS), latMaxNS-1)
	lo, hi := x, x // lo does not reach (or is latMinNS-1), hi does
	if at(x) {
		for step := int64(1); lo >= latMinNS && at(lo); step *= 2 {
			hi, lo = lo, max(x-step, latMinNS-1)
		}
	} else {
		for step := int64(1); !at(hi); step *= 2 {
			lo, hi = hi, min(x+step, latMaxNS-1)
		}
	}
	for hi-lo > 1 {
		m := lo + (hi-lo)/2
		if at(m) {
			hi = m
		} else {
			lo = m
		}
	}
	return hi
}

// of is the class of a latency of d ns: latClassOf(d).
func (t *latClasses) of(d int64) latClass {
	if d >= latMaxNS {
		return latClassOf(d)
	}
	d = max(d, latMinNS)
	i := t.first[latSlot(d)]
	if d >= t.lo[i+1] {
		i++ // a slot holds the start of one range at most, mostly
		for d >= t.lo[i+1] {
			i++
		}
	}
	return t.cls[i]
}
