package reports

import (
	"context"
	"fmt"
	"math"
	"os"
	"slices"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/history"
)

// A long run's history does not fit in memory, and the report need not
// hold it: every figure is drawn from what one pass over the events
// gathers (a digest), whose size is bounded by the figures' pixels and by
// the rare events (faults, client pauses and crashes, the events a
// violation names), not by the number of operations. The timeline's
// write marks are gathered in a second pass, once the windows it draws
// (the overview and each violation's close-up) are known.

// source replays a history's events in order; yield returns false to stop
// early. The event passed to yield is only valid during the call.
type source func(ctx context.Context, yield func(*history.Op) bool) error

// sliceSource replays ops.
func sliceSource(ops []history.Op) source {
	return func(ctx context.Context, yield func(*history.Op) bool) error {
		for i := range ops {
			if !yield(&ops[i]) {
				return nil
			}
		}
		return nil
	}
}

// fileSource replays the history file at path, one event at a time.
func fileSource(path string) source {
	return func(ctx context.Context, yield func(*history.Op) bool) error {
		f, err := os.Open(path)
		if err != nil {
			return fmt.Errorf("open history: %w", err)
		}
		defer f.Close()
		sc := history.NewScanner(f)
		for sc.Scan(ctx) {
			op := sc.Op()
			if !yield(&op) {
				return nil
			}
		}
		if err := sc.Err(); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		return ctx.Err()
	}
}

// keep copies an event to be held beyond the pass: its value is copied
// too, so that it does not keep the decoder's slab of values alive.
func keep(op *history.Op) history.Op {
	o := *op
	if o.Value != nil {
		v := *o.Value
		o.Value = &v
	}
	return o
}

// digest is what the report needs of a history.
type digest struct {
	events    int
	end       int64        // time of the last event
	nemesis   []history.Op // every nemesis event, in order
	rare      []call       // client pauses and crashes, by invocation
	procs     map[int]bool // client processes (renewer threads excluded)
	hasClient bool
	acqKeys   map[string]bool // keys acquired
	// at holds the events a violation names (by index), and invokedAt the
	// invocation time of each (invokeOf): what Explain reads.
	at        map[int64]history.Op
	invokedAt map[int64]int64
	lat       *latencyDigest
}

// digestOf gathers the digest of src in one pass; want lists the event
// indexes to keep (the events res's violations name).
func digestOf(ctx context.Context, src source, want map[int64]bool) (*digest, error) {
	d := &digest{procs: map[int]bool{}, acqKeys: map[string]bool{}, at: map[int64]history.Op{},
		invokedAt: map[int64]int64{}, lat: newLatencyDigest()}
	type pf struct {
		p history.Process
		f string
	}
	lastInvoke := map[pf]int64{} // latest invocation of each process and function
	type pending struct {
		t    int64
		f    string
		key  string
		rare int // index in d.rare, or -1
	}
	open := map[history.Process]pending{} // client calls in flight
	err := src(ctx, func(op *history.Op) bool {
		d.events++
		d.end = max(d.end, op.Time)
		if want[op.Index] {
			d.at[op.Index] = keep(op)
			t, ok := lastInvoke[pf{op.Process, op.F}]
			if !ok {
				t = op.Time
			}
			d.invokedAt[op.Index] = t
		}
		if op.Type == history.Invoke {
			lastInvoke[pf{op.Process, op.F}] = op.Time
		}
		if op.Process.IsNemesis() {
			d.nemesis = append(d.nemesis, keep(op))
			return true
		}
		d.hasClient = true
		if op.Owner == nil {
			d.procs[int(op.Process)] = true
		}
		if op.Type == history.Invoke {
			p := pending{t: op.Time, f: op.F, key: op.Key, rare: -1}
			if op.F == history.FAcquire && op.Key != "" {
				d.acqKeys[op.Key] = true
			}
			if op.F == history.FPause || op.F == history.FCrash {
				inv := keep(op)
				p.rare = len(d.rare)
				d.rare = append(d.rare, call{Invoke: &inv, Complete: noCompletion})
			}
			open[op.Process] = p
			return true
		}
		p, ok := open[op.Process]
		if !ok {
			return true // a completion without invocation: nothing to draw
		}
		delete(open, op.Process)
		if p.rare >= 0 {
			c := keep(op)
			d.rare[p.rare].Complete, d.rare[p.rare].Done = &c, true
		}
		d.lat.add(p.f, p.t, op.Time, op.Type)
		return true
	})
	if err != nil {
		return nil, err
	}
	return d, nil
}

