package reports

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"math"
	"testing"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/history"
)

// A figure drawn on newRaster's canvas, its straight paths and filled
// glyphs by pathRaster, has the pixels gg gives it on vgimg's canvas, and
// its SVG (svgCanvas) the bytes of vgsvg's, every
// figure of a report: timelines (with every kind of mark, a close-up
// with its dashed lines, a long run, thousands of processes), the
// latency and rate plots and a story.
func TestPathRasterDrawsAsGG(t *testing.T) {
	type figure struct {
		name string
		w, h vg.Length
		fig  func(draw.Canvas)
		most bool // most of its paths are straight or glyphs: pathRaster must draw them
	}
	var figs []figure
	timeline := func(name string, v *runView, win window) {
		w, h, fig, _ := v.timeline(win)
		figs = append(figs, figure{name, w, h, fig, true})
	}
	every := newRunView(everyMarkFixture())
	timeline("every mark", every, window{From: 0, To: every.end, Title: "every mark"})
	vi := every.res.Violations[every.zoomed()[0]]
	timeline("close-up", every, window{From: vi.Start - 200*ms, To: vi.End + 200*ms, Title: "close-up", Zoom: true, Highlight: &vi})
	long := newRunView(bigRun(100_000, 1))
	timeline("long run", long, window{From: 0, To: long.end, Title: "long"})
	many := thousandsOfProcesses(t)
	timeline("thousands of processes", many, window{From: 0, To: many.end, Title: "thousands"})
	lw, lh, lfig := long.latency()
	rw, rh, rfig := long.rate()
	figs = append(figs, figure{"latency", lw, lh, lfig, true}, figure{"rate", rw, rh, rfig, true})
	sw, sh, sfig := staleWriteStory(t)
	figs = append(figs, figure{"story", sw, sh, sfig, false})

	for _, f := range figs {
		// The SVG too: svgCanvas writes what vgsvg writes.
		refSVG, gotSVG := vgsvg.New(f.w, f.h), newSVG(f.w, f.h)
		for _, c := range []vg.CanvasWriterTo{refSVG, gotSVG} {
			dc := draw.New(c)
			dc.SetColor(color.White)
			dc.Fill(dc.Rectangle.Path())
			f.fig(dc)
		}
		var want, gotBytes bytes.Buffer
		if _, err := refSVG.WriteTo(&want); err != nil {
			t.Fatal(err)
		}
		if n, err := gotSVG.WriteTo(&gotBytes); err != nil || n != int64(gotBytes.Len()) {
			t.Fatalf("%s: svgCanvas wrote %d bytes, says %d (%v)", f.name, gotBytes.Len(), n, err)
		}
		if !bytes.Equal(want.Bytes(), gotBytes.Bytes()) {
			t.Errorf("%s: svgCanvas wrote another SVG than vgsvg (%d bytes, vgsvg's %d; first difference at %d)",
				f.name, gotBytes.Len(), want.Len(), firstDiff(want.Bytes(), gotBytes.Bytes()))
		}
		ref := vgimg.NewWith(vgimg.UseWH(f.w, f.h), vgimg.UseDPI(DPI), vgimg.UseBackgroundColor(color.White))
		f.fig(draw.New(ref))
		got := newRaster(f.w, f.h)
		f.fig(draw.New(got))
		a, b := got.Image().(*image.RGBA), ref.Image().(*image.RGBA)
		if a.Bounds() != b.Bounds() || !bytes.Equal(a.Pix, b.Pix) {
			t.Errorf("%s: pathRaster drew other pixels than gg (%d pixels differ)", f.name, differing(a, b))
		}
		if got.fast.drawn == 0 || f.most && got.fast.drawn < 50 {
			t.Errorf("%s: pathRaster drew only %d paths", f.name, got.fast.drawn)
		}
		if got.fast.texts == 0 {
			t.Errorf("%s: pathRaster wrote no text", f.name)
		}
		// Drawn on both at once, as saveFigure does, each comes out the same.
		teeR, teeS := drawFigure(f.w, f.h, f.fig)
		if c := teeR.Image().(*image.RGBA); !bytes.Equal(c.Pix, b.Pix) {
			t.Errorf("%s: drawn with the SVG at once (teeCanvas), the raster has other pixels (%d differ)", f.name, differing(c, b))
		}
		var teeBytes bytes.Buffer
		if _, err := teeS.WriteTo(&teeBytes); err != nil || !bytes.Equal(teeBytes.Bytes(), want.Bytes()) {
			t.Errorf("%s: drawn with the raster at once (teeCanvas), the SVG differs at byte %d (%v)", f.name, firstDiff(want.Bytes(), teeBytes.Bytes()), err)
		}
	}
}

