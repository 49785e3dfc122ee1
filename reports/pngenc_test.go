package reports

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"testing"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// encodePNG writes the pixels image/png writes: a figure decoded from
// either is the same, pixel for pixel.
func TestEncodePNGKeepsEveryPixel(t *testing.T) {
	meta, ops, res := clockFixture()
	v := newRunView(meta, ops, res)
	w, h, fig, _ := v.timeline(window{From: 0, To: v.end, Title: "pixels"})
	img := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(DPI), vgimg.UseBackgroundColor(color.White))
	fig(draw.New(img))
	samePixels(t, img.Image())
	// Not opaque: image/png writes it.
	m := image.NewRGBA(image.Rect(0, 0, 7, 5))
	m.Set(3, 2, color.NRGBA{R: 200, A: 100})
	samePixels(t, m)
}

func samePixels(t *testing.T, m image.Image) {
	t.Helper()
	var ours, theirs bytes.Buffer
	if err := encodePNG(&ours, m); err != nil {
		t.Fatal(err)
	}
	if err := (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&theirs, m); err != nil {
		t.Fatal(err)
	}
	a, err := png.Decode(&ours)
	if err != nil {
		t.Fatalf("our PNG does not decode: %v", err)
	}
	b, err := png.Decode(&theirs)
	if err != nil {
		t.Fatal(err)
	}
	if a.Bounds() != b.Bounds() {
		t.Fatalf("bounds %v, image/png %v", a.Bounds(), b.Bounds())
	}
	for y := b.Bounds().Min.Y; y < b.Bounds().Max.Y; y++ {
		for x := b.Bounds().Min.X; x < b.Bounds().Max.X; x++ {
			if ca, cb := color.NRGBAModel.Convert(a.At(x, y)), color.NRGBAModel.Convert(b.At(x, y)); ca != cb {
				t.Fatalf("pixel (%d,%d) is %v, image/png's %v", x, y, ca, cb)
			}
		}
	}
}

// BenchmarkEncodePNG writes the overview of a long run as PNG, with
// encodePNG and with image/png at its fastest level.
func BenchmarkEncodePNG(b *testing.B) {
	meta, ops, res := bigRun(100_000, 1)
	v := newRunView(meta, ops, res)
	w, h, fig, _ := v.timeline(window{From: 0, To: v.end, Title: "long"})
	img := newRaster(w, h)
	fig(draw.New(img))
	m := img.Image()
	for _, tc := range []struct {
		name string
		enc  func(*bytes.Buffer) error
	}{
		{"encodePNG", func(w *bytes.Buffer) error { return encodePNG(w, m) }},
		{"image-png", func(w *bytes.Buffer) error {
			return (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(w, m)
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var buf bytes.Buffer
			for b.Loop() {
				buf.Reset()
				if err := tc.enc(&buf); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(buf.Len())/1024, "KiB")
		})
	}
}

// newRaster draws what vgimg.NewWith's canvas draws, pixel for pixel,
// text included, whether the figure's height falls on a pixel or not.
func TestRasterCanvasDrawsAsNewWith(t *testing.T) {
	meta, ops, res := clockFixture()
	v := newRunView(meta, ops, res)
	w, h, fig, _ := v.timeline(window{From: 0, To: v.end, Title: "pixels"})
	lw, lh, lfig := v.latency()
	for _, c := range []struct {
		name string
		w, h vg.Length
		fig  func(draw.Canvas)
	}{
		{"timeline", w, h, fig}, {"latency", lw, lh, lfig},
		{"timeline off the pixel grid", w, 200.3, fig}, {"timeline on it", w, 300, fig},
	} {
		ref := vgimg.NewWith(vgimg.UseWH(c.w, c.h), vgimg.UseDPI(DPI), vgimg.UseBackgroundColor(color.White))
		c.fig(draw.New(ref))
		got := newRaster(c.w, c.h)
		c.fig(draw.New(got))
		a, b := got.Image().(*image.RGBA), ref.Image().(*image.RGBA)
		if a.Bounds() != b.Bounds() || !bytes.Equal(a.Pix, b.Pix) {
			t.Errorf("%s (%v × %v): newRaster drew other pixels than vgimg.NewWith", c.name, c.w, c.h)
		}
	}
}
