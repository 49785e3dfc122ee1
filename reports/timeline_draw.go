package reports

import (
	"cmp"
	"fmt"
	"image/color"
	"maps"
	"math"
	"slices"

	"gonum.org/v1/plot/vg/draw"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/history"
)

// The steps that draw a timeline (see runView.timeline), in the order
// they are taken: each adds its marks to a layer of d and notes what it
// drew for the legend.

// bands shades every fault's window across all rows, draws the time grid,
// and a line between the rows above the clients and the clients.
func (d *timelineDraw) bands() {
	for _, f := range d.faults {
		d.base.shade(seconds(f.Start), seconds(f.End), d.v.faultColour(f.Family, 38))
		d.families[f.Family] = true
	}
	timeGrid(d.base, d.p)
	if fc := d.layout.firstClient; fc > 0 && fc < len(d.layout.rows) {
		d.base.hline(d.layout.y(fc)+0.5, 0, 0, colFaint, 0.5)
	}
}

// lanes draws each placed fault as a labelled bar in its lane; a label
// stops where the next fault of its lane begins.
func (d *timelineDraw) lanes() {
	for i, pl := range d.placed {
		y := d.layout.laneY[pl.lane]
		st, en := seconds(pl.f.Start), seconds(pl.f.End)
		d.base.rect(st, en, y-0.32, y+0.32, d.v.faultColour(pl.f.Family, 150), 1)
		clip := d.xmax
		for _, q := range d.placed[i+1:] {
			if q.lane == pl.lane {
				clip = seconds(q.f.Start)
				break
			}
		}
		d.base.text(st, y, pl.f.Label, 8, colInk, clip)
	}
}

// clockRows draws each clock fault in its nodes' rows: an offset bar,
// darker the larger the jump, labelled with the offset (or, in a history
// that did not record it, the fault's detail).
func (d *timelineDraw) clockRows() {
	for _, f := range d.faults {
		if f.Family != "clock" {
			continue
		}
		for _, t := range f.Targets {
			y, ok := d.layout.clockY[t]
			if !ok {
				continue
			}
			a := uint8(90)
			if f.HasOffset {
				a = uint8(min(230, 70+math.Abs(f.Offset.Seconds())*3))
			}
			d.base.rect(seconds(f.Start), seconds(f.End), y-0.35, y+0.35, d.v.faultColour("clock", a), 1)
			txt := f.Detail
			if f.HasOffset {
				txt = fmtOffset(f.Offset)
			}
			d.base.text(seconds(f.Start), y, txt, 8, colInk, seconds(f.End))
		}
	}
}

// bars draws the holds, merged per row and key colour when closer than a
// pixel (gathered in mk.holds), paler where a hold covers only part of a
// pixel's time. Every holder in the window has a row, so every key held
// in it is shown.
func (d *timelineDraw) bars() {
	hm, clientY := d.mk.holds, d.layout.clientY
	for p, n := range hm.holders {
		if _, ok := clientY[p]; ok {
			d.area.SourceHolds += *n
		}
	}
	rks := make([]barKey, 0, len(hm.bars))
	for k := range hm.bars {
		if _, ok := clientY[k.proc]; ok {
			rks = append(rks, k)
		}
	}
	slices.SortFunc(rks, func(a, b barKey) int {
		return cmp.Or(cmp.Compare(a.proc, b.proc), cmp.Compare(a.colour, b.colour))
	})
	for _, k := range rks {
		y := clientY[k.proc]
		for _, r := range hm.bars[k].runs() {
			c := keyColours[k.colour]
			c.A = uint8(60 + 195*r.Level)
			d.base.rect(r.From, r.To, y-0.3, y+0.3, c, 0)
			d.area.MergedBars++
		}
	}
}

