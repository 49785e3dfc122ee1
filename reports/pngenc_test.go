package reports

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"os"
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
	_ = vg.Length(0)
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

func BenchmarkEncodePNG(b *testing.B) {
	path := os.Getenv("PNG_FILE")
	if path == "" {
		b.Skip("PNG_FILE")
	}
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	m, err := png.Decode(f)
	f.Close()
	if err != nil {
		b.Fatal(err)
	}
	rgba := image.NewRGBA(m.Bounds())
	for y := m.Bounds().Min.Y; y < m.Bounds().Max.Y; y++ {
		for x := m.Bounds().Min.X; x < m.Bounds().Max.X; x++ {
			rgba.Set(x, y, m.At(x, y))
		}
	}
	for _, tc := range []struct {
		name string
		enc  func(*bytes.Buffer) error
	}{
		{"ours", func(w *bytes.Buffer) error { return encodePNG(w, rgba) }},
		{"imagepng", func(w *bytes.Buffer) error {
			return (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(w, rgba)
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
