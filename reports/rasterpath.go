package reports

import (
	"image"
	"image/color"
	"math"
	"math/bits"

	"git.sr.ht/~sbinet/gg"
	"github.com/golang/freetype/raster"
	xdraw "golang.org/x/image/draw"
	xfont "golang.org/x/image/font"
	"golang.org/x/image/math/f64"
	"golang.org/x/image/math/fixed"
	"gonum.org/v1/plot/vg"
)

// pathRaster fills and strokes the straight-edged paths of a raster
// figure (bars, ticks, grid lines, axes: every mark of a timeline) with
// the same rasterizer gg uses, given the same points, so that each pixel
// comes out as gg draws it, but sized to the path instead of the image.
// gg's rasterizer clears and sweeps every pixel row of the image for each
// path it draws: a mark cost the image's height, and a timeline of
// thousands of clients (4,000 pixel rows) draws tens of thousands of
// marks. The rasterizer works in fixed point (1/64 pixel) and a path
// moved by whole pixels covers the same fraction of each pixel, moved:
// here each path is moved to the origin of a rasterizer as large as the
// path's pixels (as tall as the next power of two, so that a few
// rasterizers serve every path and keep the cells they grew), whose spans
// the rasterizer moves back (Dx, Dy) onto the image. A filled arc (a glyph) is drawn
// here too, as the curves gg makes of it; a path with other curves, a
// stroked arc, a dashed line, or one that reaches the image's edge goes
// to gg, as does text.
type pathRaster struct {
	ctx *gg.Context
	img *image.RGBA
	dpi float64
	r   *raster.Rasterizer     // the one drawing now, one of rs
	rs  [32]*raster.Rasterizer // rs[k] is as wide as the image, 2^k pixels tall
	p   *raster.RGBAPainter

	pts  []pathPoint
	path raster.Path

	// What gg's context holds and does not show: its colour, line width
	// and dashes, saved and restored with it by Push and Pop. width is
	// vgimg's own record of the line width, which its Stroke reads
	// and Pop does not restore.
	pen   pen
	saved []pen
	width vg.Length

	// trig is the cosines and sines of the last arc's curves, between
	// trigAngles (arcTrig).
	trig       *[arcSegments]arcAngles
	trigAngles [2]float64

	drawn int // paths drawn here, not by gg (for the tests)
	texts int // strings written here (drawText), not by gg
}

// pen is the part of gg's state a path is drawn with.
type pen struct {
	col    color.Color
	width  float64 // line width in pixels, as gg keeps it
	dashed bool
	moved  bool // rotated, translated or scaled (rasterCanvas.Rotate…)
}

// pathPoint is a point of a path in gg's fixed point, in pixels of the
// image; start begins a subpath, ctrl is the control point of a
// quadratic curve to the point after it.
type pathPoint struct {
	pt    fixed.Point26_6
	start bool
	ctrl  bool
}

// newPathRaster draws on img through ctx, the context of a vgimg canvas
// just made: its pen is the one vg.Initialize gave it.
func newPathRaster(ctx *gg.Context, img *image.RGBA, dpi float64) *pathRaster {
	pr := &pathRaster{ctx: ctx, img: img, dpi: dpi, p: raster.NewRGBAPainter(img)}
	pr.setLineWidth(vg.Points(1))
	pr.setDash(nil)
	pr.setColor(color.Black)
	return pr
}

// setColor, setLineWidth, setDash, push and pop follow the calls vgimg
// makes on gg's context.
func (pr *pathRaster) setColor(c color.Color) {
	if c == nil {
		c = color.Black
	}
	pr.pen.col = c
}

func (pr *pathRaster) setLineWidth(w vg.Length) {
	pr.width = w
	pr.pen.width = w.Dots(pr.dpi)
}

func (pr *pathRaster) setDash(ds []vg.Length) { pr.pen.dashed = len(ds) > 0 }

func (pr *pathRaster) push() { pr.saved = append(pr.saved, pr.pen) }

func (pr *pathRaster) pop() {
	pr.pen = pr.saved[len(pr.saved)-1]
	pr.saved = pr.saved[:len(pr.saved)-1]
}

