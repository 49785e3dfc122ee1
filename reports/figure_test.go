package reports

import (
	"image"
	"image/color"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// drawShapes draws s on a bare plot of [0, 10] × [0, 10] and returns the
// picture and a function from data coordinates to its pixels.
func drawShapes(s *shapes) (image.Image, func(x, y float64) (int, int)) {
	p := plot.New()
	p.HideAxes()
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, 10, 0, 10
	p.X.Padding, p.Y.Padding = 0, 0
	p.BackgroundColor = nil
	p.Add(s)
	const size = 300 // points
	img := vgimg.NewWith(vgimg.UseWH(size, size), vgimg.UseDPI(DPI), vgimg.UseBackgroundColor(color.White))
	c := draw.New(img)
	p.Draw(c)
	dc := p.DataCanvas(c)
	trX, trY := p.Transforms(&dc)
	scale := float64(DPI) / 72
	pixel := func(x, y float64) (int, int) {
		return int(float64(trX(x)) * scale), int(float64(vg.Length(size)-trY(y)) * scale)
	}
	return img.Image(), pixel
}

// inked counts the pixels of r that are not white.
func inked(img image.Image, r image.Rectangle) int {
	n := 0
	r = r.Intersect(img.Bounds())
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			if r, g, b, _ := img.At(x, y).RGBA(); r>>8 < 250 || g>>8 < 250 || b>>8 < 250 {
				n++
			}
		}
	}
	return n
}

// Marks that lie wholly outside the plot's time range draw nothing, and a
// label with no room for a few characters is left out.
func TestShapesOutsideTheRangeDrawNothing(t *testing.T) {
	s := &shapes{}
	s.rect(11, 12, 1, 9, colInk, 0)
	s.shade(-3, -2, colInk)
	s.vline(12, 0, 0, colInk, 2)
	s.tick(-1, 2, 8, colInk, 2)
	s.glyph(15, 5, draw.CircleGlyph{}, 4, colInk)
	s.text(10.5, 5, "past the end", 12, colInk, 0)
	s.text(4, 5, "no room", 12, colInk, 4.01)
	img, _ := drawShapes(s)
	if n := inked(img, img.Bounds()); n != 0 {
		t.Errorf("%d pixels drawn by marks outside the plot or without room", n)
	}
}

// Marks inside the range are drawn where they belong: a shade or a rect
// narrower than its minimum is widened to it, a line between two x's
// spans them only, and a clipped label is shortened, not dropped.
func TestShapesInsideTheRangeAreDrawnInPlace(t *testing.T) {
	for _, tc := range []struct {
		name       string
		add        func(s *shapes)
		in, out    [2]float64 // a data point the mark covers, one it does not
		minCovered int        // pixels around in
	}{
		{"thin shade", func(s *shapes) { s.shade(5, 5.0001, colInk) }, [2]float64{5, 5}, [2]float64{6, 5}, 1},
		{"thin rect", func(s *shapes) { s.rect(5, 5.0001, 4, 6, colInk, 3) }, [2]float64{5, 5}, [2]float64{5, 7}, 3},
		{"hline between", func(s *shapes) { s.hline(5, 2, 4, colInk, 2) }, [2]float64{3, 5}, [2]float64{7, 5}, 2},
		{"hline across", func(s *shapes) { s.hline(5, 0, 0, colInk, 2) }, [2]float64{9, 5}, [2]float64{9, 7}, 2},
		{"vline partial", func(s *shapes) { s.vline(5, 2, 4, colInk, 2) }, [2]float64{5, 3}, [2]float64{5, 7}, 2},
		{"tick", func(s *shapes) { s.tick(5, 2, 4, colInk, 0.1) }, [2]float64{5, 3}, [2]float64{5, 7}, 1},
		{"glyph", func(s *shapes) { s.glyph(5, 5, draw.CircleGlyph{}, 4, colInk) }, [2]float64{5, 5}, [2]float64{8, 8}, 4},
		{"clipped text", func(s *shapes) { s.text(2, 5, "a label much longer than its room", 12, colInk, 4) }, [2]float64{3, 5}, [2]float64{7, 5}, 3},
		{"rect clipped at the range", func(s *shapes) { s.rect(-5, 1, 4, 6, colInk, 0) }, [2]float64{0.5, 5}, [2]float64{2, 5}, 9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &shapes{}
			tc.add(s)
			img, pixel := drawShapes(s)
			x, y := pixel(tc.in[0], tc.in[1])
			if n := inked(img, rectAround(x, y, 3)); n < tc.minCovered {
				t.Errorf("%d pixels drawn around (%g, %g), want at least %d", n, tc.in[0], tc.in[1], tc.minCovered)
			}
			x, y = pixel(tc.out[0], tc.out[1])
			if n := inked(img, rectAround(x, y, 1)); n != 0 {
				t.Errorf("%d pixels drawn around (%g, %g), where the mark is not", n, tc.out[0], tc.out[1])
			}
		})
	}
}
