package reports

import (
	"cmp"
	"context"
	"fmt"
	"image/color"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/history"
)

// runView is a run digested once for every figure: what the check saw
// and what a pass over the history gathered, calls paired, faults
// derived, keys numbered.
type runView struct {
	rec    Record
	meta   RunMeta
	book   *faultBook
	res    checker.Result
	dig    *digest
	src    history.Source // the history, for the write marks of a window not gathered yet
	marks  map[spanKey]*marks
	procs  []int
	faults []Fault
	heal   int64
	healed bool
	end    int64
	keys   []string // sorted: a key's colour is its index's (keyColourIndex)
	// manyKeys is a run of more than maxKeys keys: keys is empty, and a
	// key's colour a hash of its name.
	manyKeys bool
	// why explains violations by index (Explain).
	why map[int]string
	// pixels are what the figures are drawn on, one after another
	// (saveStep).
	pixels pixelPool
	// held are the processes and keys of the holds, for procs and keys;
	// heldAdded and heldRecent what was put in them (addProc, recentKeys).
	heldBy map[int]bool
	// heldSpans is the first start and last end of each process's holds
	// (math.MaxInt64 for one that never ended), and lives the span of
	// each client process in the timeline (processLives).
	heldSpans  spans
	lives      map[int]life
	heldKeys   *keySet
	heldAdded  procBits
	heldRecent recentKeys
}

// newView is the view of the history src from what its check res (in
// the canonical form of Normalize: the timelines take its holds in order
// of start) saw, with the record rec. It is complete once it has gone
// through the holds (scanHolds) and a pass over the history has given it
// its digest (digested).
func newView(rec Record, res checker.Result, src history.Source) *runView {
	book := newFaultBook(rec.FaultKinds)
	v := &runView{rec: rec, meta: rec.RunMeta, book: book, res: res, src: src, marks: map[spanKey]*marks{},
		faults: book.faultsUntil(res.Seen.Nemesis, res.Seen.End), end: res.Seen.End,
		heldBy: map[int]bool{}, heldKeys: newKeySet()}
	v.heal, v.healed = finalHeal(res.Seen.Nemesis)
	v.why = explain(&res.Seen, res, v.faults)
	for _, vi := range res.Violations {
		v.end = max(v.end, vi.End)
	}
	return v
}

// scanHolds goes through the result's holds for the processes and keys
// that held, and the end of the last.
func (v *runView) scanHolds() error {
	return v.res.EachHold(func(h checker.Hold) error { v.scanHold(h); return nil })
}

// scanHold takes one hold into the view (scanHolds).
func (v *runView) scanHold(h checker.Hold) {
	addProc(v.heldBy, &v.heldAdded, h.Process)
	v.heldSpans.see(h.Process, h.Start)
	if h.End < 0 {
		v.heldSpans.see(h.Process, math.MaxInt64)
	} else {
		v.heldSpans.see(h.Process, h.End)
	}
	if !v.heldRecent.seen(h.Key) {
		v.heldKeys.add(h.Key)
	}
	v.end = max(v.end, h.Start, h.End)
}

// digested completes the view with the digest of a pass over its
// history: the client processes that get a row, the keys that get a
// colour.
func (v *runView) digested(d *digest) {
	d.finish()
	v.dig = d
	extra := slices.Sorted(maps.Keys(v.heldBy))
	for _, vi := range v.res.Violations {
		extra = append(extra, vi.Processes...)
	}
	v.procs = clientProcesses(d.procs, extra...)
	v.lives = v.processLives()
	// The keys held and acquired, once, up to maxKeys: a run on a
	// million keys has a million of them.
	var ok bool
	v.keys, ok = sortedUnion(v.heldKeys, d.acqKeys)
	v.manyKeys = !ok
	v.heldKeys, d.acqKeys = nil, nil
}

