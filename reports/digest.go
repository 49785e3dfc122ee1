package reports

import (
	"cmp"
	"context"
	"math"
	"slices"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/history"
)

// A long run's history does not fit in memory, and the report need not
// hold it: every figure is drawn from what the check saw of it
// (checker.Seen: the faults, the events the violations name) and from what
// one pass over its events gathers (a digest, and the write marks of each
// timeline the report draws), whose size is bounded by the figures' pixels
// and by the rare events (client pauses and crashes), not by the number of
// operations. The windows the timelines draw (the overview and each
// violation's close-up) are known before that pass from the check's
// result; only a close-up of a violation whose events the check did not
// keep (it found the violation in a later window of a long history than
// the events) needs a second pass, for its marks.

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

// each goes through the history src once, giving every event to each of
// see in turn.
func each(ctx context.Context, src history.Source, see ...func(*history.Op)) error {
	_, err := src.Each(ctx, func(op *history.Op) bool {
		for _, f := range see {
			f(op)
		}
		return true
	})
	return err
}

// digest is what the report needs of a history beyond what the check saw:
// the client pauses and crashes paired with their completions, the client
// processes, the keys acquired, the latencies, and the events violations
// name that the check did not keep.
type digest struct {
	rare []call // client pauses and crashes, by invocation
	// procs are the client processes (renewer threads excluded), and
	// acted those that invoked anything but a read: the others only read
	// (the final reader). Both are made from calls once the pass is over
	// (finish).
	procs, acted map[int]bool
	// calls is what the digest follows of each process: its life (the
	// first and last event of a client process: the timeline packs
	// processes whose lives do not overlap in one row), its call in
	// flight.
	calls   procTable
	acqKeys *keySet // keys acquired
	// granted names, by the history index of an acquire's ok, the lock
	// nodes that granted it (a Redlock-style lock records them), for the
	// timeline's node rows; maxGrants at most (grantsCut says whether
	// more were left out).
	granted   map[int64][]string
	grantsCut bool
	// at holds the events a violation names (by index) that the check did
	// not keep, and invokedAt the invocation time of each (invokeOf).
	at        map[int64]history.Op
	invokedAt map[int64]int64
	lat       *latencyDigest

	want       map[int64]bool // the event indexes to keep in at
	lastInvoke map[pf]int64   // latest invocation of each process and function
	// marks, if set, is given the completion of every client write (its
	// see would follow the calls as calls does).
	marks *markPass

	// What was put in acqKeys lately (by slot), so that an acquire does
	// not hash a key into the set it is in already.
	keysAdded recentKeys
}

// recentSlots is the size of digest's caches of what it added lately.
const recentSlots = 64

// addProc puts p in set unless added (the processes put in set) says it
// is there.
func addProc(set map[int]bool, added *procBits, p int) {
	if added.add(p) {
		set[p] = true
	}
}

// procBits is a set of processes, a bit each: a history's processes are
// numbered from 0, one after another, and every event looks its
// process up. A cache of the processes seen lately, by slot, missed
// whenever more processes than its slots were at work (each client crash
// starts a new one: a third of the digest's time on such a history went
// to the map the cache stood in front of).
type procBits []uint64

// maxProcBits bounds the processes procBits holds (128 KiB of bits):
// others are never in it.
const maxProcBits = 1 << 20

// add puts p in the set and reports whether it was not there, or is one
// the set cannot hold.
func (b *procBits) add(p int) bool {
	if p < 0 || p >= maxProcBits {
		return true
	}
	w, bit := p>>6, uint64(1)<<(p&63)
	if w >= len(*b) {
		*b = append(*b, make([]uint64, w+1-len(*b))...)
	}
	if (*b)[w]&bit != 0 {
		return false
	}
	(*b)[w] |= bit
	return true
}

// maxGrants bounds the grants the digest keeps the nodes of: the node
// rows of a longer run show its first grants only, and say so.
const maxGrants = 200_000

type pf struct {
	p history.Process
	f string
}

// newDigest starts a digest that keeps the events want names, of a
// history whose last event is at end (0: unknown).
func newDigest(want map[int64]bool, end int64) *digest {
	return &digest{granted: map[int64][]string{}, acqKeys: newKeySet(), at: map[int64]history.Op{},
		invokedAt: map[int64]int64{}, lat: newLatencyDigest(end), want: want, lastInvoke: map[pf]int64{}}
}

