package reports

import (
	"image/color"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// A story is drawn as a sequence diagram: one horizontal lane per client,
// the lock service and the storage (Kleppmann's order: the first client,
// the lock, the others, the storage); its steps in order from left to
// right, one column per instant, not to scale (a grant and a write a
// millisecond apart would otherwise share a pixel), with each column's
// time under it.

var (
	colLease = color.NRGBA{R: 31, G: 119, B: 180, A: 90}
	colStory = color.NRGBA{R: 148, G: 103, B: 189, A: 55} // a fault on the lock
)

// storyColumns are the distinct times of the story's steps and of the
// ends of its spans, in order: each is a column.
func storyColumns(s Story) []int64 {
	var ts []int64
	for _, st := range s.Steps {
		ts = append(ts, st.At, st.End)
	}
	slices.Sort(ts)
	return slices.Compact(ts)
}

// storyRows places each lane on a row: the first client on top, then the
// lock, the other clients and the storage.
func storyRows(s Story) []int {
	rows := make([]int, len(s.Lanes))
	var order []int
	first := -1
	for i, l := range s.Lanes {
		if l.Kind == laneClient && first < 0 {
			first = i
		}
	}
	if first >= 0 {
		order = append(order, first)
	}
	for _, kind := range []string{laneLock, laneClient, laneStorage} {
		for i, l := range s.Lanes {
			if l.Kind == kind && i != first {
				order = append(order, i)
			}
		}
	}
	for r, i := range order {
		rows[i] = r
	}
	return rows
}

// drawStory is the figure of a story: its size in points and the
// function that draws it.
func drawStory(s Story) (vg.Length, vg.Length, func(draw.Canvas)) {
	cols := storyColumns(s)
	w := vg.Length(min(1800, max(760, 170+96*len(cols))))
	h := vg.Length(80 + 86*len(s.Lanes))
	p := plot.New()
	p.Title.Text = s.Title
	restyle(&p.Title.TextStyle, 13)
	p.Title.Padding = 8
	p.HideAxes()
	p.BackgroundColor = nil
	p.Add(&storyPlotter{s: s, cols: cols, rows: storyRows(s)})
	return w, h, p.Draw
}

// storyPlotter draws a story on the data canvas of a plot whose axes are
// hidden: it lays out lanes and columns itself.
type storyPlotter struct {
	s    Story
	cols []int64
	rows []int

	c          draw.Canvas
	left, colW vg.Length
	top, rowH  vg.Length
}

const (
	storyNames = 150 // width of the lane names, points
	storyAxis  = 44  // height of the time axis
)

func (sp *storyPlotter) x(t int64) vg.Length {
	i, _ := slices.BinarySearch(sp.cols, t)
	return sp.left + (vg.Length(i)+0.5)*sp.colW
}

func (sp *storyPlotter) y(lane int) vg.Length {
	return sp.top - (vg.Length(sp.rows[lane])+0.5)*sp.rowH
}

// Plot implements plot.Plotter.
func (sp *storyPlotter) Plot(c draw.Canvas, _ *plot.Plot) {
	sp.c = c
	sp.left = c.Min.X + storyNames
	sp.colW = (c.Max.X - 12 - sp.left) / vg.Length(max(1, len(sp.cols)))
	sp.top = c.Max.Y - 6
	sp.rowH = (sp.top - c.Min.Y - storyAxis) / vg.Length(max(1, len(sp.s.Lanes)))
	sp.spans()
	sp.lanes()
	sp.timeAxis()
	for i, st := range sp.s.Steps {
		sp.step(i, st)
	}
}

// lanes draws each lane's line and name.
func (sp *storyPlotter) lanes() {
	for i, l := range sp.s.Lanes {
		y := sp.y(i)
		width := vg.Length(1.2)
		if l.Kind == laneLock || l.Kind == laneStorage {
			width = 2
		}
		sp.c.StrokeLine2(draw.LineStyle{Color: colInk, Width: width}, sp.left-6, y, sp.c.Max.X-6, y)
		sty := textStyle(11, colInk)
		sty.YAlign = draw.YCenter
		// "lock service (redlock on n1, …)" on two lines: the name, then
		// what it is.
		name, more, two := strings.Cut(l.Name, " (")
		if !two {
			sp.c.FillText(sty, vg.Point{X: sp.c.Min.X + 4, Y: y}, fitText(sty, name, storyNames-12))
			continue
		}
		sp.c.FillText(sty, vg.Point{X: sp.c.Min.X + 4, Y: y + 7}, fitText(sty, name, storyNames-12))
		small := textStyle(8.5, colInk)
		small.YAlign = draw.YCenter
		sp.c.FillText(small, vg.Point{X: sp.c.Min.X + 4, Y: y - 7}, fitText(small, "("+more, storyNames-12))
	}
}

// spans draws the faults on the lock, the leases and the pauses, under
// the arrows.
func (sp *storyPlotter) spans() {
	faults := 0
	for _, st := range sp.s.Steps {
		x0, x1, y := sp.x(st.At), sp.x(st.End), sp.y(st.Lane)
		switch st.Kind {
		case stepFault:
			x0, x1 = x0-sp.colW/2, x1+sp.colW/2
			fillRect(&sp.c, colStory, x0, x1, y-sp.rowH/2+2, y+sp.rowH/2-2)
			// Each fault's words on a line of their own, from the top.
			sp.label(x0+3, y+sp.rowH/2-10-vg.Length(11*faults), st.Label, 8.5, colInk, draw.XLeft)
			faults++
		case stepLease:
			fillRect(&sp.c, colLease, x0, x1, y-6, y+6)
		case stepPause:
			fillRect(&sp.c, colPause, x0, max(x1, x0+3), y-4, y+4)
			sp.label((x0+x1)/2, y-17, st.Label+" (GC)", 9, colPause, draw.XCenter)
		}
	}
}

// step draws one instant of the story: an arrow between its lanes with
// its words, a lease's end, a crash.
func (sp *storyPlotter) step(i int, st StoryStep) {
	x, y := sp.x(st.At), sp.y(st.Lane)
	col := colInk
	if st.Bad {
		col = colViolation
	}
	lockY := sp.y(0)
	dx := sp.colW * 0.3
	lift := vg.Length(12 + 11*(i%2)) // alternate heights, so that neighbours' words do not collide
	switch st.Kind {
	case stepGrant, stepRefused:
		sp.arrow(x-dx, lockY, x, y, col, st.Kind == stepRefused)
		sp.label(x, y+lift, st.Label, 9, col, draw.XCenter)
	case stepRelease, stepRenew:
		sp.arrow(x, y, x+dx, lockY, col, false)
		sp.label(x, y+lift, st.Label, 9, col, draw.XCenter)
	case stepWrite, stepRead:
		sy := sp.y(sp.storage())
		if st.Kind == stepWrite {
			sp.arrow(x, y, x+dx, sy, col, st.Outcome == outUnknown)
			sp.answer(x+dx, sy, st)
		} else {
			sp.arrow(x-dx, sy, x, y, col, false)
		}
		sp.label(x, y+lift, st.Label, 9, col, draw.XCenter)
	case stepExpiry:
		fy := sp.y(st.For)
		sp.c.StrokeLine2(draw.LineStyle{Color: colViolation, Width: 1, Dashes: []vg.Length{3, 2}}, x, lockY, x, fy)
		sp.c.DrawGlyphNoClip(draw.GlyphStyle{Color: colViolation, Radius: 4, Shape: draw.CrossGlyph{}}, vg.Point{X: x, Y: fy})
		sp.label(x, lockY+lift, st.Label, 9, colViolation, draw.XCenter)
	case stepCrash:
		sp.c.DrawGlyphNoClip(draw.GlyphStyle{Color: colInk, Radius: 6, Shape: draw.CrossGlyph{}}, vg.Point{X: x, Y: y})
		sp.label(x, y+lift, st.Label, 9, colInk, draw.XCenter)
	}
}

// storage is the storage's lane (0, the lock's, when there is none).
func (sp *storyPlotter) storage() int {
	for i, l := range sp.s.Lanes {
		if l.Kind == laneStorage {
			return i
		}
	}
	return 0
}

// answer writes the storage's answer to a write below its lane: red when
// it is the violation, orange when refused.
func (sp *storyPlotter) answer(x, y vg.Length, st StoryStep) {
	col := colOK
	switch {
	case st.Bad:
		col = colViolation
	case st.Outcome == outRejected:
		col = colWarn
	case st.Outcome != outAccepted:
		col = colInfo
	}
	sp.c.DrawGlyphNoClip(draw.GlyphStyle{Color: col, Radius: 3.5, Shape: draw.CircleGlyph{}}, vg.Point{X: x, Y: y})
	sp.label(x, y-16, st.Answer, 9, col, draw.XCenter)
}

// arrow strokes a line from (x0, y0) to (x1, y1) with a head at its end.
func (sp *storyPlotter) arrow(x0, y0, x1, y1 vg.Length, col color.Color, dashed bool) {
	ls := draw.LineStyle{Color: col, Width: 1.4}
	if dashed {
		ls.Dashes = []vg.Length{4, 3}
	}
	sp.c.StrokeLine2(ls, x0, y0, x1, y1)
	a := math.Atan2(float64(y1-y0), float64(x1-x0))
	const head = 7
	for _, d := range []float64{math.Pi * 0.85, -math.Pi * 0.85} {
		hx, hy := x1+vg.Length(head*math.Cos(a+d)), y1+vg.Length(head*math.Sin(a+d))
		sp.c.StrokeLine2(draw.LineStyle{Color: col, Width: 1.4}, x1, y1, hx, hy)
	}
}

// label writes txt at (x, y), aligned as xa, within the figure.
func (sp *storyPlotter) label(x, y vg.Length, txt string, size vg.Length, col color.Color, xa draw.XAlignment) {
	if txt == "" {
		return
	}
	sty := textStyle(size, col)
	sty.XAlign, sty.YAlign = xa, draw.YCenter
	wd := sty.Width(txt)
	switch xa {
	case draw.XCenter:
		x = min(max(x, sp.left+wd/2), sp.c.Max.X-wd/2)
	case draw.XLeft:
		x = min(x, sp.c.Max.X-wd)
	}
	sp.c.FillText(sty, vg.Point{X: x, Y: y}, txt)
}

// timeAxis writes each column's time under it, on two alternating lines,
// and says the steps are in order, not to scale.
func (sp *storyPlotter) timeAxis() {
	y := sp.c.Min.Y + storyAxis - 6
	sp.c.StrokeLine2(draw.LineStyle{Color: colFaint, Width: 0.8}, sp.left, y, sp.c.Max.X-6, y)
	prev := ""
	for i, t := range sp.cols {
		x := sp.x(t)
		sp.c.StrokeLine2(draw.LineStyle{Color: colGrid, Width: 0.5}, x, y, x, sp.top)
		// Columns a fraction of a millisecond apart read the same: once.
		if s := strconv.FormatFloat(seconds(t), 'f', 3, 64); s != prev {
			sp.label(x, y-9-vg.Length(9*(i%2)), s, 7.5, colFaint, draw.XCenter)
			prev = s
		}
	}
	sty := textStyle(8.5, colFaint)
	sty.YAlign = draw.YCenter
	sp.c.FillText(sty, vg.Point{X: sp.c.Min.X + 4, Y: y - 13}, "time (s): in order,")
	sp.c.FillText(sty, vg.Point{X: sp.c.Min.X + 4, Y: y - 24}, "not to scale")
}