// firstDiff is the index of the first byte where a and b differ.
func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// differing counts the pixels where a and b differ.
func differing(a, b *image.RGBA) int {
	if a.Bounds() != b.Bounds() {
		return -1
	}
	n := 0
	for i := 0; i < len(a.Pix); i += 4 {
		if !bytes.Equal(a.Pix[i:i+4], b.Pix[i:i+4]) {
			n++
		}
	}
	return n
}

// thousandsOfProcesses is the view of a run of 3,000 client processes,
// each holding once: a timeline of thin rows.
func thousandsOfProcesses(t *testing.T) *runView {
	t.Helper()
	b := &builder{ttl: 50 * ms}
	for p := range 3000 {
		b.section(p, "lock-0", int64(p)*ms, int64(p)*ms+ms/2, int64(p+1), false)
	}
	ops := b.build()
	return newRunView(RunMeta{Lock: "token"}, ops, checker.Result{Verdict: checker.Valid, Counts: counts(ops), Holds: b.holds})
}

// staleWriteStory is the story figure of a GC pause's stale write.
func staleWriteStory(t *testing.T) (vg.Length, vg.Length, func(draw.Canvas)) {
	t.Helper()
	ops := gcPauseHistory(false)
	res, err := checker.Check(context.Background(), history.Events(ops), checker.Config{})
	if err != nil {
		t.Fatal(err)
	}
	v := newRunView(RunMeta{Lock: "token"}, ops, res)
	vi := findKind(t, res, checker.KindStaleWrite)
	win := v.storyWindow(vi)
	if err := gatherStories(context.Background(), v.src, []*storyWindow{win}); err != nil {
		t.Fatal(err)
	}
	return drawStory(storyOf(vi, 1, win.ops, v.faults, lockOf(v.rec)))
}

// Text written by pathRaster (drawText) has gg's pixels: in opaque and
// translucent colours, at fractions of a pixel, over marks, cut by the
// image's edges, and rotated (which gg writes).
func TestDrawTextAsGG(t *testing.T) {
	const w, h = 160, 90
	fig := func(c draw.Canvas) {
		fillRect(&c, colGrid, 10, 150, 20, 60)
		cols := []color.Color{colInk, colViolation, color.NRGBA{R: 31, G: 119, B: 180, A: 120}, color.Gray{Y: 90}, color.Black}
		for i, col := range cols {
			sty := textStyle(vg.Length(7+i), col)
			at := vg.Point{X: vg.Length(-4 + 31.3*float64(i)), Y: vg.Length(3 + 17.7*float64(i))}
			c.FillText(sty, at, "lock-0 µs ✓ 1.25 s")
		}
		sty := textStyle(9, colInk)
		sty.Rotation = math.Pi / 2
		c.FillText(sty, vg.Point{X: 20, Y: 10}, "latency (ms)")
	}
	ref := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(DPI), vgimg.UseBackgroundColor(color.White))
	fig(draw.New(ref))
	got := newRaster(w, h)
	fig(draw.New(got))
	a, b := got.Image().(*image.RGBA), ref.Image().(*image.RGBA)
	if !bytes.Equal(a.Pix, b.Pix) {
		t.Errorf("drawText wrote other pixels than gg (%d pixels differ)", differing(a, b))
	}
	if got.fast.texts != 5 {
		t.Errorf("drawText wrote %d strings, want the 5 that are not rotated", got.fast.texts)
	}
}