// rareInvokes are the invocations of the client pauses and crashes.
func (d *digest) rareInvokes() []history.Op {
	out := make([]history.Op, len(d.rare))
	for i, c := range d.rare {
		out[i] = *c.Invoke
	}
	return out
}

// wanted lists the events res's violations name.
func wanted(res checker.Result) map[int64]bool {
	w := map[int64]bool{}
	for _, v := range res.Violations {
		for _, e := range v.Events {
			w[e] = true
		}
	}
	return w
}

// opAt is the event with history index i, if the digest kept it.
func (d *digest) opAt(i int64) (history.Op, bool) {
	op, ok := d.at[i]
	return op, ok
}

// latencyDigest is the latency and rate plots' data, aggregated: per
// bucket of time (one second, doubled on very long runs so that there are
// never more than maxFine of them), a histogram of acquire latencies by
// outcome on a log scale, the exact largest, and the completions by
// outcome; and the acquire latencies as points, merged when they share a
// cell of a grid that coarsens as they grow (the scatter is drawn one
// point per glyph-sized cell anyway).
type latencyDigest struct {
	fine    int64 // bucket width, ns
	buckets []*latBucket
	lo, hi  float64 // ms, over every done acquire
	n       int     // done acquires
	// points: one per cell of cellT ns × 1/pointBinsPerDecade decade and
	// outcome; cellT doubles when there are more than maxPoints.
	cellT  int64
	points map[pointCell]latPoint
}

const (
	maxFine            = 4096
	binsPerDecade      = 32
	latDecades         = 10 // 1 µs to 10^7 ms
	latBins            = binsPerDecade * latDecades
	pointBinsPerDecade = 40
	maxPoints          = 40_000
)

type latBucket struct {
	hist  [3][latBins]uint32 // acquire latency by outcome, by invocation time
	max   [3]float64         // ms
	done  [3]float64         // completions of every kind by outcome, by completion time
	acqOK float64
}

// acqOKInvoked counts the successful acquires invoked in the bucket.
func (b *latBucket) acqOKInvoked() (n uint64) {
	for _, c := range b.hist[0] {
		n += uint64(c)
	}
	return n
}

type pointCell struct {
	t   int8
	col int64
	row int32
}

type latPoint struct {
	X, Y float64 // seconds, ms
}

func newLatencyDigest() *latencyDigest {
	return &latencyDigest{fine: int64(1e9), cellT: int64(time1ms), points: map[pointCell]latPoint{}, lo: math.Inf(1), hi: math.Inf(-1)}
}

const time1ms = 1e6

// outcomeIndex maps ok, fail, info to 0, 1, 2; -1 for anything else.
func outcomeIndex(t history.Type) int {
	switch t {
	case history.OK:
		return 0
	case history.Fail:
		return 1
	case history.Info:
		return 2
	}
	return -1
}

func latBin(ms float64) int {
	b := int(math.Floor((math.Log10(ms) + 3) * binsPerDecade))
	return min(max(b, 0), latBins-1)
}

// binValue is the middle (geometric) of latency bin b, in ms.
func binValue(b int) float64 {
	return math.Pow(10, (float64(b)+0.5)/binsPerDecade-3)
}

func (l *latencyDigest) bucket(t int64) *latBucket {
	i := t / l.fine
	for i >= maxFine {
		l.coarsen()
		i = t / l.fine
	}
	if i < 0 {
		i = 0
	}
	for int64(len(l.buckets)) <= i {
		l.buckets = append(l.buckets, nil)
	}
	if l.buckets[i] == nil {
		l.buckets[i] = &latBucket{}
	}
	return l.buckets[i]
}