// fill fills p as gg's Fill would, and reports whether it did (false:
// leave it to gg).
func (pr *pathRaster) fill(p vg.Path) bool {
	if !pr.outline(p, true) {
		return false
	}
	// gg fills its path closed once more from its last start.
	for i := len(pr.pts) - 1; i >= 0; i-- {
		if pr.pts[i].start {
			pr.pts = append(pr.pts, pathPoint{pt: pr.pts[i].pt})
			break
		}
	}
	x0, y0, ok := pr.bounds(0)
	if !ok {
		return false
	}
	pr.path = pr.path[:0]
	for i := 0; i < len(pr.pts); i++ {
		switch q := pr.pts[i]; {
		case q.start:
			pr.path.Start(shift(q.pt, x0, y0))
		case q.ctrl:
			i++
			pr.path.Add2(shift(q.pt, x0, y0), shift(pr.pts[i].pt, x0, y0))
		default:
			pr.path.Add1(shift(q.pt, x0, y0))
		}
	}
	pr.r.AddPath(pr.path)
	pr.paint()
	return true
}

// stroke strokes p as gg's Stroke would (butt caps, round joins, as
// vgimg sets up gg), and reports whether it did.
func (pr *pathRaster) stroke(p vg.Path) bool {
	if pr.width <= 0 {
		return true // vgimg draws nothing
	}
	if pr.pen.dashed || !pr.outline(p, false) {
		return false
	}
	half := int(math.Ceil(pr.pen.width/2)) + 1
	x0, y0, ok := pr.bounds(half)
	if !ok {
		return false
	}
	// gg drops a point closer than 4/64 pixel to the one kept before it
	// (rasterPath).
	const dcut = 4
	pr.path = pr.path[:0]
	var prev fixed.Point26_6
	for _, q := range pr.pts {
		switch {
		case q.start:
			pr.path.Start(shift(q.pt, x0, y0))
			prev = q.pt
		case abs26(q.pt.X-prev.X)+abs26(q.pt.Y-prev.Y) > dcut:
			pr.path.Add1(shift(q.pt, x0, y0))
			prev = q.pt
		}
	}
	width := fixed.Int26_6(math.Round(pr.pen.width * 64))
	if len(pr.path) == 8 && pr.path[0] == 0 && pr.path[4] == 1 {
		// One segment (a tick, a grid line): no join, no curve.
		addSegmentStroke(pr.r, fixed.Point26_6{X: pr.path[1], Y: pr.path[2]}, fixed.Point26_6{X: pr.path[5], Y: pr.path[6]}, width)
	} else {
		pr.r.AddStroke(pr.path, width, raster.ButtCapper, raster.RoundJoiner)
	}
	pr.paint()
	return true
}

// addSegmentStroke adds to r the segment from a to b stroked width wide
// with butt caps, as r.AddStroke adds it (freetype's stroker: the same
// points, the same order), without the stroker's paths, a slice made and
// grown for each: most of what a timeline strokes is one segment (a
// tick, a grid line), and the stroker was half of stroking one. The
// offset of the sides is the stroker's (pNorm turned a quarter, whose
// arithmetic is freetype's, github.com/golang/freetype, FreeType
// License): a half width along the segment's normal.
func addSegmentStroke(r *raster.Rasterizer, a, b fixed.Point26_6, width fixed.Int26_6) {
	var n fixed.Point26_6 // b - a normalized to width/2, turned a quarter counter-clockwise
	d := b.Sub(a)
	if l := fixed.Int26_6(math.Sqrt(float64(d.X)*float64(d.X) + float64(d.Y)*float64(d.Y))); l != 0 {
		u, t := int64(width/2), int64(l)
		n = fixed.Point26_6{X: fixed.Int26_6(int64(d.Y) * u / t), Y: -fixed.Int26_6(int64(d.X) * u / t)}
	}
	r.Start(a.Add(n))
	r.Add1(b.Add(n))
	r.Add1(b.Sub(n)) // the cap at b
	r.Add1(a.Sub(n)) // the other side, back
	r.Add1(a.Add(n)) // the cap at a
}