// nodeGrants draws, in each lock node's row, the holds that node
// granted, coloured by the client that held (a client's colour is its
// place among the clients), merged per row and client where closer than
// a pixel: the picture of which nodes a Redlock quorum stood on, and
// where two quorums shared a node.
func (d *timelineDraw) nodeGrants() {
	if len(d.layout.nodeY) == 0 {
		return
	}
	type rk struct {
		node string
		proc int
	}
	open := map[rk][2]float64{}
	flush := func(k rk) {
		// Each client a band of the row: two quorums on one node show
		// as two bands at once.
		b, y := open[k], d.layout.nodeY[k.node]
		i, _ := slices.BinarySearch(d.v.procs, k.proc)
		h := 0.7 / float64(max(len(d.v.procs), 1))
		y0 := y - 0.35 + h*float64(i)
		d.base.rect(b[0], b[1], y0, y0+h, d.procColour(k.proc), 1)
	}
	_ = d.v.res.EachHold(func(h checker.Hold) error {
		e := d.v.holdEnd(h)
		if !d.in(h.Start, e) {
			return nil
		}
		for _, n := range d.v.dig.granted[h.Acquire] {
			k := rk{n, h.Process}
			s, en := seconds(h.Start), seconds(e)
			if b, ok := open[k]; ok && s-b[1] <= d.res {
				open[k] = [2]float64{b[0], max(b[1], en)}
				continue
			} else if ok {
				flush(k)
			}
			open[k] = [2]float64{s, en}
		}
		return nil
	})
	for _, k := range slices.SortedFunc(maps.Keys(open), func(a, b rk) int {
		return cmp.Or(cmp.Compare(a.node, b.node), cmp.Compare(a.proc, b.proc))
	}) {
		flush(k)
	}
	d.drawn.grants = true
}

// procColour is the colour of a client in the node rows.
func (d *timelineDraw) procColour(p int) color.NRGBA {
	i, _ := slices.BinarySearch(d.v.procs, p)
	return keyColours[i%len(keyColours)]
}

// pausesAndCrashes draws each client pause as a thin bar (to the end of
// the run when it never ended) and each crash as a cross.
func (d *timelineDraw) pausesAndCrashes() {
	for _, c := range d.v.dig.rare {
		y, ok := d.layout.clientY[int(c.Invoke.Process)]
		if !ok {
			continue
		}
		switch c.Invoke.F {
		case history.FPause:
			e := d.v.end
			if c.Done {
				e = c.Complete.Time
			}
			if d.in(c.Invoke.Time, e) {
				d.base.rect(seconds(c.Invoke.Time), seconds(e), y-0.09, y+0.09, colPause, 1)
				d.drawn.paused = true
			}
		case history.FCrash:
			if d.in(c.Invoke.Time, c.Invoke.Time) {
				d.base.glyph(seconds(c.Invoke.Time), y, draw.CrossGlyph{}, 3, colInk)
				d.drawn.crashed = true
			}
		}
	}
}

// laneStarts marks, in a row that several processes share one after
// another (packLanes), where each but the first starts: a thin line
// across the row, and the process's number where it fits before the
// next one starts, so that a violation's words ("client 45 …") can be
// found in the picture.
func (d *timelineDraw) laneStarts() {
	const size = 6.5
	labelSty := textStyle(size, colInk)
	perPt := (d.xmax - d.xmin) / d.dataW
	showNumbers := d.rowHeight() >= 8
	for _, r := range d.layout.rows {
		if r.Kind != rowClient || len(r.Procs) < 2 {
			continue
		}
		y := d.layout.clientY[r.Proc]
		for i, p := range r.Procs[1:] {
			x := seconds(d.v.lives[p].From)
			if !d.in(d.v.lives[p].From, d.v.lives[p].From) {
				continue
			}
			d.base.tick(x, y-0.5, y+0.5, colFaint, 0.5)
			d.drawn.sharedRows = true
			next := d.xmax
			if i+2 < len(r.Procs) {
				next = seconds(d.v.lives[r.Procs[i+2]].From)
			}
			txt := fmt.Sprint(p)
			if showNumbers && x+perPt*float64(labelSty.Width(txt)+3) < next {
				d.base.text(x, y+0.33, txt, size, colInk, next)
			}
		}
	}
}

