package reports

import (
	"cmp"
	"fmt"
	"image/color"
	"math"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/history"
)

// Figure sizes, in points.
const (
	figWidth     vg.Length = 900 // 1200 px
	legendWidth  vg.Length = 200
	maxFaultLane           = 6
)

// window is the span of time a timeline shows and why.
type window struct {
	From, To int64
	Title    string
	// Zoom is set for a close-up of one violation: only the processes and
	// faults seen in the window get a row.
	Zoom      bool
	Highlight *checker.Violation
}

// rowKind says what a timeline row shows.
type rowKind int

const (
	rowViolations rowKind = iota // findings that name no process
	rowClock                     // one node's clock offset
	rowFault                     // a lane of fault windows
	rowClient                    // one client process
)

type row struct {
	Kind  rowKind
	Label string
	Proc  int    // rowClient
	Node  string // rowClock
}

// plotArea records where the data were drawn, so tests can find a time and
// a row in the picture.
type plotArea struct {
	W, H               vg.Length // the whole figure
	Min, Max           vg.Point  // the data area, in points from the bottom left
	XMin, XMax         float64   // seconds
	YMin, YMax         float64
	ClientY            map[int]float64 // row of each client
	Rows               []row
	MergedBars, Ticks  int // marks drawn after downsampling
	SourceHolds, Write int // marks before
}

// Pixel converts data coordinates to PNG pixel coordinates.
func (a *plotArea) Pixel(x, y float64) (px, py int) {
	fx := a.Min.X + (a.Max.X-a.Min.X)*vg.Length((x-a.XMin)/(a.XMax-a.XMin))
	fy := a.Min.Y + (a.Max.Y-a.Min.Y)*vg.Length((y-a.YMin)/(a.YMax-a.YMin))
	scale := float64(DPI) / 72
	return int(float64(fx) * scale), int(float64(a.H-fy) * scale)
}

