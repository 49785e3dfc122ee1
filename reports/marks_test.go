package reports

import (
	"cmp"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/lockharness/lockharness/history"
)

// The marks a window gathers through its caches of what it added lately
// are the marks of plain maps: every process that wrote, and the first
// write of each column, process and kind, however the processes share
// the caches' slots (more than recentSlots of them, negative ones) and
// however their writes interleave.
func TestMarksCacheIsPlainMaps(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	k := spanKey{from: 0, to: 5 * int64(time.Second)}
	m := newMarks(k)
	ticks, procs := map[markKey]float64{}, map[int]bool{}
	for i := 0; i < 200_000; i++ {
		proc := rng.IntN(3 * recentSlots)
		if rng.IntN(10) == 0 {
			proc = -2 - rng.IntN(4) // never the nemesis (-1): see addProc
		}
		if rng.IntN(4) > 0 { // a run of writes of one process, as a client's
			proc = int(rng.Int64N(3))
		}
		tm := int64(i) * 25_000 // past the window's end after 200,000
		kind := rng.IntN(3)
		m.add(proc, tm, kind)
		if tm < k.from || tm > k.to {
			continue
		}
		procs[proc] = true
		x := seconds(tm)
		mk := markKey{proc, kind, int64(math.Floor((x - seconds(m.from)) / m.res))}
		if _, ok := ticks[mk]; !ok {
			ticks[mk] = x
		}
	}
	if !maps.Equal(m.ticks, ticks) {
		t.Errorf("the marks hold %d ticks, plain maps %d, or other times", len(m.ticks), len(ticks))
	}
	if !maps.Equal(m.procs, procs) {
		t.Errorf("the marks hold %d processes, plain maps %d", len(m.procs), len(procs))
	}
}

// The latency points coarsened into the map they had before (reused,
// not grown again) are the points of coarsening into a fresh map each
// time: the same cells, each with its earliest point.
func TestLatencyPointsCoarsenAsFreshMaps(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	l := newLatencyDigest(0)
	fresh := map[pointCell]latPoint{}
	cellT := l.cellT
	coarsened := 0
	for t0 := int64(0); t0 < 2_000*int64(time.Second); t0 += 3 * int64(time.Millisecond) {
		d := int64(math.Exp(2*rng.NormFloat64()) * 1e6)
		typ := []history.Type{history.OK, history.Fail, history.Info}[rng.IntN(3)]
		l.add(true, t0, t0+d, typ)
		ms := math.Max(float64(d)/1e6, 1e-3)
		c := newPointCell(outcomeIndex(typ), t0/cellT, int32(math.Floor(log10(ms)*pointBinsPerDecade)))
		if _, ok := fresh[c]; !ok {
			fresh[c] = latPoint{X: seconds(t0), Y: ms}
		}
		for len(fresh) > maxPoints {
			coarsened++
			cellT *= 2
			out := make(map[pointCell]latPoint)
			for k, p := range fresh {
				k = k.withCol(k.col() / 2)
				if q, ok := out[k]; !ok || p.X < q.X {
					out[k] = p
				}
			}
			fresh = out
		}
	}
	if coarsened < 2 {
		t.Fatalf("the points coarsened %d times, want the map reused at least once", coarsened)
	}
	if l.cellT != cellT || !maps.Equal(pointsMap(l), fresh) {
		t.Errorf("reused map: %d points of %d ns cells; fresh maps: %d of %d ns", l.numPoints(), l.cellT, len(fresh), cellT)
	}
}

// The marks are listed in the order of their keys' fields, process, kind
// and column, whether the keys sort as words or, with a key that does not
// fit in one, field by field.
func TestMarksSortedByFields(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, odd := range []markKey{{}, {proc: -3, kind: 1, col: 5}, {proc: 2, kind: 0, col: 1 << 30}} {
		m := newMarks(spanKey{from: 0, to: int64(time.Second)})
		for range 5000 {
			m.ticks[markKey{proc: rng.IntN(800), kind: rng.IntN(4), col: rng.Int64N(1200)}] = 0
		}
		m.ticks[odd] = 0
		got := m.sorted()
		want := slices.SortedFunc(maps.Keys(m.ticks), func(a, b markKey) int {
			return cmp.Or(cmp.Compare(a.proc, b.proc), cmp.Compare(a.kind, b.kind), cmp.Compare(a.col, b.col))
		})
		if !slices.Equal(got, want) {
			t.Errorf("with %+v: the marks are listed out of the order of their fields", odd)
		}
	}
}