// writeTicks draws the critical sections' writes and the leases that
// expired while held as ticks, one per pixel column, row and kind.
// Accepted writes are the normal case: when there are more of them than a
// few per pixel column and row, they would only paint the rows black, so
// the overview leaves them out and says so.
func (d *timelineDraw) writeTicks() {
	d.dense = float64(d.mk.accepted) > d.dataW*DPI/72/6*float64(max(len(d.packed), 1))
	ks := d.mk.sorted()
	// Room for the ticks at once: a long run's are tens of thousands,
	// which grew the layers by doubling, copy after copy.
	accepted := 0
	for _, k := range ks {
		if k.kind == tkAccepted {
			accepted++
		}
	}
	if !d.dense {
		d.under.items = slices.Grow(d.under.items, accepted)
	}
	d.top.items = slices.Grow(d.top.items, len(ks)-accepted)
	for _, k := range ks {
		y, ok := d.layout.clientY[k.proc]
		if !ok {
			continue
		}
		x := d.mk.ticks[k]
		switch k.kind {
		case tkRejected:
			d.tick(x, y, tkRejected)
			d.drawn.wroteRejected = true
		case tkAccepted:
			if !d.dense {
				d.tick(x, y, tkAccepted)
				d.drawn.wroteOK = true
			}
		case tkUnknown:
			d.tick(x, y, tkUnknown)
			d.drawn.wroteUnk = true
		}
	}
	d.area.Write = d.mk.writes
	for _, e := range d.mk.holds.expiries {
		if y, ok := d.layout.clientY[e.proc]; ok {
			d.tick(e.x, y, tkExpired)
			d.drawn.expired = true
		}
	}
}

// tick draws a tick of kind at x in the row at y. There is one of its
// kind per pixel column and row at most: the window's marks keep one
// write per pixel column, process and kind (marks.add), and one expiry
// (holdMarks.addHold), in the columns of the timeline's scale (colRes),
// and each process has a row of its own. (A set of the ticks drawn,
// which kept them apart once more, was a tenth of drawing a crowded
// overview.)
func (d *timelineDraw) tick(x, y float64, kind int) {
	switch kind {
	case tkAccepted:
		d.under.tick(x, y-0.42, y+0.42, colInk, 1)
	case tkRejected:
		d.top.tick(x, y-0.42, y+0.42, colWarn, 1.5)
	case tkUnknown:
		d.top.tick(x, y-0.42, y+0.42, colFaint, 1)
	case tkExpired:
		d.top.glyph(x, y+0.3, draw.CircleGlyph{}, 2.5, colExpiry)
	}
	d.area.Ticks++
}