// see takes the next event of the history into the digest.
func (d *digest) see(op *history.Op) {
	if len(d.want) > 0 {
		d.seeWanted(op)
	}
	if op.Process.IsNemesis() {
		return
	}
	c := d.calls.of(op.Process)
	if op.Owner == nil {
		c.see(op.Time)
	}
	if op.Type == history.Invoke {
		d.invoke(op, c)
		return
	}
	if !c.open {
		return // a completion without invocation: nothing to draw
	}
	c.open = false
	if c.f == callWrite && d.marks != nil {
		d.marks.completed(op)
	}
	if op.Value != nil && len(op.Value.Nodes) > 0 && op.Type == history.OK && op.F == history.FAcquire {
		d.grant(op)
	}
	if c.rare > 0 {
		k := keep(op)
		r := &d.rare[c.rare-1]
		r.Complete, r.Done = &k, true
	}
	d.lat.add(c.f == callAcquire, c.t, op.Time, op.Type)
}

// seeWanted keeps op if it is one of the events wanted, and when its
// call was invoked.
func (d *digest) seeWanted(op *history.Op) {
	if d.want[op.Index] {
		d.at[op.Index] = keep(op)
		t, ok := d.lastInvoke[pf{op.Process, op.F}]
		if !ok || op.Type == history.Invoke {
			t = op.Time
		}
		d.invokedAt[op.Index] = t
	}
	if op.Type == history.Invoke {
		// Only the events kept in at need when their call was invoked.
		d.lastInvoke[pf{op.Process, op.F}] = op.Time
	}
}

// grant keeps the lock nodes that granted the acquire whose ok is op.
func (d *digest) grant(op *history.Op) {
	if len(d.granted) < maxGrants {
		d.granted[op.Index] = slices.Clone(op.Value.Nodes)
	} else {
		d.grantsCut = true
	}
}

// invoke takes client invocation op of the process whose calls are c
// into the digest.
func (d *digest) invoke(op *history.Op, c *procCalls) {
	c.open, c.t, c.rare = true, op.Time, 0
	switch op.F {
	case history.FRead:
		c.f = callOther
		return // the one call that does not make its process act
	case history.FAcquire:
		c.f = callAcquire
		if op.Key != "" && !d.keysAdded.seen(op.Key) {
			d.acqKeys.add(op.Key)
		}
	case history.FWrite:
		c.f = callWrite
	case history.FPause, history.FCrash:
		c.f = callOther
		inv := keep(op)
		d.rare = append(d.rare, call{Invoke: &inv, Complete: noCompletion})
		c.rare = int32(len(d.rare))
	default:
		c.f = callOther
	}
	c.acted = true
}

// finish makes procs and acted from what the digest followed of each
// process, once the pass over the history is over.
func (d *digest) finish() {
	d.procs, d.acted = map[int]bool{}, map[int]bool{}
	d.calls.each(func(p int, c *procCalls) {
		if c.life.ok {
			d.procs[p] = true
		}
		if c.acted {
			d.acted[p] = true
		}
	})
}

// procTable is what the digest follows of each process (procCalls): in
// a slot indexed by the process for processes numbered up to
// maxOpenSlots (a history's processes are numbered from 0, one after
// another), in a map for the others, so that following an event costs
// no hashing, however many processes are at work at once. A process's
// slot holds all the digest follows of it, with no pointer, so that an
// event touches one cache line, and the collector none: the calls in
// flight, the lives and the processes seen were four tables, a tenth of
// the digest.
type procTable struct {
	slots []procCalls
	more  map[history.Process]*procCalls
}

// procCalls is what the digest follows of a process.
type procCalls struct {
	life  timeSpan // of its events (those of a renewer on its behalf excluded)
	t     int64    // when its call in flight was invoked
	rare  int32    // 1 + the index in digest.rare of its call in flight; 0: none
	f     callFunc // its call in flight's function
	open  bool     // it has a call in flight
	acted bool     // it invoked anything but a read
}

// callFunc is what the digest tells apart of a call's function.
type callFunc uint8