// outline gathers p's points as gg's MoveTo, LineTo, DrawArc and
// ClosePath place them (through gg's transform, rounded to fixed point as
// gg does) into pts, those of its fill path or of its stroke path: false
// for a path with curves, or with arcs to stroke.
//
// An arc is a fill's only curve (a glyph: the latency plot's thousands
// of points, a lease's expiry), which gg makes of 16 quadratic curves
// (DrawEllipticalArc), computed here the same. The rasterizer splits a
// curve with halves and quarters of its points' sums, which a move by
// whole pixels moves by whole pixels as long as none is negative (Go
// divides towards zero): the points here lie in the image and, moved,
// in the rasterizer (bounds), so they never are.
func (pr *pathRaster) outline(p vg.Path, fill bool) bool {
	pr.pts = pr.pts[:0]
	var start fixed.Point26_6
	has := false
	at := func(x, y float64) fixed.Point26_6 {
		x, y = pr.ctx.TransformPoint(x, y)
		return gg.Point{X: x, Y: y}.Fixed()
	}
	moveTo := func(pt fixed.Point26_6) {
		if has && fill { // gg closes the fill path it leaves
			pr.pts = append(pr.pts, pathPoint{pt: start})
		}
		pr.pts = append(pr.pts, pathPoint{pt: pt, start: true})
		start, has = pt, true
	}
	for _, c := range p {
		switch c.Type {
		case vg.MoveComp, vg.LineComp:
			pt := at(c.Pos.X.Dots(pr.dpi), c.Pos.Y.Dots(pr.dpi))
			if c.Type == vg.MoveComp || !has {
				moveTo(pt)
				continue
			}
			pr.pts = append(pr.pts, pathPoint{pt: pt})
		case vg.ArcComp:
			if !fill {
				return false
			}
			pr.arc(c.Pos.X.Dots(pr.dpi), c.Pos.Y.Dots(pr.dpi), c.Radius.Dots(pr.dpi), c.Start, c.Start+c.Angle, at, has, moveTo)
			has = true
		case vg.CloseComp:
			if has {
				pr.pts = append(pr.pts, pathPoint{pt: start})
			}
		default:
			return false
		}
	}
	return true
}

// arc adds the quadratic curves gg's DrawArc(x, y, r, angle1, angle2)
// makes (DrawEllipticalArc, with rx = ry = r), computed as it computes
// them (the arithmetic is gg's, git.sr.ht/~sbinet/gg, MIT, after
// fogleman/gg), to pts: after a line to its first point, or from there
// when the path has no current point (has).
func (pr *pathRaster) arc(x, y, r, angle1, angle2 float64, at func(x, y float64) fixed.Point26_6, has bool, moveTo func(fixed.Point26_6)) {
	rx, ry := r, r
	trig := pr.arcTrig(angle1, angle2)
	for i := range arcSegments {
		t := &trig[i]
		x0 := x + rx*t.cos0
		y0 := y + ry*t.sin0
		x1 := x + rx*t.cos1
		y1 := y + ry*t.sin1
		x2 := x + rx*t.cos2
		y2 := y + ry*t.sin2
		cx := 2*x1 - x0/2 - x2/2
		cy := 2*y1 - y0/2 - y2/2
		if i == 0 {
			if has {
				pr.pts = append(pr.pts, pathPoint{pt: at(x0, y0)})
			} else {
				moveTo(at(x0, y0))
			}
		}
		pr.pts = append(pr.pts, pathPoint{pt: at(cx, cy), ctrl: true}, pathPoint{pt: at(x2, y2)})
	}
}

// arcSegments is how many quadratic curves gg makes an arc of.
const arcSegments = 16

// arcAngles are the cosines and sines of the angles of one of an arc's
// curves: where it starts, its middle and where it ends.
type arcAngles struct {
	cos0, sin0, cos1, sin1, cos2, sin2 float64
}

// arcTrig is the cosines and sines of the curves of an arc from angle1
// to angle2, as gg computes them, kept for the next arc between the same
// angles: a figure's arcs are its glyphs, full circles all (the latency
// plot's thousands of points), and their trigonometry was most of
// outlining one.
func (pr *pathRaster) arcTrig(angle1, angle2 float64) *[arcSegments]arcAngles {
	if pr.trig != nil && pr.trigAngles == [2]float64{angle1, angle2} {
		return pr.trig
	}
	t := &[arcSegments]arcAngles{}
	for i := range t {
		p1 := float64(i+0) / arcSegments
		p2 := float64(i+1) / arcSegments
		a1 := angle1 + (angle2-angle1)*p1
		a2 := angle1 + (angle2-angle1)*p2
		t[i] = arcAngles{math.Cos(a1), math.Sin(a1), math.Cos((a1 + a2) / 2), math.Sin((a1 + a2) / 2), math.Cos(a2), math.Sin(a2)}
	}
	pr.trig, pr.trigAngles = t, [2]float64{angle1, angle2}
	return t
}