// processLives is the span of each client process in the timeline: from
// its first event to the last mark drawn of it (its last event, a crash,
// the end of a hold, of a pause, of a violation naming it; a hold or
// pause that never ended lasts to the end of the run), so that processes
// packed in one row (lanesOf) never overlap. A process nothing was seen
// of lives the whole run.
func (v *runView) processLives() map[int]life {
	var sp spans
	see := func(p int, t int64) { sp.see(p, min(t, v.end)) }
	for _, p := range v.procs {
		if x, ok := v.dig.calls.life(p); ok {
			see(p, x.from)
			see(p, x.to)
		}
		if x, ok := v.heldSpans.of(p); ok {
			see(p, x.from)
			see(p, x.to)
		}
	}
	for _, c := range v.dig.rare {
		if c.Invoke.F == history.FPause && !c.Done {
			see(int(c.Invoke.Process), v.end)
		}
	}
	for _, vi := range v.res.Violations {
		for _, p := range vi.Processes {
			see(p, vi.Start)
			see(p, max(vi.End, vi.Start))
		}
	}
	lives := make(map[int]life, len(v.procs))
	for _, p := range v.procs {
		l := life{Proc: p, From: 0, To: v.end}
		if x, ok := sp.of(p); ok {
			l.From, l.To = x.from, x.to
		}
		lives[p] = l
	}
	return lives
}

// lanesOf packs procs into lanes (packLanes): clients whose lives do not
// overlap share a row. A reader keeps a row of its own, named as such
// (rowName): the final reader follows every client's life, and is not
// one of them.
func (v *runView) lanesOf(procs []int) [][]int {
	lives := make([]life, 0, len(procs))
	var own [][]int
	for _, p := range procs {
		if v.reader(p) {
			own = append(own, []int{p})
			continue
		}
		l, ok := v.lives[p]
		if !ok {
			l = life{Proc: p, From: 0, To: v.end}
		}
		lives = append(lives, l)
	}
	lanes := append(packLanes(lives), own...)
	slices.SortFunc(lanes, func(a, b []int) int { return cmp.Compare(a[0], b[0]) })
	return lanes
}

// reader reports whether process p only read: the final reader
// (workloads.Mutex.FinalReads).
func (v *runView) reader(p int) bool {
	return v.dig != nil && !v.dig.acted[p] && !v.heldBy[p] && v.dig.procs[p]
}

// rowName is how a process's row is labelled: a process that only read
// is the final reader (workloads.Mutex.FinalReads), the others clients.
func (v *runView) rowName(p int) string {
	if !v.reader(p) {
		return clientName(p)
	}
	readers := 0
	for q := range v.dig.procs {
		if !v.dig.acted[q] && !v.heldBy[q] {
			readers++
		}
	}
	if readers == 1 {
		return "final reader"
	}
	return fmt.Sprintf("reader %d", p)
}

// feedsFatal is the index of the fatal finding of the resource checker
// (a lost update, a wrong final count) that violation i, a stale write,
// shares an event with: the write it made is part of the damage. -1 when
// there is none.
func (v *runView) feedsFatal(i int) int {
	vi := v.res.Violations[i]
	if vi.Kind != checker.KindStaleWrite || vi.Fatal {
		return -1
	}
	for j, o := range v.res.Violations {
		if j == i || !o.Fatal || o.Checker != vi.Checker {
			continue
		}
		for _, e := range vi.Events {
			if slices.Contains(o.Events, e) {
				return j
			}
		}
	}
	return -1
}

// event is the event of history index i a violation names, and when the
// call it completes was invoked: as the check kept it, else as the pass
// over the history found it.
func (v *runView) event(i int64) (history.Op, int64, bool) {
	if op, inv, ok := v.res.Seen.Event(i); ok {
		return op, inv, true
	}
	if v.dig == nil {
		return history.Op{}, 0, false
	}
	op, ok := v.dig.at[i]
	return op, v.dig.invokedAt[i], ok
}

// kept reports whether the check kept every event vi names.
func (v *runView) kept(vi checker.Violation) bool {
	for _, e := range vi.Events {
		if _, _, ok := v.res.Seen.Event(e); !ok {
			return false
		}
	}
	return true
}

// violationWords is ViolationWords of violation i, followed by what the
// history explains about it.
func (v *runView) violationWords(i int) string {
	s := ViolationWords(v.res.Violations[i], v.faults)
	if j := v.feedsFatal(i); j >= 0 {
		s = strings.TrimSuffix(s, " (Reported, but harmless by itself.)")
		s += fmt.Sprintf(" Not harmless here: the write is part of finding %d, a %s.", j+1, v.res.Violations[j].Kind)
	}
	if why := v.why[i]; why != "" {
		s += " " + why
	}
	return s
}

// keyColour is the colour of holds of key.
func (v *runView) keyColour(key string) color.NRGBA {
	return keyColours[v.keyColourIndex(key)]
}

