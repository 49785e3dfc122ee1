package reports

import (
	"image/color"
	"math"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/lockharness/lockharness/history"
)

// outcomes in the order they are drawn and listed.
var outcomes = []struct {
	T    history.Type
	Name string
	Col  color.NRGBA
}{
	{history.OK, "ok", colOK},
	{history.Fail, "fail", colFail},
	{history.Info, "info (unknown)", colInfo},
}

// latencyGlyph is the radius of a point of the latency plot.
const latencyGlyph = 1.3

// maxDrawn is how many points the latency plot draws at most.
const maxDrawn = 5000

// bucketWidth is the width of a rate or quantile bucket: one second, or
// wider on long runs so that a plot has at most about 600 of them.
func bucketWidth(end int64) int64 {
	const sec = int64(1e9)
	return max(sec, (end/600+sec-1)/sec*sec)
}

// shadeFaults shades every fault window across a plot.
func (v *runView) shadeFaults(s *shapes) map[string]bool {
	fams := map[string]bool{}
	for _, f := range v.faults {
		s.shade(seconds(f.Start), seconds(f.End), v.faultColour(f.Family, 38))
		fams[f.Family] = true
	}
	if v.healed {
		s.vline(seconds(v.heal), 0, 0, colInk, 1, 4, 3)
	}
	return fams
}

func (v *runView) faultLegend(leg *legend, fams map[string]bool) {
	names := make([]string, 0, len(fams))
	for f := range fams {
		names = append(names, f)
	}
	slices.Sort(names)
	for _, f := range names {
		leg.Add("fault: "+f, boxThumb(v.faultColour(f, 120)))
	}
	if v.healed {
		leg.Add("final heal", lineThumb(colInk, 1, 4, 3))
	}
}

// latency draws every acquire's latency over time on a log scale, coloured
// by outcome, over the fault windows (Jepsen's latency-raw), and below it
// the latency quantiles of successful acquires per second.
func (v *runView) latency() (vg.Length, vg.Length, func(draw.Canvas)) {
	const w, h = figWidth, 520
	xmax := math.Max(seconds(v.end), 1e-3)
	ymin, ymax := latencyRange(v.dig.lat)
	leg := newLegend()
	top, fams := v.latencyScatter(xmax, ymin, ymax, leg)
	bot := v.latencyQuantiles(xmax, ymin, ymax, leg)
	v.faultLegend(leg, fams)
	fig := func(c draw.Canvas) {
		main := draw.Crop(c, 0, -legendWidth, 0, 0)
		cs := []draw.Canvas{draw.Crop(main, 0, 0, 200, 0), draw.Crop(main, 0, 0, 0, -(h - 200))}
		alignX([]*plot.Plot{top, bot}, cs)
		top.Draw(cs[0])
		bot.Draw(cs[1])
		leg.Draw(draw.Crop(c, figWidth-legendWidth+12, 0, 0, -28))
	}
	return w, h, fig
}

// latencyRange is the latency axis: whole decades around every acquire's
// latency (0.1 ms to 1 s when there is none), one decade at least.
func latencyRange(ld *latencyDigest) (ymin, ymax float64) {
	lo, hi := ld.lo, ld.hi
	if ld.n == 0 {
		lo, hi = 0.1, 1000
	}
	ymin = math.Pow(10, math.Floor(math.Log10(lo)))
	ymax = math.Pow(10, math.Ceil(math.Log10(hi)))
	if ymax <= ymin {
		ymax = ymin * 10
	}
	return ymin, ymax
}

// logTimePlot is a plot of latencies (ms, on a log scale from ymin to
// ymax) over the run's time (0 to xmax s).
func logTimePlot(title string, xmax, ymin, ymax float64, label string) *plot.Plot {
	p := basePlot(title)
	p.X.Min, p.X.Max = 0, xmax
	p.Y.Min, p.Y.Max = ymin, ymax
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = logTicker{}
	p.Y.Label.Text = label
	return p
}

// faultBackdrop shades the fault windows and draws the time grid on p,
// under what is added after, and returns the fault families shaded.
func (v *runView) faultBackdrop(p *plot.Plot) map[string]bool {
	s := &shapes{}
	fams := v.shadeFaults(s)
	timeGrid(s, p)
	p.Add(s)
	return fams
}

