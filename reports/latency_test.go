package reports

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/history"
)

// drawLatency draws the latency and rate figures of a run into dir and
// returns their SVGs' text.
func drawLatency(t *testing.T, ops []history.Op, holds []checker.Hold, dir string) (latency, rate string) {
	t.Helper()
	res := checker.Result{Verdict: checker.Valid, Checkers: map[string]checker.CheckResult{"lock-promise": {Verdict: checker.Valid}},
		Counts: counts(ops), Holds: holds}
	meta := RunMeta{Test: "latency", Lock: "token", Start: time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)}
	v := newRunView(meta, ops, res)
	w, h, fig := v.latency()
	if err := saveFigure(dir, "latency", w, h, fig); err != nil {
		t.Fatal(err)
	}
	w, h, fig = v.rate()
	if err := saveFigure(dir, "rate", w, h, fig); err != nil {
		t.Fatal(err)
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	return read("latency.svg"), read("rate.svg")
}

// A run longer than 600 s is plotted per bucket of several seconds, and
// says so on both figures; a stretch without a successful acquire breaks
// the quantile lines instead of bridging it, and a stretch without any
// event is left empty.
func TestLatencyOfALongRunIsPerBucket(t *testing.T) {
	b := &builder{ttl: 1000 * ms}
	sec := int64(time.Second)
	for i, t0 := 0, int64(0); t0 < 1300*sec; i, t0 = i+1, t0+sec/2 {
		if t0 >= 700*sec && t0 < 800*sec {
			continue // nothing happens
		}
		if t0 >= 500*sec && t0 < 600*sec {
			b.failedAcquire(1, "lock-0", t0, history.Fail) // nobody gets it
			continue
		}
		b.section(i%2, "lock-0", t0, t0+100*ms, int64(i+1), false)
	}
	b.nemesis(1300*sec, history.FFinalHeal, nil, "")
	ops := b.build()
	latency, rate := drawLatency(t, ops, b.holds, outDir(t, "latency-long"))
	for _, want := range []string{">ok acquire latency (ms), per 3.00 s<", ">median per 3.00 s<", ">max per 3.00 s<"} {
		if !strings.Contains(latency, want) {
			t.Errorf("the latency figure does not say %q", want)
		}
	}
	if !strings.Contains(rate, ">completions / s (per 3.00 s)<") {
		t.Errorf("the rate figure does not say its bucket width")
	}
	// The median's colour: one line before each gap, one after the
	// last, and the legend's thumbnail.
	if n := strings.Count(latency, "stroke:#1F77B4"); n != 4 {
		t.Errorf("the median is drawn in %d strokes, want 4 (three lines around the gaps and the legend's)", n)
	}
}

// A run without an acquire has an empty latency plot on a default scale,
// 0.1 ms to 1 s.
func TestLatencyWithoutAcquires(t *testing.T) {
	b := &builder{}
	c := int64(1)
	b.ev(10*ms, 0, history.Invoke, history.FWrite, "lock-0", &history.Value{Counter: &c})
	b.ev(12*ms, 0, history.OK, history.FWrite, "lock-0", &history.Value{Counter: &c})
	b.nemesis(2000*ms, history.FFinalHeal, nil, "")
	latency, _ := drawLatency(t, b.build(), nil, outDir(t, "latency-none"))
	for _, want := range []string{">0.1<", ">1000<"} {
		if !strings.Contains(latency, want) {
			t.Errorf("the empty latency plot has no tick %q", want)
		}
	}
	if strings.Contains(latency, ">acquire ok<") || strings.Contains(latency, "median per") {
		t.Errorf("the empty latency plot has a legend for points or lines it does not draw")
	}
}

// Latencies that are all the same power of ten still get a decade of y
// axis.
func TestLatencyOfOneValue(t *testing.T) {
	b := &builder{}
	for i := int64(0); i < 20; i++ {
		b.ev(i*100*ms, 0, history.Invoke, history.FAcquire, "lock-0", nil)
		b.ev(i*100*ms+ms, 0, history.Fail, history.FAcquire, "lock-0", nil)
	}
	b.nemesis(2000*ms, history.FFinalHeal, nil, "")
	latency, _ := drawLatency(t, b.build(), nil, outDir(t, "latency-one"))
	for _, want := range []string{">1<", ">5<", ">10<", ">acquire fail<"} {
		if !strings.Contains(latency, want) {
			t.Errorf("the latency plot of 1 ms acquires has no %q", want)
		}
	}
	if strings.Contains(latency, ">100<") {
		t.Errorf("the latency plot of 1 ms acquires reaches 100 ms")
	}
}