// keyColourIndex is the index of key's colour in keyColours.
func (v *runView) keyColourIndex(key string) int { return colourIndex(v.keys, v.manyKeys, key) }

// colourIndex is the index of key's colour in keyColours, among the
// sorted keys, or of more keys than maxKeys (many).
func colourIndex(keys []string, many bool, key string) int {
	if many {
		return hashColour(key)
	}
	i, found := slices.BinarySearch(keys, key)
	if !found {
		return 0
	}
	return i % len(keyColours)
}

// holdEnd is where a hold's bar ends: its end, or the end of the run for a
// claim that never ended.
func (v *runView) holdEnd(h checker.Hold) int64 { return barEnd(h, v.end) }

// barEnd is where h's bar ends in a run that ends at end.
func barEnd(h checker.Hold, end int64) int64 {
	if h.End < 0 {
		return end
	}
	return h.End
}

// holdsAhead are the overview timeline's hold marks, gathered in the
// pass over the holds that writes them (holds.jsonl) and scans them
// (scanHold), ahead of what they depend on and that pass completes: the
// end of the run (where the overview ends, and a claim that never ended)
// and the keys (their colours). They are gathered as the end and the keys
// were before it, the keys those the check saw acquired (the digest's),
// and kept if the pass changed neither (fits): then the overview needs no
// second pass over the holds, which come from a file on a long run (a
// tenth of a second of reading and merging both times on a million
// events). Else they are dropped and gather takes the holds again.
type holdsAhead struct {
	key  spanKey
	end  int64
	keys []string
	many bool
	m    *marks
	// recent is the colour of the key last seen in each slot of recentKeys.
	recent  recentKeys
	colours [recentSlots]int
}

// holdsAhead starts the overview's hold marks, when the digest g says
// which keys the run acquired; nil otherwise.
func (v *runView) holdsAhead(g *Digest) *holdsAhead {
	if g == nil || g.d == nil || g.d.acqKeys == nil {
		return nil
	}
	keys, ok := sortedUnion(g.d.acqKeys)
	k := window{From: 0, To: v.end}.key()
	return &holdsAhead{key: k, end: v.end, keys: keys, many: !ok, m: newMarks(k)}
}

// key0 is the key of the window the marks were gathered for (none for a
// nil a).
func (a *holdsAhead) key0() spanKey {
	if a == nil {
		return spanKey{}
	}
	return a.key
}

// add takes the next hold, in order of start.
func (a *holdsAhead) add(h checker.Hold) {
	a.m.addHold(h, barEnd(h, a.end), a.colour(h.Key))
}

// colour is key's colour (colourIndex), looked up once for a run of its
// holds.
func (a *holdsAhead) colour(key string) int {
	if key == "" {
		return colourIndex(a.keys, a.many, key)
	}
	if !a.recent.seen(key) {
		a.colours[keySlot(key)] = colourIndex(a.keys, a.many, key)
	}
	return a.colours[keySlot(key)]
}

// fits reports whether the marks gathered ahead are what v, complete,
// would gather: the same end of the run, the same keys.
func (a *holdsAhead) fits(v *runView) bool {
	return a != nil && v.end == a.end && v.manyKeys == a.many && (a.many || slices.Equal(v.keys, a.keys))
}

// verdictWord is how the verdict reads in a title.
func verdictWord(vd checker.Verdict) string {
	switch vd {
	case checker.Valid:
		return "VALID"
	case checker.Invalid:
		return "INVALID"
	}
	return "UNKNOWN"
}

// marksOf are the write marks of window w: gathered for every window of
// a render at once (gather), or here by a pass of their own.
func (v *runView) marksOf(w window) *marks {
	k := w.key()
	if m, ok := v.marks[k]; ok {
		return m
	}
	ms, err := gatherMarks(context.Background(), v.src, []spanKey{k})
	if err != nil || ms[k] == nil {
		ms = map[spanKey]*marks{k: newMarks(k)}
	}
	_ = v.gatherHolds(ms) // holds in memory cannot fail; gather reads a file
	v.marks[k] = ms[k]
	return ms[k]
}

