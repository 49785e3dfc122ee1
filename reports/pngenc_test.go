package reports

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"math"
	"math/rand/v2"
	"slices"
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

// encodePNG's own deflater keeps the pixels of images unlike a figure
// too: a column, a row, noise (literals in several blocks), runs of
// pixels and of bytes across rows, bounds that do not start at 0, and
// pixels not opaque after an opaque first row (image/png writes those).
func TestEncodePNGKeepsEveryPixelOfOddImages(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	opaque := func(r image.Rectangle, f func(x, y int) color.RGBA) *image.RGBA {
		m := image.NewRGBA(r)
		for y := r.Min.Y; y < r.Max.Y; y++ {
			for x := r.Min.X; x < r.Max.X; x++ {
				c := f(x, y)
				c.A = 255
				m.SetRGBA(x, y, c)
			}
		}
		return m
	}
	noise := func(int, int) color.RGBA {
		return color.RGBA{R: uint8(rnd.IntN(256)), G: uint8(rnd.IntN(256)), B: uint8(rnd.IntN(256))}
	}
	bars := func(x, y int) color.RGBA {
		switch {
		case y%7 < 3 && x%50 < 30:
			return color.RGBA{R: 31, G: 119, B: 180}
		case y%7 == 3 && x%3 == 0:
			return color.RGBA{R: uint8(x), G: uint8(y), B: 7}
		}
		return color.RGBA{R: 255, G: 255, B: 255}
	}
	for name, m := range map[string]*image.RGBA{
		"1x1":       opaque(image.Rect(0, 0, 1, 1), noise),
		"column":    opaque(image.Rect(0, 0, 1, 300), bars),
		"row":       opaque(image.Rect(0, 0, 700, 1), bars),
		"2 wide":    opaque(image.Rect(0, 0, 2, 50), bars),
		"noise":     opaque(image.Rect(0, 0, 300, 300), noise),
		"bars":      opaque(image.Rect(0, 0, 1203, 2001), bars),
		"offset":    opaque(image.Rect(-5, 7, 100, 90), bars),
		"sub-image": opaque(image.Rect(0, 0, 400, 400), bars).SubImage(image.Rect(13, 17, 301, 250)).(*image.RGBA),
		"black":     image.NewRGBA(image.Rect(0, 0, 40, 40)), // transparent: image/png's
		"one see-through": func() *image.RGBA {
			m := opaque(image.Rect(0, 0, 90, 60), bars)
			m.SetRGBA(50, 40, color.RGBA{R: 10, A: 10})
			return m
		}(),
	} {
		t.Run(name, func(t *testing.T) { samePixels(t, m) })
	}
}

// huffLengths makes a complete code no longer than its limit, however
// skewed the frequencies (Fibonacci's would make a code of 30 bits).
func TestHuffLengthsKeepToTheLimit(t *testing.T) {
	freq := make([]uint32, 30)
	a, b := uint32(1), uint32(1)
	for i := range freq {
		freq[i] = a
		a, b = b, a+b
	}
	for _, limit := range []int{7, 15} {
		lens := make([]uint8, len(freq))
		huffLengths(freq, lens, limit)
		kraft := 0.0
		for i, l := range lens {
			if l == 0 || int(l) > limit {
				t.Fatalf("limit %d: symbol %d has a code of %d bits", limit, i, l)
			}
			kraft += math.Pow(2, -float64(l))
		}
		if kraft != 1 {
			t.Errorf("limit %d: Kraft sum %v, want a complete code", limit, kraft)
		}
	}
	lens := make([]uint8, 5)
	huffLengths([]uint32{0, 0, 9, 0, 0}, lens, 15)
	if n := slices.Index(lens, 0); lens[2] != 1 || n < 0 || slices.Max(lens) != 1 || len(slices.DeleteFunc(slices.Clone(lens), func(l uint8) bool { return l == 0 })) != 2 {
		t.Errorf("one symbol used: lengths %v, want two codes of one bit", lens)
	}
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

// FuzzEncodePNG gives the hand-made deflater rows it was not shaped for:
// the fuzzer's bytes as the pixels of an opaque image of a width it picks,
// each byte repeated rep times (runs longer than a match, and the row
// above again, are what the deflater looks for). Whatever it is given,
// image/png must decode the same pixels.
func FuzzEncodePNG(f *testing.F) {
	f.Add(uint8(3), uint8(1), []byte("abcabcabc\x00\x00\x00\x00\x00\x00\xff\xff\xff"))
	f.Add(uint8(1), uint8(200), []byte{0, 0, 0, 1})
	f.Add(uint8(40), uint8(7), []byte("a bar, a gap, a bar, and some text"))
	f.Fuzz(func(t *testing.T, width, rep uint8, data []byte) {
		w, r := int(width)%64+1, int(rep)%300+1
		if len(data) == 0 || len(data)*r > 1<<18 {
			return
		}
		var px []byte
		for _, b := range data {
			for range r {
				px = append(px, b)
			}
		}
		h := max(1, ((len(px)+2)/3+w-1)/w)
		m := image.NewRGBA(image.Rect(0, 0, w, h))
		for i := 0; i < w*h; i++ {
			j := 3 * i
			m.Pix[4*i] = px[j%len(px)]
			m.Pix[4*i+1] = px[(j+1)%len(px)]
			m.Pix[4*i+2] = px[(j+2)%len(px)]
			m.Pix[4*i+3] = 255
		}
		samePixels(t, m)
	})
}