// latencyScatter is the upper latency plot: a point per acquire (merged,
// see latencyPoints) coloured by outcome, with its legend entries; and
// the fault families it shades.
func (v *runView) latencyScatter(xmax, ymin, ymax float64, leg *legend) (*plot.Plot, map[string]bool) {
	top := logTimePlot(v.title("acquire latency"), xmax, ymin, ymax, "latency (ms)")
	fams := v.faultBackdrop(top)
	pts := latencyPoints(v.dig.lat, xmax, ymin, ymax)
	for _, o := range outcomes {
		if len(pts[o.T]) > 0 {
			leg.Add("acquire "+o.Name, glyphThumb(o.Col, draw.CircleGlyph{}, 2.5))
		}
	}
	// Failures first: under contention they are most of the points, and
	// the successes and unknowns matter more.
	for _, t := range []history.Type{history.Fail, history.OK, history.Info} {
		if len(pts[t]) == 0 {
			continue
		}
		sc, err := plotter.NewScatter(pts[t])
		if err != nil {
			continue
		}
		col := colOK
		for _, o := range outcomes {
			if o.T == t {
				col = o.Col
			}
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: col, Radius: latencyGlyph, Shape: draw.CircleGlyph{}}
		top.Add(&boxedScatter{Scatter: sc})
	}
	return top, fams
}

// latencyPoints are the latency plot's points by outcome. Points closer
// than a glyph are one point: they are deduplicated on a grid of
// glyph-sized cells. The figure (the SVG above all, which keeps every
// point) is then bounded by its area, not by the number of acquires: a
// million acquires draw no more points than a few thousand that fill the
// same cells. A crowded plot (a long run's) merges cells two by two until
// at most maxDrawn points are left: it shows where the latencies lie, and
// its SVG stays small.
func latencyPoints(ld *latencyDigest, xmax, ymin, ymax float64) map[history.Type]plotter.XYs {
	cols, rowsPx := float64(figWidth-legendWidth)/(2*latencyGlyph), 300.0/(2*latencyGlyph)
	pts := map[history.Type]plotter.XYs{}
	// Each point's place on the finest grid, computed once for every grid
	// tried: its cell on a grid f times coarser is this divided by f.
	type placed struct {
		p    latPoint
		x, y float64
	}
	sorted := make([][]placed, len(outcomes)) // sorted once, for every grid tried
	for o := range outcomes {
		for _, p := range ld.sortedPoints(o) {
			sorted[o] = append(sorted[o], placed{p, p.X / xmax * cols, math.Log(p.Y/ymin) / math.Log(ymax/ymin) * rowsPx})
		}
	}
	var seen cellSet
	for f := 1.0; ; f *= 2 {
		clear(pts)
		n := 0
		for o, out := range outcomes {
			seen.reset(int(cols/f)+2, int(rowsPx/f)+2)
			for _, q := range sorted[o] {
				if !seen.add(int(q.x/f), int(q.y/f)) {
					continue
				}
				pts[out.T] = append(pts[out.T], plotter.XY{X: q.p.X, Y: q.p.Y})
				n++
			}
		}
		if n <= maxDrawn || f >= 8 {
			return pts
		}
	}
}

// cellSet is a set of the cells of a grid, w × h, a bit each: the latency
// points are deduplicated on a grid of glyphs, a few hundred cells a
// side, tens of thousands of points up to four times over, and a map of
// cells cost more than the points' sort. A cell off the grid (a point
// past the end of the run or below the axis) goes to a map.
type cellSet struct {
	w, h int
	bits []uint64
	more map[[2]int]bool
}

// reset empties the set, for a grid of w × h.
func (s *cellSet) reset(w, h int) {
	s.w, s.h = w, h
	n := (w*h + 63) / 64
	if cap(s.bits) < n {
		s.bits = make([]uint64, n)
	}
	s.bits = s.bits[:n]
	clear(s.bits)
	clear(s.more)
}

// add puts cell (x, y) in the set and reports whether it was not there.
func (s *cellSet) add(x, y int) bool {
	if x < 0 || y < 0 || x >= s.w || y >= s.h {
		if s.more == nil {
			s.more = map[[2]int]bool{}
		}
		k := [2]int{x, y}
		had := s.more[k]
		s.more[k] = true
		return !had
	}
	i := y*s.w + x
	w, m := i>>6, uint64(1)<<(i&63)
	had := s.bits[w]&m != 0
	s.bits[w] |= m
	return !had
}