// gather goes through the history once: for the digest, and for the
// write marks of the timelines the report draws (the overview, and the
// close-up of each violation in zoomed) whose windows the check's result
// says; then through the holds once, for the marks of every window. A
// close-up of a violation whose events the check did not keep is placed
// once the pass has found them, and its marks take a pass of their own.
// It returns the windows, the overview first.
func (v *runView) gather(ctx context.Context, zoomed []int, g *Digest, ahead *holdsAhead) ([]window, error) {
	wins := make([]window, 1+len(zoomed))
	wins[0] = window{From: 0, To: v.end, Title: v.title("timeline")}
	for k, i := range zoomed {
		if vi := v.res.Violations[i]; v.kept(vi) {
			wins[k+1] = zoomWindow(v, i, vi)
		}
	}
	ms, err := v.firstPass(ctx, wins, g)
	if err != nil {
		return nil, err
	}
	var later []spanKey
	for k, i := range zoomed {
		if vi := v.res.Violations[i]; !v.kept(vi) {
			wins[k+1] = zoomWindow(v, i, vi)
			if ms[wins[k+1].key()] == nil {
				later = append(later, wins[k+1].key())
			}
		}
	}
	if len(later) > 0 {
		more, err := gatherMarks(ctx, v.src, later)
		if err != nil {
			return nil, err
		}
		maps.Copy(ms, more)
	}
	need := ms
	if m := ms[ahead.key0()]; m != nil && ahead.fits(v) && len(m.holds.holders) == 0 && len(m.holds.bars) == 0 {
		m.holds = ahead.m.holds // the overview's holds, gathered ahead
		need = maps.Clone(ms)
		delete(need, ahead.key)
	}
	if len(need) > 0 {
		if err := v.gatherHolds(need); err != nil {
			return nil, err
		}
	}
	maps.Copy(v.marks, ms)
	return wins, nil
}

// firstPass is the digest and the write marks of the windows of wins
// placed so far (the others are zero): what g gathered while the check
// read the history, and what it did not from a pass over the history
// (all of it without g).
func (v *runView) firstPass(ctx context.Context, wins []window, g *Digest) (map[spanKey]*marks, error) {
	ms := map[spanKey]*marks{}
	var d *digest
	if g != nil {
		d = g.d
	}
	var now []spanKey
	for _, w := range wins {
		if w == (window{}) || ms[w.key()] != nil {
			continue
		}
		if m := g.marksOf(w.key()); m != nil {
			ms[w.key()] = m
		} else {
			now = append(now, w.key())
		}
	}
	want := unkept(v.res)
	if d == nil || len(now) > 0 || len(want) > 0 {
		more, mp := newMarkPass(now)
		dd := newDigest(want, lastTime(v.src))
		dd.marks = mp
		if err := each(ctx, v.src, dd.see); err != nil {
			return nil, err
		}
		if d == nil {
			d = dd
		}
		for k, e := range dd.at {
			d.at[k], d.invokedAt[k] = e, dd.invokedAt[k]
		}
		for k, m := range more {
			ms[k] = m
		}
	}
	v.digested(d)
	return ms, nil
}

// lastTime is the time of src's last event (history.Source.LastTime), 0
// when it cannot say: what sizes the cells of the latency points, which
// the digest gathered while the check read the history sized the same
// (NewDigest).
func lastTime(src history.Source) int64 {
	t, _ := src.LastTime()
	return t
}

// gatherHolds adds the result's holds, in order of start, to the marks
// of each window.
func (v *runView) gatherHolds(ms map[spanKey]*marks) error {
	all := slices.Collect(maps.Values(ms))
	return v.res.EachHold(func(h checker.Hold) error {
		e, c := v.holdEnd(h), v.keyColourIndex(h.Key)
		for _, m := range all {
			m.addHold(h, e, c)
		}
		return nil
	})
}

// faultColour is the translucent shade of a fault family, as the run's
// record says to draw it.
func (v *runView) faultColour(family string, alpha uint8) color.NRGBA {
	return v.book.colour(family, alpha)
}

// grantNodes are the lock nodes the history says granted acquires
// (history.Value.Nodes, recorded by Redlock-style locks), sorted; none
// for a lock of one node.
func (v *runView) grantNodes() []string {
	if v.dig == nil {
		return nil
	}
	seen := map[string]bool{}
	for _, ns := range v.dig.granted {
		for _, n := range ns {
			seen[n] = true
		}
	}
	return slices.Sorted(maps.Keys(seen))
}