const (
	callOther callFunc = iota
	callAcquire
	callWrite
)

// maxOpenSlots bounds the slots of a procTable (a few MB at most).
const maxOpenSlots = 1 << 16

// see notes that the process has an event at time t.
func (c *procCalls) see(t int64) { c.life = c.life.with(t) }

// of is process p's slot.
func (o *procTable) of(p history.Process) *procCalls {
	if p >= 0 && p < maxOpenSlots {
		if int(p) >= len(o.slots) {
			o.slots = append(o.slots, make([]procCalls, int(p)+1-len(o.slots))...)
		}
		return &o.slots[p]
	}
	c := o.more[p]
	if c == nil {
		if o.more == nil {
			o.more = map[history.Process]*procCalls{}
		}
		c = &procCalls{}
		o.more[p] = c
	}
	return c
}

// each calls f with every process that has a slot, and the slot.
func (o *procTable) each(f func(int, *procCalls)) {
	for p := range o.slots {
		f(p, &o.slots[p])
	}
	for p, c := range o.more {
		f(int(p), c)
	}
}

// life is process p's life: false when nothing of it was seen.
func (o *procTable) life(p int) (timeSpan, bool) {
	if p >= 0 && p < len(o.slots) {
		return o.slots[p].life, o.slots[p].life.ok
	}
	if c := o.more[history.Process(p)]; c != nil {
		return c.life, c.life.ok
	}
	return timeSpan{}, false
}