// boxedScatter is a scatter whose glyph boxes (plot.GlyphBoxer) are
// those of its points that can stand at an edge of the plot, worked out
// once per plot: the plot pads its data area so that the glyphs at the
// edges fit (the left-most, right-most, top-most and bottom-most box
// within the axes, the first of equals), and asks for the boxes of every
// plotter each time it lays itself out, six times a latency figure,
// which normalized 5,000 points through a logarithm each time. The
// boxes kept are, in their order, those within 10^-9 of an extreme on
// either axis, which the data area, hundreds of points wide, places
// apart from the others: the plot pads itself as for all of them.
type boxedScatter struct {
	*plotter.Scatter
	plot  *plot.Plot
	axes  [4]float64 // the plot's ranges the boxes were worked out for
	boxes []plot.GlyphBox
}

// GlyphBoxes implements plot.GlyphBoxer.
func (s *boxedScatter) GlyphBoxes(p *plot.Plot) []plot.GlyphBox {
	axes := [4]float64{p.X.Min, p.X.Max, p.Y.Min, p.Y.Max}
	if s.plot == p && s.axes == axes {
		return s.boxes
	}
	all := s.Scatter.GlyphBoxes(p)
	lo, hi := [2]float64{math.Inf(1), math.Inf(1)}, [2]float64{math.Inf(-1), math.Inf(-1)}
	for _, b := range all {
		for i, v := range [2]float64{b.X, b.Y} {
			if v >= 0 {
				lo[i] = math.Min(lo[i], v)
			}
			if v <= 1 {
				hi[i] = math.Max(hi[i], v)
			}
		}
	}
	const near = 1e-9
	s.boxes = s.boxes[:0]
	for _, b := range all {
		if math.Abs(b.X-lo[0]) <= near || math.Abs(b.X-hi[0]) <= near || math.Abs(b.Y-lo[1]) <= near || math.Abs(b.Y-hi[1]) <= near {
			s.boxes = append(s.boxes, b)
		}
	}
	s.plot, s.axes = p, axes
	return s.boxes
}

// latencyQuantileLines are the quantiles the lower latency plot draws.
var latencyQuantileLines = []struct {
	q    float64
	name string
	col  color.NRGBA
	dash []vg.Length
}{
	{0.5, "median", color.NRGBA{R: 31, G: 119, B: 180, A: 255}, nil},
	{0.95, "p95", color.NRGBA{R: 23, G: 190, B: 207, A: 255}, nil},
	{0.99, "p99", color.NRGBA{R: 148, G: 103, B: 189, A: 255}, nil},
	{1, "max", colInk, []vg.Length{3, 2}},
}

// latencyQuantiles is the lower latency plot: the quantiles of successful
// acquires per bucket (see bucketWidth), from the buckets' histograms,
// with their legend entries.
func (v *runView) latencyQuantiles(xmax, ymin, ymax float64, leg *legend) *plot.Plot {
	ld := v.dig.lat
	bw := ld.plotWidth(v.end)
	buckets := ld.plotBuckets(bw)
	label := "ok acquire latency (ms)"
	if bw > 1e9 {
		label = "ok acquire latency (ms), per " + per(bw)
	}
	bot := logTimePlot("", xmax, ymin, ymax, label)
	v.faultBackdrop(bot)
	var keys []int64
	for k, b := range buckets {
		if b != nil && b.acqOKInvoked() > 0 {
			keys = append(keys, int64(k))
		}
	}
	for _, q := range latencyQuantileLines {
		for _, line := range quantileLines(buckets, keys, bw, q.q) {
			if l, err := plotter.NewLine(line); err == nil {
				l.LineStyle = draw.LineStyle{Color: q.col, Width: 1.2, Dashes: q.dash}
				bot.Add(l)
			}
		}
		if len(keys) > 0 {
			leg.Add(q.name+" per "+per(bw), lineThumb(q.col, 1.2, q.dash...))
		}
	}
	return bot
}