// coarsen doubles the bucket width, merging pairs.
func (l *latencyDigest) coarsen() {
	out := make([]*latBucket, (len(l.buckets)+1)/2)
	for i, b := range l.buckets {
		if b == nil {
			continue
		}
		o := out[i/2]
		if o == nil {
			out[i/2] = b
			continue
		}
		for t := range b.hist {
			for j := range b.hist[t] {
				o.hist[t][j] += b.hist[t][j]
			}
			o.max[t] = math.Max(o.max[t], b.max[t])
			o.done[t] += b.done[t]
		}
		o.acqOK += b.acqOK
	}
	l.buckets, l.fine = out, l.fine*2
}

func (l *latencyDigest) add(f string, invoke, complete int64, typ history.Type) {
	o := outcomeIndex(typ)
	if o < 0 {
		return
	}
	l.bucket(complete).done[o]++
	if f != history.FAcquire {
		return
	}
	ms := math.Max(float64(complete-invoke)/1e6, 1e-3) // log scale: never ≤ 0
	if o == 0 {
		l.bucket(complete).acqOK++
	}
	b := l.bucket(invoke)
	b.hist[o][latBin(ms)]++
	b.max[o] = math.Max(b.max[o], ms)
	l.lo, l.hi = math.Min(l.lo, ms), math.Max(l.hi, ms)
	l.n++
	k := pointCell{int8(o), invoke / l.cellT, int32(math.Floor(math.Log10(ms) * pointBinsPerDecade))}
	if _, ok := l.points[k]; !ok {
		l.points[k] = latPoint{X: seconds(invoke), Y: ms}
		for len(l.points) > maxPoints {
			l.coarsenPoints()
		}
	}
}

// coarsenPoints doubles the time cell of the points, keeping the earliest
// point of each merged cell.
func (l *latencyDigest) coarsenPoints() {
	l.cellT *= 2
	out := make(map[pointCell]latPoint, len(l.points)/2)
	for k, p := range l.points {
		k.col /= 2
		if q, ok := out[k]; !ok || p.X < q.X {
			out[k] = p
		}
	}
	l.points = out
}

// sortedPoints are the points of outcome o, in time order.
func (l *latencyDigest) sortedPoints(o int) []latPoint {
	var out []latPoint
	for k, p := range l.points {
		if int(k.t) == o {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b latPoint) int {
		if a.X != b.X {
			return cmpFloat(a.X, b.X)
		}
		return cmpFloat(a.Y, b.Y)
	})
	return out
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// plotBuckets groups the fine buckets into buckets of width bw (a
// multiple of the fine width, see plotWidth).
func (l *latencyDigest) plotBuckets(bw int64) []*latBucket {
	per := max(bw/l.fine, 1)
	out := make([]*latBucket, (int64(len(l.buckets))+per-1)/per)
	for i, b := range l.buckets {
		if b == nil {
			continue
		}
		j := int64(i) / per
		if out[j] == nil {
			c := *b
			out[j] = &c
			continue
		}
		o := out[j]
		for t := range b.hist {
			for k := range b.hist[t] {
				o.hist[t][k] += b.hist[t][k]
			}
			o.max[t] = math.Max(o.max[t], b.max[t])
			o.done[t] += b.done[t]
		}
		o.acqOK += b.acqOK
	}
	return out
}

// plotWidth is the width of a plotted bucket for a run ending at end:
// bucketWidth, rounded up to a multiple of the fine width.
func (l *latencyDigest) plotWidth(end int64) int64 {
	bw := bucketWidth(end)
	return (bw + l.fine - 1) / l.fine * l.fine
}

// histQuantile is the nearest-rank quantile q of the ok histogram h, as
// the middle of its bin (within 4% of the true value), or the exact
// largest for q = 1.
func histQuantile(h *[latBins]uint32, maxMS, q float64) float64 {
	var n uint64
	for _, c := range h {
		n += uint64(c)
	}
	if n == 0 {
		return math.NaN()
	}
	if q >= 1 {
		return maxMS
	}
	rank := uint64(max(math.Ceil(q*float64(n)), 1))
	var seen uint64
	for b, c := range h {
		seen += uint64(c)
		if seen >= rank {
			return math.Min(binValue(b), maxMS)
		}
	}
	return maxMS
}