// unkept lists the events res's violations name that the check did not
// keep.
func unkept(res checker.Result) map[int64]bool {
	w := map[int64]bool{}
	for _, v := range res.Violations {
		for _, e := range v.Events {
			if _, _, ok := res.Seen.Event(e); !ok {
				w[e] = true
			}
		}
	}
	return w
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
	// last is the bucket found last (bucket), of times lastFrom up to
	// lastTo.
	last             *latBucket
	lastFrom, lastTo int64
	lo, hi           float64 // ms, over every done acquire
	n                int     // done acquires
	// points: one per cell of cellT ns × 1/pointBinsPerDecade decade and
	// outcome; cellT doubles when there are more than maxPoints. Those of
	// the grid's columns and rows in grid, the others (an invocation past
	// its columns, a latency past its rows) in offGrid, nil until one.
	cellT int64
	// col is the column found last (column), of times colFrom up to
	// colTo.
	col, colFrom, colTo int64
	grid                *cellGrid
	offGrid             *cellTable
	classes             *latClasses // the bin and row of a latency (latClassOf)
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

// pointCell is a cell of the latency points' grid: outcome t (0 to 2),
// column col (of cellT ns), row (of 1/pointBinsPerDecade decade), packed
// in one word so that the map of cells hashes a word, not a struct (the
// lookup of every acquire's cell was most of the digest's time). col
// keeps 45 bits and its sign (a run of 2^45 ms), row 16 bits around 0
// (latencies of 10^-3 to 10^300 ms are rows -120 to 12,000).
type pointCell uint64

const (
	cellTBits   = 2
	cellRowBits = 16
	cellColAt   = cellTBits + cellRowBits
)

func newPointCell(t int, col int64, row int32) pointCell {
	return pointCell(uint64(col)<<cellColAt | uint64(uint16(int32(row)+1<<(cellRowBits-1)))<<cellTBits | uint64(t))
}

// outcome is the cell's outcome index (outcomeIndex).
func (k pointCell) outcome() int { return int(k & (1<<cellTBits - 1)) }

// col is the cell's column.
func (k pointCell) col() int64 { return int64(k) >> cellColAt }

// row is the cell's row.
func (k pointCell) row() int32 {
	return int32(uint16(k>>cellTBits)) - 1<<(cellRowBits-1)
}

// withCol is the cell in column col, the same row and outcome.
func (k pointCell) withCol(col int64) pointCell {
	return pointCell(uint64(col)<<cellColAt | uint64(k)&(1<<cellColAt-1))
}

type latPoint struct {
	X, Y float64 // seconds, ms
}

// newLatencyDigest is the latency digest of a history whose last event is
// at end (0: unknown), its points in cells of startCellT(end).
func newLatencyDigest(end int64) *latencyDigest {
	return &latencyDigest{fine: int64(1e9), cellT: startCellT(end), grid: &cellGrid{}, lo: math.Inf(1), hi: math.Inf(-1), classes: sharedLatClasses()}
}

const time1ms = 1e6

// startColumns is how many columns of cells the latency points start
// with over the length of a history, at most: a column of 1 ms on a
// history up to a second long, twice as wide for each doubling past it.
// Started at 1 ms whatever the length, a history of 11 s coarsened its
// points four times, each time after the table had grown to maxPoints
// cells, and most acquires then fell in a cell still empty.
const startColumns = 1024

// startCellT is the first width of the points' columns for a history
// whose last event is at end: 1 ms doubled until startColumns of them
// span end.
func startCellT(end int64) int64 {
	t := int64(time1ms)
	for end/t >= startColumns {
		t *= 2
	}
	return t
}

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

// log10 is math.Log10 of x, a positive and finite number that is not
// subnormal, within a few units of 10^-12: the logarithm of its mantissa
// by a series (about the square root of two, where it converges fast),
// its exponent's added. The latency digest takes the logarithm of every
// acquire's latency, and math.Log10 was a sixth of the digest.
func log10(x float64) float64 {
	const expMask = 0x7ff << 52
	bits := math.Float64bits(x)
	e := float64(int((bits&expMask)>>52) - 1023)
	m := math.Float64frombits(bits&^expMask | 1023<<52) // in [1, 2)
	if m > math.Sqrt2 {
		m, e = m/2, e+1
	}
	// ln m = 2 atanh(s) = 2 (s + s³/3 + s⁵/5 + …), |s| < 0.172
	s := (m - 1) / (m + 1)
	s2 := s * s
	lnm := 2 * s * (1 + s2*(1.0/3+s2*(1.0/5+s2*(1.0/7+s2*(1.0/9+s2*(1.0/11+s2*(1.0/13)))))))
	return (e*math.Ln2 + lnm) * (1 / math.Ln10)
}

// latBinOf is the histogram bin of the latency whose log10 (in ms) is lg.
func latBinOf(lg float64) int {
	b := int(math.Floor((lg + 3) * binsPerDecade))
	return min(max(b, 0), latBins-1)
}

// binValue is the middle (geometric) of latency bin b, in ms.
func binValue(b int) float64 {
	return math.Pow(10, (float64(b)+0.5)/binsPerDecade-3)
}

// bucket is the bucket of time t. The last one found answers for the
// times it covers without a division: an acquire looks up two buckets,
// mostly the same as the acquire before it.
func (l *latencyDigest) bucket(t int64) *latBucket {
	if t >= l.lastFrom && t < l.lastTo {
		return l.last
	}
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
	if t >= 0 {
		l.last, l.lastFrom, l.lastTo = l.buckets[i], i*l.fine, (i+1)*l.fine
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
	l.last, l.lastFrom, l.lastTo = nil, 0, 0
}

// add takes a completed call, an acquire or not, invoked and completed
// at those times with outcome typ.
func (l *latencyDigest) add(acquire bool, invoke, complete int64, typ history.Type) {
	o := outcomeIndex(typ)
	if o < 0 {
		return
	}
	if !acquire {
		l.bucket(complete).done[o]++
		return
	}
	// Comparisons, not math.Max and Min, which are calls that look for
	// NaNs, and ms is never one: a tenth of the digest on every acquire.
	ms := float64(complete-invoke) / 1e6
	if ms < 1e-3 {
		ms = 1e-3 // log scale: never ≤ 0
	}
	c := l.classes.of(complete - invoke)
	b := l.bucket(invoke)
	b.hist[o][c.bin]++
	if ms > b.max[o] {
		b.max[o] = ms
	}
	// Last: finding a bucket may coarsen them all, which b does not outlive.
	cb := l.bucket(complete)
	cb.done[o]++
	if o == 0 {
		cb.acqOK++
	}
	if ms < l.lo {
		l.lo = ms
	}
	if ms > l.hi {
		l.hi = ms
	}
	l.n++
	l.addPoint(o, l.column(invoke), c.row, latPoint{X: seconds(invoke), Y: ms})
}

// column is the points' column of invocation time t: that of the
// acquire before if t is in it, without a division.
func (l *latencyDigest) column(t int64) int64 {
	if t >= l.colFrom && t < l.colTo {
		return l.col
	}
	col := t / l.cellT
	if t >= 0 {
		l.col, l.colFrom, l.colTo = col, col*l.cellT, (col+1)*l.cellT
	}
	return col
}

// addPoint puts p in the cell of outcome o at col and row, unless the
// cell has a point, and coarsens the cells while there are too many.
func (l *latencyDigest) addPoint(o int, col int64, row int32, p latPoint) {
	added, on := l.grid.add(o, col, row, p)
	if !on {
		if l.offGrid == nil {
			l.offGrid = newCellTable()
		}
		added = l.offGrid.addNew(newPointCell(o, col, row), p)
	}
	if added {
		for l.numPoints() > maxPoints {
			l.coarsenPoints()
		}
	}
}

// numPoints is how many points (cells) the digest holds.
func (l *latencyDigest) numPoints() int {
	n := len(l.grid.pts)
	if l.offGrid != nil {
		n += l.offGrid.n
	}
	return n
}

// eachPoint calls f with every cell that has a point, and the point.
func (l *latencyDigest) eachPoint(f func(pointCell, latPoint)) {
	for _, e := range l.grid.pts {
		f(e.k, e.p)
	}
	if l.offGrid != nil {
		l.offGrid.each(f)
	}
}

// coarsenPoints doubles the time cell of the points, keeping the earliest
// point of each merged cell (the first of those as early).
func (l *latencyDigest) coarsenPoints() {
	l.cellT *= 2
	l.col, l.colFrom, l.colTo = 0, 0, 0
	all := make([]gridPoint, 0, l.numPoints())
	l.eachPoint(func(k pointCell, p latPoint) {
		all = append(all, gridPoint{k.withCol(k.col() / 2), p})
	})
	slices.SortStableFunc(all, func(a, b gridPoint) int {
		return cmp.Or(cmp.Compare(a.k, b.k), cmpFloat(a.p.X, b.p.X))
	})
	l.grid.reset()
	if l.offGrid != nil {
		l.offGrid.clear()
	}
	for i, e := range all {
		if i == 0 || all[i-1].k != e.k {
			l.addPoint(e.k.outcome(), e.k.col(), e.k.row(), e.p)
		}
	}
}

// sortedPoints are the points of outcome o, in time order.
func (l *latencyDigest) sortedPoints(o int) []latPoint {
	var out []latPoint
	l.eachPoint(func(k pointCell, p latPoint) {
		if k.outcome() == o {
			out = append(out, p)
		}
	})
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

// cellTable is latency points by cell, those off the grid: a hash table
// of open addressing (linear probing, at most three quarters full) on the
// cell's word. The map it replaces hashed a cell for every acquire of a
// history and rebuilt itself cell by cell at every coarsening, most of
// the latency digest's time; here a lookup is a multiply and, mostly, one
// probe of a word. The order of each is that of the slots: its callers
// sort, or keep the earliest point of a cell, which no order changes.
type cellTable struct {
	keys  []pointCell // empty slots hold emptyCell
	vals  []latPoint
	n     int
	shift uint // 64 - log2(len(keys))
}

// emptyCell marks an empty slot. No cell is 0 except that of outcome 0,
// column 0 and row -2^15 (newPointCell stores the row plus 2^15), a
// latency of 10^-819 ms (rows start at -120: latencies are at least
// 1 µs); the table keeps a cell 0 anyway, in zero.
const emptyCell pointCell = 0

// newCellTable is a table of cellSlots slots to start with, grown as
// cells come: the points off the latency digest's grid (cellGrid), few
// but in a history whose end was not known.
func newCellTable() *cellTable {
	return &cellTable{keys: make([]pointCell, cellSlots), vals: make([]latPoint, cellSlots), shift: 64 - cellSlotBits}
}

const (
	cellSlotBits = 10
	cellSlots    = 1 << cellSlotBits
)

// slot is where k's probe starts (Fibonacci hashing).
func (t *cellTable) slot(k pointCell) int {
	return int((uint64(k) * 0x9E3779B97F4A7C15) >> t.shift)
}

// find is the slot of k, or of the empty slot where k would go.
func (t *cellTable) find(k pointCell) int {
	mask := len(t.keys) - 1
	i := t.slot(k)
	for t.keys[i] != k && t.keys[i] != emptyCell {
		i = (i + 1) & mask
	}
	return i
}

// addNew puts p at k if k has no point, and reports whether it did.
func (t *cellTable) addNew(k pointCell, p latPoint) bool {
	return t.put(k, p, false)
}

// keepEarliest puts p at k if k has no point or a later one.
func (t *cellTable) keepEarliest(k pointCell, p latPoint) { t.put(k, p, true) }

// put puts p at k if k has no point, or (earlier) a point later than
// p, and reports whether k had no point.
func (t *cellTable) put(k pointCell, p latPoint, earlier bool) bool {
	if k == emptyCell {
		k = t.zeroKey()
	}
	i := t.find(k)
	if t.keys[i] == k {
		if earlier && p.X < t.vals[i].X {
			t.vals[i] = p
		}
		return false
	}
	t.keys[i], t.vals[i] = k, p
	t.n++
	if 4*t.n > 3*len(t.keys) {
		t.grow()
	}
	return true
}

// zeroKey stands for cell 0, which marks empty slots: the one key no
// cell is but 0 (all ones: outcome 3, which there is none of).
func (t *cellTable) zeroKey() pointCell { return ^pointCell(0) }

// grow doubles the slots.
func (t *cellTable) grow() {
	keys, vals := t.keys, t.vals
	t.keys, t.vals, t.shift = make([]pointCell, 2*len(keys)), make([]latPoint, 2*len(keys)), t.shift-1
	for i, k := range keys {
		if k != emptyCell {
			j := t.find(k)
			t.keys[j], t.vals[j] = k, vals[i]
		}
	}
}

// clear empties the table, keeping its slots.
func (t *cellTable) clear() {
	clear(t.keys)
	t.n = 0
}

// each calls f with every cell and its point.
func (t *cellTable) each(f func(pointCell, latPoint)) {
	for i, k := range t.keys {
		switch k {
		case emptyCell:
		case t.zeroKey():
			f(emptyCell, t.vals[i])
		default:
			f(k, t.vals[i])
		}
	}
}

// cellGrid is which cells of the latency points' first gridCols columns
// hold a point, a bit per row and outcome, and their points in the order
// they came: an acquire looks up a bit, not a table of points
// (cellTable), whose lookup for every acquire, most of them in a cell
// that has its point, missed the caches (a table of 64K slots) and was
// most of what the latency digest cost. Columns sized to the history
// (startCellT) are on the grid, unless the history's end was unknown.
type cellGrid struct {
	bits [][gridWords]uint64 // by column, as many as the latest column's
	pts  []gridPoint
}

// gridPoint is a cell and its point.
type gridPoint struct {
	k pointCell
	p latPoint
}

const (
	gridCols  = 2 * startColumns
	gridRows  = 512 // rows -gridRow0 to gridRows-gridRow0-1 (1 µs to 10^9.8 ms)
	gridRow0  = 3 * pointBinsPerDecade
	gridWords = gridRows * 3 / 64
)

// add puts p in the cell of outcome o at col and row, unless it has a
// point, and reports whether it did, and whether the cell is on the grid
// (if not, it did nothing).
func (g *cellGrid) add(o int, col int64, row int32, p latPoint) (added, on bool) {
	i := int(row) + gridRow0
	if i < 0 || i >= gridRows || col < 0 || col >= gridCols {
		return false, false
	}
	if int(col) >= len(g.bits) {
		g.bits = append(g.bits, make([][gridWords]uint64, int(col)+1-len(g.bits))...)
	}
	bit := 3*i + o
	w, m := bit>>6, uint64(1)<<(bit&63)
	if g.bits[col][w]&m != 0 {
		return false, true
	}
	g.bits[col][w] |= m
	g.pts = append(g.pts, gridPoint{newPointCell(o, col, row), p})
	return true, true
}

// reset empties the grid, keeping its memory.
func (g *cellGrid) reset() {
	clear(g.bits)
	g.pts = g.pts[:0]
}