// quantileLines are quantile q of the buckets with keys (ascending) as
// lines, one per run of consecutive buckets: no line is drawn across a
// stretch with no successful acquire.
func quantileLines(buckets []*latBucket, keys []int64, bw int64, q float64) []plotter.XYs {
	var lines []plotter.XYs
	var line plotter.XYs
	for i, k := range keys {
		if i > 0 && k != keys[i-1]+1 {
			lines, line = append(lines, line), nil
		}
		b := buckets[k]
		line = append(line, plotter.XY{X: seconds(k*bw + bw/2), Y: histQuantile(&b.hist[0], b.max[0], q)})
	}
	if len(line) > 0 {
		lines = append(lines, line)
	}
	return lines
}

// rate draws completed operations per second over time, by outcome.
func (v *runView) rate() (vg.Length, vg.Length, func(draw.Canvas)) {
	const w, h = figWidth, 300
	bw := v.dig.lat.plotWidth(v.end)
	counts, acqOK := v.rates(bw)
	p := basePlot(v.title("operations per second"))
	p.X.Min, p.X.Max = 0, math.Max(seconds(v.end), 1e-3)
	p.Y.Min = 0
	p.Y.Label.Text = "completions / s"
	if bw > 1e9 {
		p.Y.Label.Text += " (per " + per(bw) + ")"
	}
	s := &shapes{}
	fams := v.shadeFaults(s)
	p.Add(s)
	leg := newLegend()
	var ymax float64
	for _, o := range outcomes {
		ymax = math.Max(ymax, addRateLine(p, leg, counts[o.T], bw, o.Name, o.Col, nil))
	}
	ymax = math.Max(ymax, addRateLine(p, leg, acqOK, bw, "acquire ok", colInk, []vg.Length{3, 2}))
	p.Y.Max = math.Max(ymax*1.08, 1)
	// The grid goes under the lines, but is laid out after them: adding a
	// line widens the x axis to its last bucket's middle.
	timeGrid(s, p)
	v.faultLegend(leg, fams)
	fig := func(c draw.Canvas) {
		p.Draw(draw.Crop(c, 0, -legendWidth, 0, 0))
		leg.Draw(draw.Crop(c, figWidth-legendWidth+12, 0, 0, -28))
	}
	return w, h, fig
}

// rates are the completions per second of each outcome, and of
// successful acquires, per bucket of width bw. The last bucket is cut
// short by the end of the run: its rate is over what it covers.
func (v *runView) rates(bw int64) (map[history.Type][]float64, []float64) {
	n := int(v.end/bw) + 1
	perSec := float64(1e9) / float64(bw)
	counts := map[history.Type][]float64{}
	acqOK := make([]float64, n)
	for _, o := range outcomes {
		counts[o.T] = make([]float64, n)
	}
	for b, lb := range v.dig.lat.plotBuckets(bw) {
		if lb == nil || b >= n {
			continue
		}
		for o, out := range outcomes {
			counts[out.T][b] = lb.done[o] * perSec
		}
		acqOK[b] = lb.acqOK * perSec
	}
	if covered := v.end - int64(n-1)*bw; covered > 0 && covered < bw {
		f := float64(bw) / float64(covered)
		for _, cs := range counts {
			cs[n-1] *= f
		}
		acqOK[n-1] *= f
	}
	return counts, acqOK
}

// addRateLine adds a line of vals, one per bucket of width bw, to p and
// to its legend, and returns the largest of vals.
func addRateLine(p *plot.Plot, leg *legend, vals []float64, bw int64, name string, col color.Color, dash []vg.Length) float64 {
	var ymax float64
	var xy plotter.XYs
	for i, y := range vals {
		xy = append(xy, plotter.XY{X: seconds(int64(i)*bw + bw/2), Y: y})
		ymax = math.Max(ymax, y)
	}
	l, err := plotter.NewLine(xy)
	if err != nil {
		return ymax
	}
	l.LineStyle = draw.LineStyle{Color: col, Width: 1.2, Dashes: dash}
	p.Add(l)
	leg.Add(name, lineThumb(col, 1.2, dash...))
	return ymax
}

// title is a plot title with the run's lock and verdict.
func (v *runView) title(what string) string {
	t := what + " — lock " + orSome(v.meta.Lock, "?")
	if v.meta.Scenario != "" {
		t += ", scenario " + v.meta.Scenario
	}
	return t + " — " + verdictWord(v.res.Verdict)
}

// per names a bucket width: "second", or "5 s".
func per(bw int64) string {
	if bw == 1e9 {
		return "second"
	}
	return fmtDur(bw)
}
