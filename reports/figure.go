package reports

import (
	"bufio"
	"fmt"
	"image"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"git.sr.ht/~sbinet/gg"
	xfont "golang.org/x/image/font"
	"golang.org/x/image/font/opentype"
	"golang.org/x/image/math/fixed"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// DPI of the PNG files. Sizes below are in points (1/72 inch), so a PNG is
// 4/3 as many pixels wide as the figure is points.
const DPI = 96

// Colours. Red means a violation and nothing else, so that a picture with
// no red has nothing wrong in it.
var (
	colViolation = color.NRGBA{R: 214, G: 39, B: 40, A: 255}
	colWarn      = color.NRGBA{R: 255, G: 127, B: 14, A: 255} // rejected writes, harmless findings
	colOK        = color.NRGBA{R: 44, G: 160, B: 44, A: 255}
	colFail      = color.NRGBA{R: 255, G: 127, B: 14, A: 255}
	colInfo      = color.NRGBA{R: 148, G: 103, B: 189, A: 255}
	colInk       = color.NRGBA{R: 40, G: 40, B: 40, A: 255}
	colFaint     = color.NRGBA{R: 150, G: 150, B: 150, A: 255}
	colGrid      = color.NRGBA{R: 225, G: 225, B: 225, A: 255}
	colPause     = color.NRGBA{R: 90, G: 90, B: 90, A: 255}
	colExpiry    = color.NRGBA{R: 117, G: 60, B: 160, A: 255} // a lease that ran out while held
	// Holds are coloured by key; none of these is red or orange.
	keyColours = []color.NRGBA{
		{R: 31, G: 119, B: 180, A: 255},  // blue
		{R: 23, G: 190, B: 207, A: 255},  // cyan
		{R: 44, G: 160, B: 44, A: 255},   // green
		{R: 148, G: 103, B: 189, A: 255}, // purple
		{R: 140, G: 86, B: 75, A: 255},   // brown
		{R: 188, G: 189, B: 34, A: 255},  // olive
		{R: 127, G: 127, B: 127, A: 255}, // grey
	}
)

func textStyle(size vg.Length, c color.Color) draw.TextStyle {
	return draw.TextStyle{Color: c, Font: font.From(plot.DefaultFont, size), Handler: plot.DefaultTextHandler}
}

// saveFigure draws fig once, onto both of its canvases at a time
// (teeCanvas), and writes them as base.png and base.svg in dir.
//
// The pixels are mapped for the figure and unmapped once it is written
// (newPixels): nothing of the raster canvas outlives saveFigure.
func saveFigure(dir, base string, w, h vg.Length, fig func(draw.Canvas)) error {
	var pool pixelPool
	defer pool.free()
	return saveFigureOn(&pool, dir, base, w, h, fig)
}

// saveFigureOn is saveFigure drawing on pixels of pool, which the
// figures of a report share.
func saveFigureOn(pool *pixelPool, dir, base string, w, h vg.Length, fig func(draw.Canvas)) error {
	img, svg := drawFigureOn(pool.get(4*rasterRect(w, h).Dx()*rasterRect(w, h).Dy()), w, h, fig)
	if err := writeAtomic(filepath.Join(dir, base+".png"), quickPNG{img.Canvas}); err != nil {
		return err
	}
	return writeAtomic(filepath.Join(dir, base+".svg"), svg)
}

// drawFigure draws fig, w × h, on a raster canvas and an SVG one (vgsvg.New's
// document, written for less: svgCanvas) at once.
func drawFigure(w, h vg.Length, fig func(draw.Canvas)) (*rasterCanvas, *svgCanvas) {
	return drawFigureOn(nil, w, h, fig)
}

// drawFigureOn is drawFigure with the raster's pixels in pix (as many
// bytes as the image has, whatever they hold: the canvas paints them
// white; or nil: new ones).
func drawFigureOn(pix []byte, w, h vg.Length, fig func(draw.Canvas)) (*rasterCanvas, *svgCanvas) {
	img, svg := newRasterOn(pix, w, h), newSVG(w, h)
	// The SVG's white background, which the raster has from the start.
	sc := draw.New(svg)
	sc.SetColor(color.White)
	sc.Fill(sc.Rectangle.Path())
	fig(draw.New(&teeCanvas{img, svg}))
	return img, svg
}

// teeCanvas gives every call to both the raster and the SVG canvas of a
// figure, so that the figure is laid out once (the plots' axes, ticks and
// legend, the clipping and placing of every mark, the lines of every
// text) and drawn on both: drawing it on each in turn laid it out twice,
// a fifth of what drawing a report's figures cost. The two canvases keep
// their states apart, and each sees the very calls it saw when it was
// drawn on alone (TestPathRasterDrawsAsGG), so its file is the same.
type teeCanvas struct {
	r *rasterCanvas
	s *svgCanvas
}

// Size is the figure's size, which both canvases give.
func (t *teeCanvas) Size() (vg.Length, vg.Length) { return t.r.Size() }

func (t *teeCanvas) SetLineWidth(w vg.Length) { t.r.SetLineWidth(w); t.s.SetLineWidth(w) }

func (t *teeCanvas) SetLineDash(ds []vg.Length, offs vg.Length) {
	t.r.SetLineDash(ds, offs)
	t.s.SetLineDash(ds, offs)
}

func (t *teeCanvas) SetColor(c color.Color) { t.r.SetColor(c); t.s.SetColor(c) }
func (t *teeCanvas) Rotate(rad float64)     { t.r.Rotate(rad); t.s.Rotate(rad) }
func (t *teeCanvas) Translate(pt vg.Point)  { t.r.Translate(pt); t.s.Translate(pt) }
func (t *teeCanvas) Scale(x, y float64)     { t.r.Scale(x, y); t.s.Scale(x, y) }
func (t *teeCanvas) Push()                  { t.r.Push(); t.s.Push() }
func (t *teeCanvas) Pop()                   { t.r.Pop(); t.s.Pop() }
func (t *teeCanvas) Stroke(p vg.Path)       { t.r.Stroke(p); t.s.Stroke(p) }
func (t *teeCanvas) Fill(p vg.Path)         { t.r.Fill(p); t.s.Fill(p) }

func (t *teeCanvas) FillString(f font.Face, pt vg.Point, s string) {
	t.r.FillString(f, pt, s)
	t.s.FillString(f, pt, s)
}

func (t *teeCanvas) DrawImage(rect vg.Rectangle, img image.Image) {
	t.r.DrawImage(rect, img)
	t.s.DrawImage(rect, img)
}

// rasterCanvas is the canvas vgimg.NewWith(vgimg.UseWH(w, h),
// vgimg.UseDPI(DPI)) makes, white, drawn the same, made without a copy:
// NewWith hands its new image to gg, which copies it whole (imageToRGBA),
// a tenth of a second for a tall timeline; here gg is given the image to
// draw on. A canvas made from an image takes its size from the pixels
// (w and h rounded to them): Size gives back w and h, as NewWith's does,
// so that the figure is laid out the same, and FillString, the one
// drawing call that reads the size, is given the point that lands where
// NewWith's canvas puts it.
type rasterCanvas struct {
	*vgimg.Canvas
	w, h  vg.Length
	fast  *pathRaster // nil: every path through gg
	faces map[faceKey]*glyphCache
}

func newRaster(w, h vg.Length) *rasterCanvas { return newRasterOn(nil, w, h) }

// rasterRect is the pixels of a raster figure w × h, as NewWith sizes its
// image.
func rasterRect(w, h vg.Length) image.Rectangle {
	pw, ph := w/vg.Inch*vg.Length(DPI), h/vg.Inch*vg.Length(DPI)
	return image.Rect(0, 0, int(pw+0.5), int(ph+0.5))
}

// newRasterOn is newRaster drawing on pix (4 bytes a pixel of
// rasterRect, painted white whatever they hold), or on a new image when
// pix is nil.
func newRasterOn(pix []byte, w, h vg.Length) *rasterCanvas {
	rect := rasterRect(w, h)
	img := &image.RGBA{Pix: pix, Stride: 4 * rect.Dx(), Rect: rect}
	if pix == nil {
		img = image.NewRGBA(rect)
	}
	ctx := gg.NewContextForRGBA(img)
	ctx.SetLineCapButt() // as NewWith sets up the context it makes
	ctx.InvertY()
	c := vgimg.NewWith(vgimg.UseImageWithContext(img, ctx), vgimg.UseDPI(DPI)) // white: the default
	return &rasterCanvas{Canvas: c, w: w, h: h, fast: newPathRaster(ctx, img, DPI)}
}

// Fill and Stroke draw a path of straight lines through fast
// (pathRaster), the same pixels for less; SetColor, SetLineWidth,
// SetLineDash, Push and Pop tell fast what gg's context is told.
func (r *rasterCanvas) Fill(p vg.Path) {
	if r.fast == nil || !r.fast.fill(p) {
		r.Canvas.Fill(p)
	}
}

func (r *rasterCanvas) Stroke(p vg.Path) {
	if r.fast == nil || !r.fast.stroke(p) {
		r.Canvas.Stroke(p)
	}
}

func (r *rasterCanvas) SetColor(c color.Color) {
	if r.fast != nil && sameColour(r.fast.pen.col, c) {
		// gg's context has it (fast's pen follows it, pushed and
		// popped with it): setting it again made two patterns of it,
		// for every mark of a figure drawn in its layer's colour.
		return
	}
	r.Canvas.SetColor(c)
	if r.fast != nil {
		r.fast.setColor(c)
	}
}

// sameColour reports whether b (nil: black, as vgimg takes it) is the
// colour a, both of a comparable kind a figure draws in; false for any
// other.
func sameColour(a, b color.Color) bool {
	if b == nil {
		b = color.Black
	}
	switch x := a.(type) {
	case color.NRGBA:
		y, ok := b.(color.NRGBA)
		return ok && x == y
	case color.RGBA:
		y, ok := b.(color.RGBA)
		return ok && x == y
	case color.Gray16:
		y, ok := b.(color.Gray16)
		return ok && x == y
	}
	return false
}

func (r *rasterCanvas) SetLineWidth(w vg.Length) {
	r.Canvas.SetLineWidth(w)
	if r.fast != nil {
		r.fast.setLineWidth(w)
	}
}

func (r *rasterCanvas) SetLineDash(ds []vg.Length, offs vg.Length) {
	r.Canvas.SetLineDash(ds, offs)
	if r.fast != nil {
		r.fast.setDash(ds)
	}
}

func (r *rasterCanvas) Push() {
	r.Canvas.Push()
	if r.fast != nil {
		r.fast.push()
	}
}

func (r *rasterCanvas) Pop() {
	r.Canvas.Pop()
	if r.fast != nil {
		r.fast.pop()
	}
}

// Size is the size asked for, not the pixels' (see rasterCanvas).
func (r *rasterCanvas) Size() (vg.Length, vg.Length) { return r.w, r.h }

// FillString writes str where vgimg's canvas of height h would: at
// h - pt.Y from the top. It draws as vgimg's FillString does (gg's
// DrawString, through the same context), with a face of f that keeps the
// glyphs it rasterized (glyphCache) instead of a new face each time.
func (r *rasterCanvas) FillString(f font.Face, pt vg.Point, str string) {
	_, ph := r.Canvas.Size()
	pt.Y += ph - r.h
	if r.fast == nil {
		r.Canvas.FillString(f, pt, str)
		return
	}
	if f.Font.Size == 0 {
		return
	}
	ctx, dpi := r.fast.ctx, r.Canvas.DPI()
	x, y, h := pt.X.Dots(dpi), pt.Y.Dots(dpi), ph.Dots(dpi)
	if !r.fast.pen.moved {
		// gg's matrix, inverted once more, is the identity: a glyph lands
		// on whole pixels (drawText).
		r.fast.drawText(r.face(f, dpi), str, x, h-y)
		return
	}
	ctx.Push()
	defer ctx.Pop()
	ctx.SetFontFace(r.face(f, dpi))
	ctx.InvertY()
	ctx.DrawString(str, x, h-y)
}

// Rotate, Translate and Scale move what is drawn after them until the
// Pop that undoes them: text is then drawn by gg (see drawText).
func (r *rasterCanvas) Rotate(rad float64) {
	r.Canvas.Rotate(rad)
	r.moved()
}

func (r *rasterCanvas) Translate(pt vg.Point) {
	r.Canvas.Translate(pt)
	r.moved()
}

func (r *rasterCanvas) Scale(x, y float64) {
	r.Canvas.Scale(x, y)
	r.moved()
}

func (r *rasterCanvas) moved() {
	if r.fast != nil {
		r.fast.pen.moved = true
	}
}

// face is f at dpi, as vgimg makes it (f.FontFace), with its glyphs
// kept: one per font of the figure.
func (r *rasterCanvas) face(f font.Face, dpi float64) *glyphCache {
	k := faceKey{f.Font, f.Face}
	if g, ok := r.faces[k]; ok {
		return g
	}
	if r.faces == nil {
		r.faces = map[faceKey]*glyphCache{}
	}
	g := &glyphCache{Face: f.FontFace(dpi), glyphs: map[glyphKey]glyph{}}
	r.faces[k] = g
	return g
}

type faceKey struct {
	font font.Font
	face *opentype.Font
}

// glyphCache is a face whose Glyph keeps what its face gives: the face
// rasterizes a glyph at the dot's place within its pixel (1/64 pixel),
// into a mask that depends on that alone (the dot's whole pixels move
// the rectangle it covers), so a figure's labels, the same few letters
// and digits over and over, rasterize each once per place.
type glyphCache struct {
	xfont.Face
	glyphs map[glyphKey]glyph
}

type glyphKey struct {
	r    rune
	x, y fixed.Int26_6 // the dot within its pixel
}

type glyph struct {
	dr      image.Rectangle // as at a dot in pixel (0, 0)
	mask    *image.Alpha
	maskp   image.Point
	advance fixed.Int26_6
	ok      bool
}

func (g *glyphCache) Glyph(dot fixed.Point26_6, r rune) (image.Rectangle, image.Image, image.Point, fixed.Int26_6, bool) {
	k := glyphKey{r, dot.X & 63, dot.Y & 63}
	gl, found := g.glyphs[k]
	if !found {
		dr, mask, maskp, advance, ok := g.Face.Glyph(fixed.Point26_6{X: k.x, Y: k.y}, r)
		gl = glyph{dr: dr, maskp: maskp, advance: advance, ok: ok}
		if m, isAlpha := mask.(*image.Alpha); ok && isAlpha {
			// The face reuses its mask: keep a copy.
			gl.mask = &image.Alpha{Pix: slices.Clone(m.Pix), Stride: m.Stride, Rect: m.Rect}
		} else if ok {
			return g.Face.Glyph(dot, r) // a mask of another kind: not kept
		}
		g.glyphs[k] = gl
	}
	if !gl.ok {
		return image.Rectangle{}, nil, image.Point{}, 0, false
	}
	return gl.dr.Add(image.Point{X: dot.X.Floor(), Y: dot.Y.Floor()}), gl.mask, gl.maskp, gl.advance, true
}

// pixelPool is the pixels the figures of a report are drawn on, one after
// another: the first figure's (the overview timeline, the largest: 14 MB
// for a tall one), kept for the next ones, which the canvas paints white
// before it draws (vgimg.NewWith), so that each figure after the first
// touches memory touched already instead of faulting in pages of its
// own (the latency plot's 3 MB, the rate plot's 2, a close-up's and a
// story's). free gives them back.
type pixelPool struct {
	p pixels
}

// get is n bytes of the pool's pixels, whatever they hold: those it has,
// or new ones when it has fewer.
func (pp *pixelPool) get(n int) []byte {
	if len(pp.p.b) < n {
		pp.p.free()
		pp.p = newPixels(n)
	}
	return pp.p.b[:n:n]
}

// free gives the pool's pixels back: nothing may use what get gave after.
func (pp *pixelPool) free() {
	pp.p.free()
	pp.p = pixels{}
}

// quickPNG writes a raster figure as PNG compressed for speed: the
// default compression took a third of a report's drawing, and the
// figures, flat colours on white, mostly rows that repeat the row above,
// compress well with a deflater that looks for little else (encodePNG).
type quickPNG struct{ c *vgimg.Canvas }

func (q quickPNG) WriteTo(w io.Writer) (int64, error) {
	cw := &countingWriter{w: w}
	err := encodePNG(cw, q.c.Image())
	return cw.n, err
}

// countingWriter counts what it passes on to w.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}

// createTemp creates the temporary file name is written to in dir before
// it is renamed into place: a new file (O_EXCL) of a random name, readable
// as the report's files are, so that a symbolic link planted under a fixed
// temporary name (in a run directory from elsewhere) is never written
// through to a file outside dir.
func createTemp(dir, name string) (*os.File, error) {
	f, err := os.CreateTemp(dir, "."+name+".*.tmp")
	if err != nil {
		return nil, err
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		_ = os.Remove(f.Name())
		return nil, err
	}
	return f, nil
}

// writeAtomic writes through a temporary file so a browser never sees half
// a picture.
func writeAtomic(path string, w io.WriterTo) error {
	f, err := createTemp(filepath.Dir(path), filepath.Base(path))
	if err != nil {
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	tmp := f.Name()
	bw := bufio.NewWriterSize(f, 256<<10)
	_, err = w.WriteTo(bw)
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	return nil
}

// shapes is a plotter of primitive marks in data coordinates, drawn in the
// order they were added. It exists because a plot of a long run has tens of
// thousands of marks, and one plotter.Polygon each would be slow.
type shapes struct {
	items []shape
}

type shapeKind int

const (
	kRect     shapeKind = iota // X0..X1 × Y0..Y1
	kShade                     // X0..X1 × the whole height
	kVLine                     // at X0, from Y0 to Y1 (whole height when Y0 == Y1)
	kHLine                     // at Y0, from X0 to X1 (whole width when X0 == X1)
	kText                      // Text at (X0, Y0), left-aligned, vertically centred
	kGlyph                     // Glyph at (X0, Y0)
	kTickMark                  // a short vertical mark at X0 spanning Y0..Y1, at least 1 px
)

type shape struct {
	Kind           shapeKind
	X0, X1, Y0, Y1 float64
	Col            color.Color
	Width          vg.Length // line width; minimum width of rects
	Dash           []vg.Length
	Text           string
	Size           vg.Length
	Glyph          draw.GlyphDrawer
	ClipRight      float64 // kText: do not draw past this x (0 = no limit)
}

func (s *shapes) rect(x0, x1, y0, y1 float64, c color.Color, minW vg.Length) {
	s.items = append(s.items, shape{Kind: kRect, X0: x0, X1: x1, Y0: y0, Y1: y1, Col: c, Width: minW})
}

func (s *shapes) shade(x0, x1 float64, c color.Color) {
	s.items = append(s.items, shape{Kind: kShade, X0: x0, X1: x1, Col: c})
}

func (s *shapes) vline(x, y0, y1 float64, c color.Color, w vg.Length, dash ...vg.Length) {
	s.items = append(s.items, shape{Kind: kVLine, X0: x, Y0: y0, Y1: y1, Col: c, Width: w, Dash: dash})
}

func (s *shapes) hline(y, x0, x1 float64, c color.Color, w vg.Length, dash ...vg.Length) {
	s.items = append(s.items, shape{Kind: kHLine, X0: x0, X1: x1, Y0: y, Col: c, Width: w, Dash: dash})
}

func (s *shapes) text(x, y float64, txt string, size vg.Length, c color.Color, clipRight float64) {
	s.items = append(s.items, shape{Kind: kText, X0: x, Y0: y, Text: txt, Size: size, Col: c, ClipRight: clipRight})
}

func (s *shapes) glyph(x, y float64, g draw.GlyphDrawer, size vg.Length, c color.Color) {
	s.items = append(s.items, shape{Kind: kGlyph, X0: x, Y0: y, Glyph: g, Size: size, Col: c})
}

func (s *shapes) tick(x, y0, y1 float64, c color.Color, w vg.Length) {
	s.items = append(s.items, shape{Kind: kTickMark, X0: x, Y0: y0, Y1: y1, Col: c, Width: w})
}

// Plot implements plot.Plotter.
func (s *shapes) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	sc := &shapeCanvas{c: &c, trX: trX, trY: trY, xmin: p.X.Min, xmax: p.X.Max, px: vg.Length(72.0 / DPI)}
	for i := range s.items {
		it := &s.items[i]
		switch it.Kind {
		case kRect:
			sc.rect(it)
		case kShade:
			sc.shade(it)
		case kVLine, kTickMark:
			sc.vline(it)
		case kHLine:
			sc.hline(it)
		case kText:
			sc.text(it)
		case kGlyph:
			sc.glyph(it)
		}
	}
}

// shapeCanvas draws shapes on a plot's canvas: trX and trY map data to
// the canvas, xmin and xmax are the plot's time range (a mark wholly
// outside it is not drawn, one partly outside is cut at its edge), px is
// a pixel in points.
type shapeCanvas struct {
	c          *draw.Canvas
	trX, trY   func(float64) vg.Length
	xmin, xmax float64
	px         vg.Length
}

// rect fills X0..X1 × Y0..Y1, at least Width wide.
func (sc *shapeCanvas) rect(it *shape) {
	if it.X1 < sc.xmin || it.X0 > sc.xmax {
		return
	}
	x0, x1 := sc.trX(math.Max(it.X0, sc.xmin)), sc.trX(math.Min(it.X1, sc.xmax))
	if w := it.Width; x1-x0 < w {
		mid := (x0 + x1) / 2
		x0, x1 = mid-w/2, mid+w/2
	}
	y0, y1 := sc.trY(it.Y0), sc.trY(it.Y1)
	fillRect(sc.c, it.Col, x0, x1, y0, y1)
}

// shade fills X0..X1 over the whole height, at least a pixel wide.
func (sc *shapeCanvas) shade(it *shape) {
	if it.X1 < sc.xmin || it.X0 > sc.xmax {
		return
	}
	x0, x1 := sc.trX(math.Max(it.X0, sc.xmin)), sc.trX(math.Min(it.X1, sc.xmax))
	if x1-x0 < sc.px {
		x1 = x0 + sc.px
	}
	fillRect(sc.c, it.Col, x0, x1, sc.c.Min.Y, sc.c.Max.Y)
}

// vline strokes a vertical line at X0 from Y0 to Y1, or over the whole
// height when they are equal; a tick mark is at least a pixel wide.
func (sc *shapeCanvas) vline(it *shape) {
	if it.X0 < sc.xmin || it.X0 > sc.xmax {
		return
	}
	x := sc.trX(it.X0)
	y0, y1 := sc.c.Min.Y, sc.c.Max.Y
	if it.Y0 != it.Y1 {
		y0, y1 = sc.trY(it.Y0), sc.trY(it.Y1)
	}
	w := it.Width
	if it.Kind == kTickMark {
		w = max(w, sc.px)
	}
	sc.c.StrokeLine2(draw.LineStyle{Color: it.Col, Width: w, Dashes: it.Dash}, x, y0, x, y1)
}

// hline strokes a horizontal line at Y0 from X0 to X1, or over the whole
// width when they are equal.
func (sc *shapeCanvas) hline(it *shape) {
	y := sc.trY(it.Y0)
	x0, x1 := sc.c.Min.X, sc.c.Max.X
	if it.X0 != it.X1 {
		x0, x1 = sc.trX(math.Max(it.X0, sc.xmin)), sc.trX(math.Min(it.X1, sc.xmax))
	}
	sc.c.StrokeLine2(draw.LineStyle{Color: it.Col, Width: it.Width, Dashes: it.Dash}, x0, y, x1, y)
}

// text writes Text from X0 (or the plot's left edge), vertically centred
// on Y0, shortened to end before ClipRight and the plot's right edge.
func (sc *shapeCanvas) text(it *shape) {
	if it.X0 > sc.xmax {
		return
	}
	sty := textStyle(it.Size, it.Col)
	sty.YAlign = draw.YCenter
	x := sc.trX(math.Max(it.X0, sc.xmin)) + 2
	limit := sc.c.Max.X
	if it.ClipRight != 0 {
		limit = min(limit, sc.trX(math.Min(it.ClipRight, sc.xmax)))
	}
	txt := fitText(sty, it.Text, limit-x)
	if txt == "" {
		return
	}
	sc.c.FillText(sty, vg.Point{X: x, Y: sc.trY(it.Y0)}, txt)
}

// glyph draws Glyph at (X0, Y0), unclipped so that one at the edge shows
// whole.
func (sc *shapeCanvas) glyph(it *shape) {
	if it.X0 < sc.xmin || it.X0 > sc.xmax {
		return
	}
	sc.c.DrawGlyphNoClip(draw.GlyphStyle{Color: it.Col, Radius: it.Size, Shape: it.Glyph}, vg.Point{X: sc.trX(it.X0), Y: sc.trY(it.Y0)})
}

func fillRect(c *draw.Canvas, col color.Color, x0, x1, y0, y1 vg.Length) {
	var p vg.Path
	p.Move(vg.Point{X: x0, Y: y0})
	p.Line(vg.Point{X: x1, Y: y0})
	p.Line(vg.Point{X: x1, Y: y1})
	p.Line(vg.Point{X: x0, Y: y1})
	p.Close()
	c.SetColor(col)
	c.Fill(p)
}

// fitText shortens txt with an ellipsis until it fits in width, or returns
// "" when not even a few characters fit.
func fitText(sty draw.TextStyle, txt string, width vg.Length) string {
	if sty.Width(txt) <= width {
		return txt
	}
	r := []rune(txt)
	for n := len(r) - 1; n >= 3; n-- {
		s := string(r[:n]) + "…"
		if sty.Width(s) <= width {
			return s
		}
	}
	return ""
}

// thumb is a legend thumbnail: a filled box, a line or a glyph.
type thumb struct {
	fill  color.Color
	line  *draw.LineStyle
	glyph *draw.GlyphStyle
	vert  bool // the line is vertical (a tick)
}

func (t thumb) Thumbnail(c *draw.Canvas) {
	if t.fill != nil {
		h := (c.Max.Y - c.Min.Y) / 4
		fillRect(c, t.fill, c.Min.X, c.Max.X, c.Min.Y+h, c.Max.Y-h)
	}
	if t.line != nil {
		if t.vert {
			x := (c.Min.X + c.Max.X) / 2
			c.StrokeLine2(*t.line, x, c.Min.Y, x, c.Max.Y)
		} else {
			y := (c.Min.Y + c.Max.Y) / 2
			c.StrokeLine2(*t.line, c.Min.X, y, c.Max.X, y)
		}
	}
	if t.glyph != nil {
		c.DrawGlyphNoClip(*t.glyph, c.Center())
	}
}

func boxThumb(c color.Color) thumb { return thumb{fill: c} }
func lineThumb(c color.Color, w vg.Length, dash ...vg.Length) thumb {
	return thumb{line: &draw.LineStyle{Color: c, Width: w, Dashes: dash}}
}
func tickThumb(c color.Color, w vg.Length) thumb {
	return thumb{line: &draw.LineStyle{Color: c, Width: w}, vert: true}
}
func glyphThumb(c color.Color, g draw.GlyphDrawer, r vg.Length) thumb {
	return thumb{glyph: &draw.GlyphStyle{Color: c, Shape: g, Radius: r}}
}

// legend is a plot.Legend that counts its entries, so a figure can be made
// tall enough for it.
type legend struct {
	plot.Legend
	n int
}

func (l *legend) Add(name string, thumbs ...plot.Thumbnailer) {
	l.Legend.Add(name, thumbs...)
	l.n++
}

func (l *legend) height() vg.Length { return vg.Length(l.n) * (12 + l.Padding) }

// newLegend is a legend for the right-hand column of a figure.
func newLegend() *legend {
	l := plot.NewLegend()
	l.Top, l.Left = true, true
	l.TextStyle = textStyle(9, colInk)
	l.ThumbnailWidth = 16
	l.Padding = 2
	return &legend{Legend: l}
}

// alignX crops each canvas so that the data areas of the plots, stacked
// vertically, start and end at the same x: their time axes line up.
func alignX(plots []*plot.Plot, cs []draw.Canvas) {
	var left, right vg.Length
	for i, p := range plots {
		dc := p.DataCanvas(cs[i])
		left = max(left, dc.Min.X-cs[i].Min.X)
		right = max(right, cs[i].Max.X-dc.Max.X)
	}
	for i, p := range plots {
		dc := p.DataCanvas(cs[i])
		cs[i] = draw.Crop(cs[i], left-(dc.Min.X-cs[i].Min.X), -(right - (cs[i].Max.X - dc.Max.X)), 0, 0)
	}
}

// basePlot is a plot with the house style: small fonts, light grid lines
// drawn by the caller, time on x in seconds.
func basePlot(title string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	restyle(&p.Title.TextStyle, 12)
	p.Title.Padding = 6
	p.X.Label.Text = "time since the start of the run (s)"
	restyle(&p.X.Label.TextStyle, 9)
	restyle(&p.X.Tick.Label, 8)
	restyle(&p.Y.Tick.Label, 8)
	restyle(&p.Y.Label.TextStyle, 9)
	p.X.Tick.Marker = timeTicker{}
	p.BackgroundColor = nil
	return p
}

// restyle changes a text style's size and colour and keeps its alignment.
func restyle(s *draw.TextStyle, size vg.Length) {
	s.Font.Size = size
	s.Color = colInk
}

// timeTicker puts about ten labelled ticks on a time axis, at round
// numbers of seconds (1, 2 or 5 times a power of ten).
type timeTicker struct{}

func (timeTicker) Ticks(lo, hi float64) []plot.Tick {
	span := hi - lo
	if span <= 0 {
		return []plot.Tick{{Value: lo, Label: strconv.FormatFloat(lo, 'g', 4, 64)}}
	}
	raw := span / 10
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	prec := max(0, -int(math.Floor(math.Log10(step))))
	var ticks []plot.Tick
	for x := math.Ceil(lo/step) * step; x <= hi+step*1e-9; x += step {
		ticks = append(ticks, plot.Tick{Value: x, Label: strconv.FormatFloat(x, 'f', prec, 64)})
		// a minor tick halfway
		if m := x + step/2; m < hi {
			ticks = append(ticks, plot.Tick{Value: m})
		}
	}
	return ticks
}

// timeTicks are x ticks with grid lines, added to s.
func timeGrid(s *shapes, p *plot.Plot) {
	for _, t := range p.X.Tick.Marker.Ticks(p.X.Min, p.X.Max) {
		if t.Label != "" {
			s.vline(t.Value, 0, 0, colGrid, 0.5)
		}
	}
}

// logTicker labels a log axis at 1, 2 and 5 times each power of ten when
// the range is short, at powers of ten otherwise, in plain decimals.
type logTicker struct{}

func (logTicker) Ticks(lo, hi float64) []plot.Tick {
	if lo <= 0 || hi <= lo {
		return nil
	}
	mults := []float64{1}
	if math.Log10(hi/lo) <= 3 {
		mults = []float64{1, 2, 5}
	}
	var ticks []plot.Tick
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		for m := 1.0; m < 10; m++ {
			v := m * math.Pow(10, e)
			if v < lo*(1-1e-9) || v > hi*(1+1e-9) {
				continue
			}
			t := plot.Tick{Value: v}
			for _, lm := range mults {
				if m == lm {
					t.Label = strconv.FormatFloat(v, 'f', -1, 64)
				}
			}
			ticks = append(ticks, t)
		}
	}
	return ticks
}