// violations draws every violation in the window, never merged: one that
// names no process as a labelled bar in its own row, an overlap as a bar
// on each holder's row, any other as a triangle on each process's row.
// Red is for violations; a harmless finding is drawn in the warning
// colour.
func (d *timelineDraw) violations() {
	for i, vi := range d.v.res.Violations {
		e := max(vi.End, vi.Start)
		if !d.in(vi.Start, e) {
			continue
		}
		if len(vi.Processes) > 0 {
			d.bin(vi.Start)
		}
		col := colViolation
		if !vi.Fatal {
			col = colWarn
		}
		if vi.Kind == checker.KindStaleWrite && len(vi.Processes) > 0 {
			d.staleWrite(i, vi)
			continue
		}
		d.drawn.harmless = d.drawn.harmless || !vi.Fatal
		if len(vi.Processes) == 0 {
			y := d.layout.y(d.layout.rowOf(rowViolations))
			d.viols.rect(seconds(vi.Start), seconds(e), y-0.35, y+0.35, col, 3)
			d.viols.text(seconds(vi.Start), y, vi.Kind+" "+vi.Key, 8, colInk, 0)
			d.drawn.otherFatal = d.drawn.otherFatal || vi.Fatal
			continue
		}
		for _, pr := range vi.Processes {
			y, ok := d.layout.clientY[pr]
			if !ok {
				continue
			}
			if vi.Kind == checker.KindOverlap {
				if d.crowded { // a strip under the holds, not a wall over them
					d.viols.rect(seconds(vi.Start), seconds(e), y-0.45, y-0.3, col, 2)
				} else {
					d.viols.rect(seconds(vi.Start), seconds(e), y-0.4, y+0.4, col, 3)
				}
				d.drawn.overlap = d.drawn.overlap || vi.Fatal
				continue
			}
			// A finding's span (a lost update from the first read to the
			// second write) is underlined only in its own close-up: drawn
			// for every finding it would bury the holds under red lines.
			if e > vi.Start && d.highlights(vi) {
				d.viols.rect(seconds(vi.Start), seconds(e), y-0.42, y-0.3, col, 2)
			}
			d.viols.glyph(seconds(vi.Start), y+0.15, draw.TriangleGlyph{}, 3.5, col)
			d.drawn.otherFatal = d.drawn.otherFatal || vi.Fatal
		}
	}
	d.drawBins()
}

// staleWrite draws stale write i as a diamond on its writer's row: red
// when it is fatal or its write is part of a fatal finding (the lost
// update it caused), orange when it did no harm (fencing rejected it).
func (d *timelineDraw) staleWrite(i int, vi checker.Violation) {
	col := colWarn
	if vi.Fatal || d.v.feedsFatal(i) >= 0 {
		col, d.drawn.staleFatal = colViolation, true
	} else {
		d.drawn.staleHarmless = true
	}
	for _, pr := range vi.Processes {
		if y, ok := d.layout.clientY[pr]; ok {
			d.viols.glyph(seconds(vi.Start), y+0.15, draw.BoxGlyph{}, 3, col)
		}
	}
}

// violationBins is how many stretches a crowded overview counts its
// violations in.
const violationBins = 40

// bin counts a violation at t in its stretch of a crowded overview.
func (d *timelineDraw) bin(t int64) {
	if !d.crowded {
		return
	}
	if d.bins == nil {
		d.bins = make([]int, violationBins)
	}
	k := int(float64(violationBins) * float64(t-d.from) / float64(d.to-d.from))
	d.bins[min(max(k, 0), violationBins-1)]++
}

// drawBins draws the count of violations of each stretch of a crowded
// overview in its row: red, darker the more, with the number.
func (d *timelineDraw) drawBins() {
	if !d.crowded || d.bins == nil {
		return
	}
	y := d.layout.y(0)
	most := slices.Max(d.bins)
	w := (d.xmax - d.xmin) / violationBins
	for k, n := range d.bins {
		if n == 0 {
			continue
		}
		x0 := d.xmin + float64(k)*w
		c := colViolation
		c.A = uint8(60 + 150*float64(n)/float64(most))
		d.viols.rect(x0, x0+w*0.92, y-0.4, y+0.4, c, 1)
		d.viols.text(x0+w*0.1, y, fmt.Sprint(n), 7, colInk, x0+w)
	}
	d.drawn.binned = true
}

// highlights reports whether vi is the violation the window is a close-up
// of.
func (d *timelineDraw) highlights(vi checker.Violation) bool {
	hl := d.win.Highlight
	return hl != nil && hl.Kind == vi.Kind && hl.Key == vi.Key && hl.Start == vi.Start && hl.End == vi.End
}

// healed reports whether the final heal lies in the window.
func (d *timelineDraw) healed() bool {
	return d.v.healed && d.v.heal >= d.from && d.v.heal <= d.to
}

