package reports

import (
	"cmp"
	"context"
	"math"
	"slices"

	"github.com/lockharness/lockharness/history"
)

// Write tick kinds, in the order they are drawn.
const (
	tkAccepted = iota
	tkRejected
	tkUnknown
	tkExpired
)

// span of a window: the key of its marks.
type spanKey struct{ from, to int64 }

func (w window) key() spanKey { return spanKey{w.From, max(w.To, w.From+1)} }

// colRes is the time one pixel column of a timeline of [from, to] covers,
// in seconds.
func colRes(from, to int64) float64 {
	dataW := float64(figWidth - legendWidth - 70) // roughly: the y tick labels take the rest
	return (seconds(to) - seconds(from)) / (dataW * DPI / 72)
}

// marks are a timeline window's client writes that completed in it,
// merged per pixel column, process and kind: a window of a million writes
// costs what its pixels do.
type marks struct {
	from, to int64
	res      float64
	ticks    map[markKey]float64 // the time (s) of the first write of the column
	procs    map[int]bool        // processes that completed a write in the window
	accepted int                 // accepted writes in the window
	writes   int
	holds    *holdMarks // the holds in the window
	// What was put in procs (procBits), and the tick each process put in
	// ticks last (by process, for the processes numbered below
	// maxOpenSlots), so that a process's writes in a column it marked
	// already (most of a long run's: a column is many writes long) hash
	// no map entry.
	procsAdded procBits
	ticked     []lastTick
}

// lastTick is the tick a process put in marks.ticks last, if ok.
type lastTick struct {
	k  markKey
	ok bool
}

type markKey struct {
	proc, kind int
	col        int64
}

func newMarks(k spanKey) *marks {
	return &marks{from: k.from, to: k.to, res: colRes(k.from, k.to), ticks: map[markKey]float64{}, procs: map[int]bool{}, holds: newHoldMarks()}
}

// add records a write of proc that completed at t with outcome kind.
func (m *marks) add(proc int, t int64, kind int) {
	if t < m.from || t > m.to {
		return
	}
	m.writes++
	addProc(m.procs, &m.procsAdded, proc)
	if kind == tkAccepted {
		m.accepted++
	}
	x := seconds(t)
	k := markKey{proc, kind, int64(math.Floor((x - seconds(m.from)) / m.res))}
	if proc >= 0 && proc < maxOpenSlots {
		if proc >= len(m.ticked) {
			m.ticked = append(m.ticked, make([]lastTick, proc+1-len(m.ticked))...)
		}
		last := &m.ticked[proc]
		if last.ok && last.k == k {
			return
		}
		*last = lastTick{k, true}
	}
	if _, ok := m.ticks[k]; !ok {
		m.ticks[k] = x
	}
}

// sorted lists the marks in a fixed order (process, kind, column), so
// that the same history draws the same picture.
//
// The keys are sorted as words (packMarkKey) when they fit in one, as
// they do but in a pathological history: a comparison of three fields
// through a function for each of a crowded overview's tens of thousands
// of ticks cost as much as drawing them.
func (m *marks) sorted() []markKey {
	ks := make([]markKey, 0, len(m.ticks))
	words := make([]uint64, 0, len(m.ticks))
	for k := range m.ticks {
		ks = append(ks, k)
		if w, ok := packMarkKey(k); ok && words != nil {
			words = append(words, w)
		} else {
			words = nil
		}
	}
	if words == nil {
		slices.SortFunc(ks, func(a, b markKey) int {
			return cmp.Or(cmp.Compare(a.proc, b.proc), cmp.Compare(a.kind, b.kind), cmp.Compare(a.col, b.col))
		})
		return ks
	}
	slices.Sort(words)
	for i, w := range words {
		ks[i] = unpackMarkKey(w)
	}
	return ks
}

// Bits of a mark key packed in a word (packMarkKey): the process, the
// kind, the column, from the highest bits down, so that words sort as
// the keys do.
const (
	markColBits  = 24
	markKindBits = 4
	markProcBits = 64 - markColBits - markKindBits
)

// packMarkKey is k as a word, false when a part does not fit (negative,
// or too large).
func packMarkKey(k markKey) (uint64, bool) {
	if k.proc < 0 || uint64(k.proc) >= 1<<markProcBits || k.kind < 0 || k.kind >= 1<<markKindBits || k.col < 0 || k.col >= 1<<markColBits {
		return 0, false
	}
	return uint64(k.proc)<<(markKindBits+markColBits) | uint64(k.kind)<<markColBits | uint64(k.col), true
}

func unpackMarkKey(w uint64) markKey {
	return markKey{proc: int(w >> (markKindBits + markColBits)), kind: int(w >> markColBits & (1<<markKindBits - 1)), col: int64(w & (1<<markColBits - 1))}
}

// writeKind classifies a write's completion as a tick; false for one that
// draws none.
func writeKind(c *history.Op) (int, bool) {
	switch {
	case c.Type == history.OK && c.Value != nil && c.Value.Rejected:
		return tkRejected, true
	case c.Type == history.OK:
		return tkAccepted, true
	case c.Type == history.Info:
		return tkUnknown, true
	}
	return 0, false
}

// markPass collects the write marks of windows as a pass over the
// history gives it the events (see).
type markPass struct {
	all     []*marks
	writing map[history.Process]bool // a write is in flight
}

// newMarks is the marks of each window of wins, and the pass that
// gathers them.
func newMarkPass(wins []spanKey) (map[spanKey]*marks, *markPass) {
	out := map[spanKey]*marks{}
	for _, k := range wins {
		if out[k] == nil {
			out[k] = newMarks(k)
		}
	}
	p := &markPass{all: make([]*marks, 0, len(out)), writing: map[history.Process]bool{}}
	for _, m := range out {
		p.all = append(p.all, m)
	}
	return out, p
}

// see takes the next event of the history: a client write's completion
// marks every window it falls in.
func (p *markPass) see(op *history.Op) {
	if op.Process.IsNemesis() {
		return
	}
	if op.Type == history.Invoke {
		p.writing[op.Process] = op.F == history.FWrite
		return
	}
	if !p.writing[op.Process] {
		return
	}
	delete(p.writing, op.Process)
	p.completed(op)
}

// completed takes the completion op of a client write.
func (p *markPass) completed(op *history.Op) {
	kind, ok := writeKind(op)
	for _, m := range p.all {
		if ok {
			m.add(int(op.Process), op.Time, kind)
		} else if op.Time >= m.from && op.Time <= m.to {
			m.writes++
			addProc(m.procs, &m.procsAdded, int(op.Process))
		}
	}
}

// gatherMarks collects the write marks of every window in one pass over
// src.
func gatherMarks(ctx context.Context, src history.Source, wins []spanKey) (map[spanKey]*marks, error) {
	out, p := newMarkPass(wins)
	return out, each(ctx, src, p.see)
}