// latencyPointsByMap is latencyPoints as it was, the cells in a map: the
// reference for the set of cells that replaced it.
func latencyPointsByMap(ld *latencyDigest, xmax, ymin, ymax float64) map[history.Type]plotter.XYs {
	cols, rowsPx := float64(figWidth-legendWidth)/(2*latencyGlyph), 300.0/(2*latencyGlyph)
	type cell struct {
		t    history.Type
		x, y int
	}
	seen := map[cell]bool{}
	pts := map[history.Type]plotter.XYs{}
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
			return pts
		}
	}
}

// The latency plot's points are those a map of cells picked: on a plot
// of few points and on one that coarsens its grid, with points past the
// run's end and below the axis (off the grid).
func TestLatencyPointsAsByMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, n := range []int{300, 200_000} {
		l := newLatencyDigest(int64(n) * 100 * int64(time.Microsecond))
		types := []history.Type{history.OK, history.Fail, history.Info}
		for i := range n {
			invoke := int64(i) * 100 * int64(time.Microsecond)
			d := int64(math.Exp(rng.NormFloat64()*2) * 1e6)
			l.add(true, invoke, invoke+d, types[rng.IntN(3)])
		}
		ymin, ymax := latencyRange(l)
		for _, xmax := range []float64{seconds(int64(n) * 100 * int64(time.Microsecond)), 0.5 * seconds(int64(n)*100*int64(time.Microsecond))} {
			for _, lo := range []float64{ymin, ymin * 10} {
				got, want := latencyPoints(l, xmax, lo, ymax), latencyPointsByMap(l, xmax, lo, ymax)
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%d acquires, xmax %g, ymin %g: %d points, by a map %d", n, xmax, lo, total(got), total(want))
				}
			}
		}
	}
}

func total(pts map[history.Type]plotter.XYs) (n int) {
	for _, p := range pts {
		n += len(p)
	}
	return n
}

// A latency plot pads its data area for a boxedScatter's few boxes as
// for all of its points' (plotter.Scatter's): points at the axes' ends,
// past them, tied at an extreme, on a log axis, a few and thousands.
func TestBoxedScatterPadsAsAScatter(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for round := range 40 {
		n := 1 + rng.IntN(3)*rng.IntN(3000)
		xmax, ymin, ymax := 10.0, 0.01, 1000.0
		pts := make(plotter.XYs, n)
		for i := range pts {
			pts[i] = plotter.XY{X: rng.Float64() * xmax, Y: math.Pow(10, rng.Float64()*5-2)}
			switch rng.IntN(20) {
			case 0:
				pts[i].X = 0
			case 1:
				pts[i].X = xmax
			case 2:
				pts[i].Y = ymin
			case 3:
				pts[i].Y = ymax
			case 4:
				pts[i].X = -1
			case 5:
				pts[i].Y = ymax * 10
			}
		}
		canvases := make([]draw.Canvas, 2)
		for k := range canvases {
			p := logTimePlot("", xmax, ymin, ymax, "latency (ms)")
			sc, err := plotter.NewScatter(pts)
			if err != nil {
				t.Fatal(err)
			}
			sc.GlyphStyle = draw.GlyphStyle{Radius: vg.Length(1 + round%3), Shape: draw.CircleGlyph{}}
			if k == 0 {
				p.Add(sc)
			} else {
				p.Add(&boxedScatter{Scatter: sc})
			}
			p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, xmax, ymin, ymax
			c := draw.New(newSVG(figWidth, 300))
			canvases[k] = p.DataCanvas(c)
			if again := p.DataCanvas(c); again.Rectangle != canvases[k].Rectangle {
				t.Fatalf("round %d: the data area moved when laid out again", round)
			}
		}
		if canvases[0].Rectangle != canvases[1].Rectangle {
			t.Errorf("round %d (%d points): data area %v, a scatter's %v", round, n, canvases[1].Rectangle, canvases[0].Rectangle)
		}
	}
}
