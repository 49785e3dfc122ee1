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
	// Points closer than a glyph are one point: dedupe on a grid of
	// glyph-sized cells. The figure (the SVG above all, which keeps every
	// point) is then bounded by its area, not by the number of acquires: a
	// million acquires draw no more points than a few thousand that fill
	// the same cells.
	cols, rowsPx := float64(w-legendWidth)/(2*latencyGlyph), 300.0/(2*latencyGlyph)
	type cell struct {
		t    history.Type
		x, y int
	}
	seen := map[cell]bool{}
	pts := map[history.Type]plotter.XYs{}
	ld := v.dig.lat
	lo, hi := ld.lo, ld.hi
	if ld.n == 0 {
		lo, hi = 0.1, 1000
	}
	ymin := math.Pow(10, math.Floor(math.Log10(lo)))
	ymax := math.Pow(10, math.Ceil(math.Log10(hi)))
	if ymax <= ymin {
		ymax = ymin * 10
	}
	// A crowded plot (a long run's) merges cells two by two until at most
	// maxDrawn points are left: it shows where the latencies lie, and its
	// SVG stays small.
	for f := 1.0; ; f *= 2 {
		clear(seen)
		clear(pts)
		n := 0
		for o, out := range outcomes {
			for _, p := range ld.sortedPoints(o) {
				k := cell{out.T, int(p.X / xmax * cols / f), int(math.Log(p.Y/ymin) / math.Log(ymax/ymin) * rowsPx / f)}
				if seen[k] {
					continue
				}
				seen[k] = true
				pts[out.T] = append(pts[out.T], plotter.XY{X: p.X, Y: p.Y})
				n++
			}
		}
		if n <= maxDrawn || f >= 8 {
			break
		}
	}

	top := basePlot(v.title("acquire latency"))
	top.X.Min, top.X.Max = 0, xmax
	top.Y.Min, top.Y.Max = ymin, ymax
	top.Y.Scale = plot.LogScale{}
	top.Y.Tick.Marker = logTicker{}
	top.Y.Label.Text = "latency (ms)"
	s := &shapes{}
	fams := v.shadeFaults(s)
	timeGrid(s, top)
	top.Add(s)
	leg := newLegend()
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
		top.Add(sc)
	}

	// Quantiles of ok acquires per bucket, from the buckets' histograms.
	bw := ld.plotWidth(v.end)
	buckets := ld.plotBuckets(bw)
	qs := []struct {
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
	bot := basePlot("")
	bot.X.Min, bot.X.Max = 0, xmax
	bot.Y.Min, bot.Y.Max = ymin, ymax
	bot.Y.Scale = plot.LogScale{}
	bot.Y.Tick.Marker = logTicker{}
	bot.Y.Label.Text = "ok acquire latency (ms)"
	if bw > 1e9 {
		bot.Y.Label.Text = "ok acquire latency (ms), per " + per(bw)
	}
	s2 := &shapes{}
	v.shadeFaults(s2)
	timeGrid(s2, bot)
	bot.Add(s2)
	var keys []int64
	for k, b := range buckets {
		if b != nil && b.acqOKInvoked() > 0 {
			keys = append(keys, int64(k))
		}
	}
	for _, q := range qs {
		// One line per run of consecutive buckets: no line is drawn
		// across a stretch with no successful acquire.
		var line plotter.XYs
		flush := func() {
			if len(line) == 0 {
				return
			}
			if l, err := plotter.NewLine(line); err == nil {
				l.LineStyle = draw.LineStyle{Color: q.col, Width: 1.2, Dashes: q.dash}
				bot.Add(l)
			}
			line = nil
		}
		for i, k := range keys {
			if i > 0 && k != keys[i-1]+1 {
				flush()
			}
			b := buckets[k]
			line = append(line, plotter.XY{X: seconds(k*bw + bw/2), Y: histQuantile(&b.hist[0], b.max[0], q.q)})
		}
		flush()
		if len(keys) > 0 {
			leg.Add(q.name+" per "+per(bw), lineThumb(q.col, 1.2, q.dash...))
		}
	}
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

// rate draws completed operations per second over time, by outcome.
func (v *runView) rate() (vg.Length, vg.Length, func(draw.Canvas)) {
	const w, h = figWidth, 300
	ld := v.dig.lat
	bw := ld.plotWidth(v.end)
	n := int(v.end/bw) + 1
	perSec := float64(1e9) / float64(bw)
	counts := map[history.Type][]float64{}
	acqOK := make([]float64, n)
	for _, o := range outcomes {
		counts[o.T] = make([]float64, n)
	}
	for b, lb := range ld.plotBuckets(bw) {
		if lb == nil || b >= n {
			continue
		}
		for o, out := range outcomes {
			counts[out.T][b] = lb.done[o] * perSec
		}
		acqOK[b] = lb.acqOK * perSec
	}
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
	// The last bucket is cut short by the end of the run: rate over what it covers.
	if covered := v.end - int64(n-1)*bw; covered > 0 && covered < bw {
		f := float64(bw) / float64(covered)
		for _, cs := range counts {
			cs[n-1] *= f
		}
		acqOK[n-1] *= f
	}
	add := func(vals []float64, name string, col color.Color, dash []vg.Length) {
		var xy plotter.XYs
		for i, y := range vals {
			xy = append(xy, plotter.XY{X: seconds(int64(i)*bw + bw/2), Y: y})
			ymax = math.Max(ymax, y)
		}
		l, err := plotter.NewLine(xy)
		if err != nil {
			return
		}
		l.LineStyle = draw.LineStyle{Color: col, Width: 1.2, Dashes: dash}
		p.Add(l)
		leg.Add(name, lineThumb(col, 1.2, dash...))
	}
	for _, o := range outcomes {
		add(counts[o.T], o.Name, o.Col, nil)
	}
	add(acqOK, "acquire ok", colInk, []vg.Length{3, 2})
	p.Y.Max = math.Max(ymax*1.08, 1)
	timeGrid(s, p)
	v.faultLegend(leg, fams)
	fig := func(c draw.Canvas) {
		p.Draw(draw.Crop(c, 0, -legendWidth, 0, 0))
		leg.Draw(draw.Crop(c, figWidth-legendWidth+12, 0, 0, -28))
	}
	return w, h, fig
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