// bounds picks a rasterizer for the pixels of pts with margin pixels
// around them (and one more) and returns where its origin lies in the
// image; false when that reaches past the image, where gg's rasterizer
// would clip. Its size clips nothing of the path: as wide as the image,
// at least as tall as the path's pixels.
func (pr *pathRaster) bounds(margin int) (x0, y0 int, ok bool) {
	if len(pr.pts) == 0 {
		return 0, 0, false
	}
	lo, hi := pr.pts[0].pt, pr.pts[0].pt
	for _, q := range pr.pts[1:] {
		lo.X, lo.Y = min(lo.X, q.pt.X), min(lo.Y, q.pt.Y)
		hi.X, hi.Y = max(hi.X, q.pt.X), max(hi.Y, q.pt.Y)
	}
	m := margin + 1
	x0, y0 = lo.X.Floor()-m, lo.Y.Floor()-m
	x1, y1 := hi.X.Ceil()+m, hi.Y.Ceil()+m
	b := pr.img.Bounds()
	if x0 < b.Min.X || y0 < b.Min.Y || x1 > b.Max.X || y1 > b.Max.Y {
		return 0, 0, false
	}
	k := bits.Len(uint(y1 - y0 - 1))
	if pr.rs[k] == nil {
		pr.rs[k] = raster.NewRasterizer(b.Dx(), 1<<k)
	}
	pr.r = pr.rs[k]
	pr.r.Clear()
	pr.r.Dx, pr.r.Dy = x0, y0
	pr.r.UseNonZeroWinding = true
	return x0, y0, true
}

// paint draws what the rasterizer holds in the pen's colour, over the
// image, as gg's painter for a solid colour does.
func (pr *pathRaster) paint() {
	pr.p.SetColor(pr.pen.col)
	pr.r.Rasterize(pr.p)
	pr.drawn++
}

// shift moves pt by (-x, -y) whole pixels.
func shift(pt fixed.Point26_6, x, y int) fixed.Point26_6 {
	return fixed.Point26_6{X: pt.X - fixed.Int26_6(x<<6), Y: pt.Y - fixed.Int26_6(y<<6)}
}

func abs26(v fixed.Int26_6) fixed.Int26_6 {
	if v < 0 {
		return -v
	}
	return v
}

// drawText writes str with face at (x, y) in the pen's colour as gg's
// DrawString does on a context whose matrix is the identity (a raster
// figure's, unless it moved: rasterCanvas.Rotate…), pixel for pixel: gg
// places each glyph's mask with its interpolator, bilinear, through a
// transform that is then a move by whole pixels, so that each pixel of
// the glyph is that of its mask, composited over the image in 16 bits a
// channel (x/image/draw's Kernel.transform_Image_Image_Over, with a
// weight of 1), then kept in 8. That general path asks every pixel its
// colour through interfaces, most of the cost of a tall timeline's
// labels; here the arithmetic is done on the pixels. A mask of another
// kind than *image.Alpha goes through the interpolator as in gg.
func (pr *pathRaster) drawText(face xfont.Face, str string, x, y float64) {
	src := image.NewUniform(pr.pen.col)
	cr, cg, cb, ca := pr.pen.col.RGBA()
	dot := fixed.Point26_6{X: fixed.Int26_6(math.Round(x * 64)), Y: fixed.Int26_6(math.Round(y * 64))}
	prev := rune(-1)
	pr.texts++
	for _, c := range str {
		if prev >= 0 {
			dot.X += face.Kern(prev, c)
		}
		dr, mask, maskp, advance, ok := face.Glyph(dot, c)
		if !ok {
			continue
		}
		if a, isAlpha := mask.(*image.Alpha); isAlpha {
			pr.glyphOver(dr, a, maskp, [4]uint32{cr, cg, cb, ca})
		} else {
			s2d := f64.Aff3{1, 0, float64(dr.Min.X), 0, 1, float64(dr.Min.Y)}
			xdraw.BiLinear.Transform(pr.img, s2d, src, dr.Sub(dr.Min), xdraw.Over, &xdraw.Options{SrcMask: mask, SrcMaskP: maskp})
		}
		dot.X += advance
		prev = c
	}
}

// glyphOver composites colour col (premultiplied, 16 bits a channel)
// through mask, whose point maskp lies on dr.Min, over the image, as
// x/image/draw's Kernel does (see drawText).
func (pr *pathRaster) glyphOver(dr image.Rectangle, mask *image.Alpha, maskp image.Point, col [4]uint32) {
	img := pr.img
	r := dr.Intersect(img.Bounds())
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			ma := uint32(mask.AlphaAt(maskp.X+x-dr.Min.X, maskp.Y+y-dr.Min.Y).A) * 0x101
			if ma == 0 {
				continue // the pixel stays as it is
			}
			var p [4]uint32
			for i, c := range col {
				p[i] = c * ma / 0xffff
			}
			for i := range 3 {
				p[i] = min(p[i], p[3]) // the kernel clamps each channel to alpha
			}
			pa1 := 0xffff - p[3]
			o := img.PixOffset(x, y)
			px := img.Pix[o : o+4 : o+4]
			for i := range px {
				q := uint32(px[i]) * 0x101
				px[i] = uint8(uint16(q*pa1/0xffff+p[i]) >> 8)
			}
		}
	}
}