// timeline builds one timeline figure: the overview of the whole run, or a
// close-up. Marks closer together than a pixel are merged, so the cost and
// the size of the picture are bounded by its pixels, not by the length of
// the run; violations are never merged away (they are drawn last, at least
// two pixels wide).
func (v *runView) timeline(win window) (vg.Length, vg.Length, func(draw.Canvas), *plotArea) {
	from, to := win.From, max(win.To, win.From+1)
	xmin, xmax := seconds(from), seconds(to)
	plotW := figWidth - legendWidth
	dataW := float64(plotW - 70) // roughly: the y tick labels take the rest
	res := (xmax - xmin) / (dataW * DPI / 72)
	in := func(a, b int64) bool { return b >= from && a <= to }
	mk := v.marksOf(win)

	// Which processes get a row.
	procs := v.procs
	if win.Zoom {
		seen := map[int]bool{}
		for p := range mk.holds.holders {
			seen[p] = true
		}
		for p := range mk.procs {
			seen[p] = true
		}
		if win.Highlight != nil {
			for _, p := range win.Highlight.Processes {
				seen[p] = true
			}
		}
		procs = nil
		for _, p := range v.procs {
			if seen[p] {
				procs = append(procs, p)
			}
		}
	}

	// Violations that name no process get a lane of their own.
	var loose []checker.Violation
	for _, vi := range v.res.Violations {
		if len(vi.Processes) == 0 && in(vi.Start, max(vi.End, vi.Start)) {
			loose = append(loose, vi)
		}
	}

	// Clock rows: one per node whose clock was moved.
	var clockNodes []string
	var faults []Fault
	for _, f := range v.faults {
		if !in(f.Start, f.End) {
			continue
		}
		faults = append(faults, f)
		if f.Family == "clock" {
			for _, t := range f.Targets {
				if !slices.Contains(clockNodes, t) {
					clockNodes = append(clockNodes, t)
				}
			}
		}
	}
	slices.Sort(clockNodes)

	// Fault lanes: greedy, a label needs room after its bar's start.
	labelSty := textStyle(8, colInk)
	perPt := (xmax - xmin) / dataW
	type placed struct {
		f    Fault
		lane int
	}
	var lanes []float64 // right edge in use, seconds
	var place []placed
	for _, f := range faults {
		if f.Family == "clock" && len(f.Targets) > 0 {
			continue
		}
		s, e := seconds(f.Start), seconds(f.End)
		need := math.Max(e, s+perPt*float64(labelSty.Width(f.Label)+6))
		lane := -1
		for i, end := range lanes {
			if end <= s {
				lane = i
				break
			}
		}
		if lane < 0 && len(lanes) < maxFaultLane {
			lane = len(lanes)
			lanes = append(lanes, 0)
		}
		if lane < 0 { // crowded: share the lane that frees first
			lane = 0
			for i := range lanes {
				if lanes[i] < lanes[lane] {
					lane = i
				}
			}
		}
		lanes[lane] = math.Max(lanes[lane], need)
		place = append(place, placed{f, lane})
	}

	// Rows, top to bottom.
	var rows []row
	if len(loose) > 0 {
		rows = append(rows, row{Kind: rowViolations, Label: "violations"})
	}
	for _, n := range clockNodes {
		rows = append(rows, row{Kind: rowClock, Label: "clock " + n, Node: n})
	}
	for i := range lanes {
		label := ""
		if i == 0 {
			label = "faults"
		}
		rows = append(rows, row{Kind: rowFault, Label: label})
	}
	for _, p := range procs {
		rows = append(rows, row{Kind: rowClient, Label: clientName(p), Proc: p})
	}
	n := len(rows)
	yOf := func(i int) float64 { return float64(n - 1 - i) }
	clientY := map[int]float64{}
	laneY := map[int]float64{}
	clockY := map[string]float64{}
	lane := 0
	firstClient := n
	for i, r := range rows {
		switch r.Kind {
		case rowClient:
			clientY[r.Proc] = yOf(i)
			firstClient = min(firstClient, i)
		case rowFault:
			laneY[lane] = yOf(i)
			lane++
		case rowClock:
			clockY[r.Node] = yOf(i)
		}
	}

	area := &plotArea{XMin: xmin, XMax: xmax, YMin: -0.5, YMax: float64(n) - 0.5, ClientY: clientY, Rows: rows}
	s := &shapes{}
	leg := newLegend()
	families := map[string]bool{}

	// Fault windows: shaded across every row, and a labelled bar in a lane.
	for _, f := range faults {
		s.shade(seconds(f.Start), seconds(f.End), v.faultColour(f.Family, 38))
		families[f.Family] = true
	}
	// Grid and separators.
	p := basePlot(win.Title)
	p.X.Min, p.X.Max = xmin, xmax
	p.Y.Min, p.Y.Max = area.YMin, area.YMax
	p.X.Padding, p.Y.Padding = 0, 0
	timeGrid(s, p)
	if firstClient > 0 && firstClient < n {
		s.hline(yOf(firstClient)+0.5, 0, 0, colFaint, 0.5)
	}
	for i, pl := range place {
		y := laneY[pl.lane]
		st, en := seconds(pl.f.Start), seconds(pl.f.End)
		s.rect(st, en, y-0.32, y+0.32, v.faultColour(pl.f.Family, 150), 1)
		clip := xmax
		for _, q := range place[i+1:] {
			if q.lane == pl.lane {
				clip = seconds(q.f.Start)
				break
			}
		}
		s.text(st, y, pl.f.Label, 8, colInk, clip)
	}
	// Clock rows: offset bars, darker the larger the jump.
	for _, f := range faults {
		if f.Family != "clock" {
			continue
		}
		for _, t := range f.Targets {
			y, ok := clockY[t]
			if !ok {
				continue
			}
			a := uint8(90)
			if f.HasOffset {
				a = uint8(min(230, 70+math.Abs(f.Offset.Seconds())*3))
			}
			s.rect(seconds(f.Start), seconds(f.End), y-0.35, y+0.35, v.faultColour("clock", a), 1)
			txt := f.Detail
			if f.HasOffset {
				txt = fmtOffset(f.Offset)
			}
			s.text(seconds(f.Start), y, txt, 8, colInk, seconds(f.End))
		}
	}

	// Holds, merged per row and key when closer than a pixel (gathered
	// in mk.holds).
	// Every holder in the window has a row (procs), so every key held in
	// it is shown.
	keysShown := mk.holds.keys
	for p, n := range mk.holds.holders {
		if _, ok := clientY[p]; ok {
			area.SourceHolds += n
		}
	}
	rks := make([]barKey, 0, len(mk.holds.bars))
	for k := range mk.holds.bars {
		if _, ok := clientY[k.proc]; ok {
			rks = append(rks, k)
		}
	}
	slices.SortFunc(rks, func(a, b barKey) int {
		return cmp.Or(cmp.Compare(a.proc, b.proc), cmp.Compare(a.colour, b.colour))
	})
	for _, k := range rks {
		y := clientY[k.proc]
		for _, r := range mk.holds.bars[k].runs() {
			c := keyColours[k.colour]
			c.A = uint8(60 + 195*r.Level)
			s.rect(r.From, r.To, y-0.3, y+0.3, c, 0)
			area.MergedBars++
		}
	}
	var expiries []float64
	var expiryY []float64
	for _, e := range mk.holds.expiries {
		if y, ok := clientY[e.proc]; ok {
			expiries = append(expiries, e.x)
			expiryY = append(expiryY, y)
		}
	}
	// Client pauses and crashes, and critical-section writes as ticks,
	// one per pixel column and kind.
	type tk struct {
		y    float64
		kind int
		col  int64
	}
	ticks := map[tk]bool{}
	under := &shapes{} // accepted writes: drawn under violations
	marks := &shapes{} // drawn last: rare marks stay visible on top of red
	// Accepted writes are the normal case: when there are more of them
	// than a few per pixel column and row, they would only paint the rows
	// black, so the overview leaves them out and says so.
	accepted := mk.accepted
	dense := float64(accepted) > dataW*DPI/72/6*float64(max(len(procs), 1))
	addTick := func(x, y float64, kind int) {
		k := tk{y, kind, int64(math.Floor((x - xmin) / res))}
		if ticks[k] {
			return
		}
		ticks[k] = true
		switch kind {
		case tkAccepted:
			under.tick(x, y-0.42, y+0.42, colInk, 1)
		case tkRejected:
			marks.tick(x, y-0.42, y+0.42, colWarn, 1.5)
		case tkUnknown:
			marks.tick(x, y-0.42, y+0.42, colFaint, 1)
		case tkExpired:
			marks.tick(x, y-0.3, y+0.3, colInk, 2)
		}
		area.Ticks++
	}
	var paused, crashed, wroteOK, wroteRej, wroteUnk bool
	for _, c := range v.dig.rare {
		y, ok := clientY[int(c.Invoke.Process)]
		if !ok {
			continue
		}
		switch c.Invoke.F {
		case history.FPause:
			e := v.end
			if c.Done {
				e = c.Complete.Time
			}
			if in(c.Invoke.Time, e) {
				s.rect(seconds(c.Invoke.Time), seconds(e), y-0.09, y+0.09, colPause, 1)
				paused = true
			}
		case history.FCrash:
			if in(c.Invoke.Time, c.Invoke.Time) {
				s.glyph(seconds(c.Invoke.Time), y, draw.CrossGlyph{}, 3, colInk)
				crashed = true
			}
		}
	}
	for _, k := range mk.sorted() {
		y, ok := clientY[k.proc]
		if !ok {
			continue
		}
		x := mk.ticks[k]
		switch k.kind {
		case tkRejected:
			addTick(x, y, tkRejected)
			wroteRej = true
		case tkAccepted:
			if !dense {
				addTick(x, y, tkAccepted)
				wroteOK = true
			}
		case tkUnknown:
			addTick(x, y, tkUnknown)
			wroteUnk = true
		}
	}
	area.Write = mk.writes
	for i, x := range expiries {
		addTick(x, expiryY[i], tkExpired)
	}

	p.Add(s, under)
	s = &shapes{}
	// Violations on top of holds and writes, never merged.
	var overlap, other, harmless bool
	for _, vi := range v.res.Violations {
		e := max(vi.End, vi.Start)
		if !in(vi.Start, e) {
			continue
		}
		col := colViolation
		if !vi.Fatal {
			col, harmless = colWarn, true
		}
		if len(vi.Processes) == 0 {
			y := yOf(0)
			s.rect(seconds(vi.Start), seconds(e), y-0.35, y+0.35, col, 3)
			s.text(seconds(vi.Start), y, vi.Kind+" "+vi.Key, 8, colInk, 0)
			other = other || vi.Fatal
			continue
		}
		for _, pr := range vi.Processes {
			y, ok := clientY[pr]
			if !ok {
				continue
			}
			if vi.Kind == checker.KindOverlap {
				s.rect(seconds(vi.Start), seconds(e), y-0.4, y+0.4, col, 3)
				overlap = overlap || vi.Fatal
				continue
			}
			// A finding's span (a lost update from the first read to the
			// second write) is underlined only in its own close-up: drawn
			// for every finding it would bury the holds under red lines.
			if hl := win.Highlight; e > vi.Start && hl != nil && hl.Kind == vi.Kind && hl.Key == vi.Key && hl.Start == vi.Start && hl.End == vi.End {
				s.rect(seconds(vi.Start), seconds(e), y-0.42, y-0.3, col, 2)
			}
			s.glyph(seconds(vi.Start), y+0.15, draw.TriangleGlyph{}, 3.5, col)
			other = other || vi.Fatal
		}
	}
	if hl := win.Highlight; hl != nil {
		col := colViolation
		if !hl.Fatal {
			col = colWarn // red means a violation and nothing else
		}
		marks.vline(seconds(hl.Start), 0, 0, col, 1, 3, 2)
		marks.vline(seconds(max(hl.End, hl.Start)), 0, 0, col, 1, 3, 2)
	}
	if v.healed && v.heal >= from && v.heal <= to {
		marks.vline(seconds(v.heal), 0, 0, colInk, 1, 4, 3)
	}
	p.Add(s, marks)

	// Legend.
	for _, k := range v.keys {
		if keysShown[k] && leg.n < 7 {
			leg.Add("held "+k, boxThumb(v.keyColour(k)))
		}
	}
	if area.SourceHolds > int(dataW*DPI/72) {
		leg.Add("(paler: held part of the pixel's time)", boxThumb(color.White))
	}
	if len(keysShown) > 7 {
		leg.Add(fmt.Sprintf("(%d keys; colour = key)", len(keysShown)), boxThumb(colFaint))
	}
	if len(expiries) > 0 {
		leg.Add("lease expired while held", tickThumb(colInk, 2))
	}
	if wroteOK {
		leg.Add("write accepted", tickThumb(colInk, 1))
	}
	if dense {
		leg.Add("(accepted writes: too many to draw)", boxThumb(color.White))
	}
	if wroteRej {
		leg.Add("write rejected (fencing)", tickThumb(colWarn, 1.5))
	}
	if wroteUnk {
		leg.Add("write outcome unknown", tickThumb(colFaint, 1))
	}
	if paused {
		leg.Add("client paused (GC)", lineThumb(colPause, 2.5))
	}
	if crashed {
		leg.Add("client crashed", glyphThumb(colInk, draw.CrossGlyph{}, 3))
	}
	if overlap {
		leg.Add("VIOLATION: two holders", boxThumb(colViolation))
	}
	if other {
		leg.Add("VIOLATION (see list)", glyphThumb(colViolation, draw.TriangleGlyph{}, 3.5))
	}
	if harmless {
		leg.Add("finding, not fatal", glyphThumb(colWarn, draw.TriangleGlyph{}, 3.5))
	}
	fams := make([]string, 0, len(families))
	for f := range families {
		fams = append(fams, f)
	}
	slices.Sort(fams)
	for _, f := range fams {
		name := "fault: " + f
		if f == "clock" {
			name = "clock offset"
		}
		leg.Add(name, boxThumb(v.faultColour(f, 120)))
	}
	if v.healed && v.heal >= from && v.heal <= to {
		leg.Add("final heal", lineThumb(colInk, 1, 4, 3))
	}

	// Y axis: a label per row, thinned when rows are too thin for text.
	rowPt := vg.Length(math.Max(3, math.Min(14, 620/float64(max(n, 1)))))
	every := int(math.Ceil(9 / float64(rowPt)))
	var ticksY plot.ConstantTicks
	for i, r := range rows {
		lbl := r.Label
		if r.Kind == rowClient && every > 1 && (i-firstClient)%every != 0 {
			lbl = ""
		}
		ticksY = append(ticksY, plot.Tick{Value: yOf(i), Label: lbl})
	}
	p.Y.Tick.Marker = ticksY
	p.Y.Tick.Length = 0

	h := max(rowPt*vg.Length(n)+75, leg.height()+40, 200)
	area.W, area.H = figWidth, h
	fig := func(c draw.Canvas) {
		mainC := draw.Crop(c, 0, -legendWidth, 0, 0)
		p.Draw(mainC)
		dc := p.DataCanvas(mainC)
		area.Min, area.Max = dc.Min, dc.Max
		legC := draw.Crop(c, figWidth-legendWidth+12, 0, 0, -28)
		leg.Draw(legC)
	}
	return figWidth, h, fig, area
}

// run is a stretch of pixel columns with the same coverage.
type run struct {
	From, To float64
	Level    float64 // share of the time covered, rounded to eighths; > 0
}