// highlightAndHeal draws dashed lines across every row at the start and
// end of the violation a close-up shows, and at the final heal.
func (d *timelineDraw) highlightAndHeal() {
	if hl := d.win.Highlight; hl != nil {
		col := colViolation
		if !hl.Fatal {
			col = colWarn // red means a violation and nothing else
		}
		d.top.vline(seconds(hl.Start), 0, 0, col, 1, 3, 2)
		d.top.vline(seconds(max(hl.End, hl.Start)), 0, 0, col, 1, 3, 2)
	}
	if d.healed() {
		d.top.vline(seconds(d.v.heal), 0, 0, colInk, 1, 4, 3)
	}
}

// legend lists what the timeline drew: the keys held (seven at most, by
// colour), then each kind of mark, then the fault families and the final
// heal.
func (d *timelineDraw) legend() {
	d.leg = newLegend()
	// The first keys held in the window, in the order of the run's
	// keys (sorted).
	wk := d.mk.holds.keys
	for _, k := range wk.least {
		d.leg.Add("held "+k, boxThumb(d.v.keyColour(k)))
	}
	nKeys, exact := wk.count()
	keysWord := fmt.Sprintf("(%d keys; colour = key)", nKeys)
	if !exact {
		keysWord = fmt.Sprintf("(over %d keys; colour = key)", maxKeys)
	}
	for _, e := range []struct {
		drawn bool
		name  string
		thumb thumb
	}{
		{d.area.SourceHolds > int(d.dataW*DPI/72), "(paler: held part of the pixel's time)", boxThumb(color.White)},
		{nKeys > legendKeys || !exact, keysWord, boxThumb(colFaint)},
		{d.drawn.expired, "lease expired while held", glyphThumb(colExpiry, draw.CircleGlyph{}, 2.5)},
		{d.drawn.wroteOK, "write accepted", tickThumb(colInk, 1)},
		{d.dense, "(accepted writes: too many to draw)", boxThumb(color.White)},
		{d.drawn.wroteRejected, "write rejected (fencing)", tickThumb(colWarn, 1.5)},
		{d.drawn.wroteUnk, "write outcome unknown", tickThumb(colFaint, 1)},
		{d.drawn.paused, "client paused (GC)", lineThumb(colPause, 2.5)},
		{d.drawn.crashed, "client crashed", glyphThumb(colInk, draw.CrossGlyph{}, 3)},
		{d.drawn.sharedRows, "later clients in the row (+k)", tickThumb(colFaint, 1)},
		{d.drawn.overlap, "VIOLATION: two holders", boxThumb(colViolation)},
		{d.drawn.otherFatal, "VIOLATION (see list)", glyphThumb(colViolation, draw.TriangleGlyph{}, 3.5)},
		{d.drawn.staleFatal, "STALE WRITE accepted: lost update", glyphThumb(colViolation, draw.BoxGlyph{}, 3)},
		{d.drawn.staleHarmless, "stale write, harmless", glyphThumb(colWarn, draw.BoxGlyph{}, 3)},
		{d.drawn.harmless, "finding, not fatal", glyphThumb(colWarn, draw.TriangleGlyph{}, 3.5)},
		{d.drawn.binned, "(top row: violations per stretch)", boxThumb(colViolation)},
		{d.drawn.grants, "(node rows: grants; colour = client)", boxThumb(colFaint)},
		{d.drawn.grants && d.v.dig.grantsCut, fmt.Sprintf("(node rows: the first %d grants)", maxGrants), boxThumb(color.White)},
	} {
		if e.drawn {
			d.leg.Add(e.name, e.thumb)
		}
	}
	for _, f := range slices.Sorted(maps.Keys(d.families)) {
		name := "fault: " + f
		if f == "clock" {
			name = "clock offset"
		}
		d.leg.Add(name, boxThumb(d.v.faultColour(f, 120)))
	}
	if d.healed() {
		d.leg.Add("final heal", lineThumb(colInk, 1, 4, 3))
	}
}
