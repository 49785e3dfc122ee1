package reports

import (
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/lockharness/lockharness/checker"
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
	rowBins                      // how many violations each stretch of a crowded overview has
	rowNode                      // the grants of one lock node (Redlock)
)

type row struct {
	Kind  rowKind
	Label string
	Proc  int    // rowClient: the row's first process
	Procs []int  // rowClient: the row's processes, in order of start (a lane: packLanes)
	Node  string // rowClock
}

// plotArea records where the data were drawn, so tests can find a time and
// a row in the picture.
type plotArea struct {
	W, H               vg.Length // the whole figure
	Min, Max           vg.Point  // the data area, in points from the bottom left
	XMin, XMax         float64   // seconds
	YMin, YMax         float64
	ClientY            map[int]float64 // row of each client process (processes may share one: packLanes)
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
//
// The figure is drawn in layers, bottom to top: the fault bands, grid,
// fault lanes, clock rows, hold bars, client pauses and crashes; the
// accepted writes; the violations; the rarer write marks and the lines
// that mark the highlighted violation and the final heal.
func (v *runView) timeline(win window) (vg.Length, vg.Length, func(draw.Canvas), *plotArea) {
	d := v.newTimelineDraw(win)
	d.bands()
	d.lanes()
	d.clockRows()
	d.nodeGrants()
	d.bars()
	d.pausesAndCrashes()
	d.laneStarts()
	d.writeTicks()
	d.p.Add(d.base, d.under)
	d.violations()
	d.highlightAndHeal()
	d.p.Add(d.viols, d.top)
	d.legend()
	d.yAxis()
	return d.figure()
}

// timelineDraw is one timeline figure being drawn: its window and scale,
// which rows it has and where each lies, the plot and its layers of
// marks, and what was drawn, which the legend lists. The steps of
// runView.timeline share it instead of passing a dozen values around.
type timelineDraw struct {
	v          *runView
	win        window
	from, to   int64   // the window, never empty
	xmin, xmax float64 // the window in seconds
	dataW      float64 // width of the data area in points, roughly: the y tick labels take the rest
	res        float64 // seconds per pixel column
	mk         *marks  // the window's holds and write marks

	procs  []int               // the clients that get a row
	packed [][]int             // procs packed in rows (packLanes)
	loose  []checker.Violation // violations that name no process: a row of their own
	faults []Fault             // the faults that overlap the window
	placed []placedFault       // the faults drawn in a fault lane, with their lane
	layout rowLayout

	area *plotArea
	p    *plot.Plot
	// The layers, in the order they are drawn.
	base  *shapes // fault bands, grid, lanes, clock rows, hold bars, pauses, crashes
	under *shapes // accepted writes: under the violations
	viols *shapes // violations, on top of holds and writes, never merged
	top   *shapes // drawn last: rare marks stay visible on top of red

	// crowded is an overview with more violations than can be told apart:
	// they are drawn thin, and counted per stretch of time in a row of
	// their own (bins).
	crowded  bool
	bins     []int
	dense    bool            // too many accepted writes to draw: left out
	families map[string]bool // fault families shaded
	drawn    drawnMarks
	leg      *legend
}

// drawnMarks says which kinds of marks a timeline drew, for its legend.
type drawnMarks struct {
	expired, paused, crashed         bool
	wroteOK, wroteRejected, wroteUnk bool
	overlap, otherFatal, harmless    bool
	staleFatal, staleHarmless        bool
	binned, grants                   bool
	sharedRows                       bool // a row several processes share (packLanes)
}

// placedFault is a fault drawn as a labelled bar in a fault lane.
type placedFault struct {
	f    Fault
	lane int
}

// rowLayout is the timeline's rows, top to bottom, and the y of each kind.
type rowLayout struct {
	rows        []row
	firstClient int // index of the first client row; len(rows) when there is none
	clientY     map[int]float64
	laneY       map[int]float64
	clockY      map[string]float64
	nodeY       map[string]float64 // the row of each lock node's grants
}

// addNodeRows adds a row per lock node, for the grants each made,
// between the rows above the clients and the clients.
func (l *rowLayout) addNodeRows(nodes []string) {
	if len(nodes) == 0 {
		return
	}
	var rows []row
	for _, n := range nodes {
		rows = append(rows, row{Kind: rowNode, Label: n + " granted", Node: n})
	}
	l.rows = slices.Concat(l.rows[:l.firstClient], rows, l.rows[l.firstClient:])
	l.firstClient += len(rows)
	l.nodeY = map[string]float64{}
	for i, r := range l.rows {
		switch r.Kind {
		case rowClient:
			for _, p := range r.Procs {
				l.clientY[p] = l.y(i)
			}
		case rowNode:
			l.nodeY[r.Node] = l.y(i)
		}
	}
	for lane := range l.laneY {
		l.laneY[lane] += float64(len(rows))
	}
	for n := range l.clockY {
		l.clockY[n] += float64(len(rows))
	}
}

// rowOf is the index of the first row of kind k, 0 when there is none.
func (l *rowLayout) rowOf(k rowKind) int {
	for i, r := range l.rows {
		if r.Kind == k {
			return i
		}
	}
	return 0
}

// y is the data y of row i: row 0 is at the top.
func (l *rowLayout) y(i int) float64 { return float64(len(l.rows) - 1 - i) }

// newTimelineDraw lays out the timeline of win: its scale, and which
// processes, faults and violations get a row or a lane.
func (v *runView) newTimelineDraw(win window) *timelineDraw {
	d := &timelineDraw{v: v, win: win, from: win.From, to: max(win.To, win.From+1)}
	d.xmin, d.xmax = seconds(d.from), seconds(d.to)
	plotW := figWidth - legendWidth
	d.dataW = float64(plotW - 70)
	d.res = (d.xmax - d.xmin) / (d.dataW * DPI / 72)
	d.mk = v.marksOf(win)
	d.procs = d.rowProcesses()
	for _, vi := range v.res.Violations {
		if len(vi.Processes) == 0 && d.in(vi.Start, max(vi.End, vi.Start)) {
			d.loose = append(d.loose, vi)
		}
	}
	var clockNodes []string
	d.faults, clockNodes = d.windowFaults()
	lanes := d.placeFaults()
	d.crowded = !win.Zoom && d.countViolations() > crowdedViolations
	d.packed = v.lanesOf(d.procs)
	d.layout = layoutRows(len(d.loose) > 0, d.crowded, clockNodes, lanes, d.packed)
	d.layout.addNodeRows(v.grantNodes())
	for i, r := range d.layout.rows {
		if r.Kind == rowClient {
			d.layout.rows[i].Label = laneLabel(v.rowName(r.Proc), len(r.Procs))
		}
	}

	n := len(d.layout.rows)
	d.area = &plotArea{XMin: d.xmin, XMax: d.xmax, YMin: -0.5, YMax: float64(n) - 0.5, ClientY: d.layout.clientY, Rows: d.layout.rows}
	d.p = basePlot(win.Title)
	d.p.X.Min, d.p.X.Max = d.xmin, d.xmax
	d.p.Y.Min, d.p.Y.Max = d.area.YMin, d.area.YMax
	d.p.X.Padding, d.p.Y.Padding = 0, 0
	d.base, d.under, d.viols, d.top = &shapes{}, &shapes{}, &shapes{}, &shapes{}
	d.families = map[string]bool{}
	return d
}

// crowdedViolations is how many violations naming a client an overview
// draws in full; past it they would paint the rows red.
const crowdedViolations = 40

// countViolations is how many violations naming a client the window has.
func (d *timelineDraw) countViolations() int {
	n := 0
	for _, vi := range d.v.res.Violations {
		if len(vi.Processes) > 0 && d.in(vi.Start, max(vi.End, vi.Start)) {
			n++
		}
	}
	return n
}

// in reports whether [a, b] overlaps the window.
func (d *timelineDraw) in(a, b int64) bool { return b >= d.from && a <= d.to }

// rowProcesses are the clients that get a row: every client in the
// overview; in a close-up only those seen in the window (holding, writing,
// or named by the violation it shows).
func (d *timelineDraw) rowProcesses() []int {
	if !d.win.Zoom {
		return d.v.procs
	}
	seen := map[int]bool{}
	for p := range d.mk.holds.holders {
		seen[p] = true
	}
	for p := range d.mk.procs {
		seen[p] = true
	}
	if d.win.Highlight != nil {
		for _, p := range d.win.Highlight.Processes {
			seen[p] = true
		}
	}
	var procs []int
	for _, p := range d.v.procs {
		if seen[p] {
			procs = append(procs, p)
		}
	}
	return procs
}

// windowFaults are the faults that overlap the window, and the nodes
// whose clock one of them moved, sorted: each gets a clock row.
func (d *timelineDraw) windowFaults() ([]Fault, []string) {
	var faults []Fault
	var clockNodes []string
	for _, f := range d.v.faults {
		if !d.in(f.Start, f.End) {
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
	return faults, clockNodes
}

// placeFaults puts every fault but a clock fault with targets (drawn in
// its nodes' clock rows) in a fault lane, greedily: a label needs room
// after its bar's start, and past maxFaultLane lanes a fault shares the
// lane that frees first. It returns how many lanes there are.
func (d *timelineDraw) placeFaults() int {
	labelSty := textStyle(8, colInk)
	perPt := (d.xmax - d.xmin) / d.dataW
	var lanes []float64 // right edge in use, seconds
	for _, f := range d.faults {
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
		d.placed = append(d.placed, placedFault{f, lane})
	}
	return len(lanes)
}

// laneLabel is the label of a row of n processes, the first named name:
// the name alone for one, else the name and how many follow it in the
// row ("client 3 +36").
func laneLabel(name string, n int) string {
	if n <= 1 {
		return name
	}
	return fmt.Sprintf("%s +%d", name, n-1)
}

// layoutRows lays out the rows, top to bottom: the count of violations
// of a crowded overview (binRow), the violations that name no process
// (if any), a clock row per node, the fault lanes, a row per lane of
// clients (procs, packLanes).
func layoutRows(looseRow, binRow bool, clockNodes []string, lanes int, procs [][]int) rowLayout {
	var rows []row
	if binRow {
		rows = append(rows, row{Kind: rowBins, Label: "violations"})
	}
	if looseRow {
		rows = append(rows, row{Kind: rowViolations, Label: "violations"})
	}
	for _, n := range clockNodes {
		rows = append(rows, row{Kind: rowClock, Label: "clock " + n, Node: n})
	}
	for i := 0; i < lanes; i++ {
		label := ""
		if i == 0 {
			label = "faults"
		}
		rows = append(rows, row{Kind: rowFault, Label: label})
	}
	for _, ps := range procs {
		rows = append(rows, row{Kind: rowClient, Label: laneLabel(clientName(ps[0]), len(ps)), Proc: ps[0], Procs: ps})
	}
	l := rowLayout{rows: rows, firstClient: len(rows), clientY: map[int]float64{}, laneY: map[int]float64{}, clockY: map[string]float64{}}
	lane := 0
	for i, r := range rows {
		switch r.Kind {
		case rowClient:
			for _, p := range r.Procs {
				l.clientY[p] = l.y(i)
			}
			l.firstClient = min(l.firstClient, i)
		case rowFault:
			l.laneY[lane] = l.y(i)
			lane++
		case rowClock:
			l.clockY[r.Node] = l.y(i)
		}
	}
	return l
}

// yAxis labels each row, thinned when rows are too thin for text: then
// every few client rows are named, the first always.
func (d *timelineDraw) yAxis() {
	every := int(math.Ceil(9 / float64(d.rowHeight())))
	var ticksY plot.ConstantTicks
	for i, r := range d.layout.rows {
		lbl := r.Label
		if r.Kind == rowClient && every > 1 && (i-d.layout.firstClient)%every != 0 {
			lbl = ""
		}
		ticksY = append(ticksY, plot.Tick{Value: d.layout.y(i), Label: lbl})
	}
	d.p.Y.Tick.Marker = ticksY
	d.p.Y.Tick.Length = 0
}

// maxRowsHeight bounds the height of the rows together: past it (a run of
// thousands of client processes, a new one after each client crash) rows
// grow thinner than 3 points, so that the figure, and the picture drawn
// of it, stay bounded.
const maxRowsHeight = 3000

// rowHeight is the height of a row: the figure grows with its rows up to a
// point, then the rows grow thinner.
func (d *timelineDraw) rowHeight() vg.Length {
	n := float64(max(len(d.layout.rows), 1))
	return vg.Length(math.Min(math.Max(3, math.Min(14, 620/n)), maxRowsHeight/n))
}

// figure sizes the figure to its rows and legend and returns the function
// that draws it, which records where the data went (plotArea).
func (d *timelineDraw) figure() (vg.Length, vg.Length, func(draw.Canvas), *plotArea) {
	h := max(d.rowHeight()*vg.Length(len(d.layout.rows))+75, d.leg.height()+40, 200)
	area, p, leg := d.area, d.p, d.leg
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
