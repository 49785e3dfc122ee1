package matrix

import (
	"bytes"
	"cmp"
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/reports"
)

// Class is what a cell's outcome means to CI, the colour of its square in
// the heat map and of its mark in summary.md. The order is severity: a
// group of cells takes the most severe class among them, so that one
// missed seed is never hidden behind two met ones.
type Class int

// Classes, least severe first.
const (
	ClassNone    Class = iota // no cell
	ClassMet                  // the verdict is the expected one
	ClassFlaky                // expected to vary: reported, never failing
	ClassUnknown              // could not run: an error, or not run
	ClassNoRule               // no expectation covers it: CI fails until one does
	ClassMissed               // not the expected verdict: CI fails
)

// classInfo is a class's word, its legend line (the same in the picture
// and in summary.md), its colour and its mark in Markdown.
var classInfo = [...]struct {
	Word, Legend, Mark string
	Colour             color.NRGBA
}{
	ClassNone:    {"", "", "", color.NRGBA{0xee, 0xee, 0xee, 0xff}},
	ClassMet:     {"met", "met: the verdict is the expected one", "🟩", color.NRGBA{0xb8, 0xe1, 0xb0, 0xff}},
	ClassFlaky:   {"flaky", "flaky: expected to vary, reported, never fails CI", "🟨", color.NRGBA{0xfd, 0xd8, 0x5a, 0xff}},
	ClassUnknown: {"unknown", "unknown: the cell could not run (error or not run), CI fails", "⬜", color.NRGBA{0xc8, 0xc8, 0xc8, 0xff}},
	ClassNoRule:  {"no rule", "no rule: no expectation covers the cell, CI fails until one does", "🟪", color.NRGBA{0x7b, 0x4f, 0xa6, 0xff}},
	ClassMissed:  {"missed", "missed: not the expected verdict, CI fails", "🟥", color.NRGBA{0xc6, 0x28, 0x28, 0xff}},
}

// String is the class's word: "met", "missed", "flaky", "unknown",
// "no rule".
func (c Class) String() string { return classInfo[c].Word }

// Legend is the class's line in the legend.
func (c Class) Legend() string { return classInfo[c].Legend }

// Classes are the classes a legend lists, in the legend's order (what CI
// does about each, from harmless to failing).
func Classes() []Class {
	return []Class{ClassMet, ClassFlaky, ClassMissed, ClassNoRule, ClassUnknown}
}

// ClassOf is a cell's class, from its outcome against its expectation.
func ClassOf(c CellResult) Class {
	switch c.Outcome {
	case Met:
		return ClassMet
	case Flaky:
		return ClassFlaky
	case Missed:
		if c.Expect == "" {
			return ClassNoRule
		}
		return ClassMissed
	}
	return ClassUnknown // Error, NotRun
}

// Verdict glyphs: what each cell's run said, whatever was expected. They
// are in the plot's font (Liberation, which has no ✓ or ✗), so the
// picture and summary.md show the same marks.
const (
	GlyphValid   = "√"
	GlyphInvalid = "×"
	GlyphUnknown = "?"
	GlyphNone    = "–" // no verdict: the cell could not run
)

// GlyphLegend explains the glyphs, in the picture and in summary.md.
const GlyphLegend = "in each cell, one glyph per run: " + GlyphValid + " valid · " + GlyphInvalid + " invalid · " +
	GlyphUnknown + " unknown verdict · " + GlyphNone + " no verdict"

// glyph is a verdict's glyph.
func glyph(v checker.Verdict) string {
	switch v {
	case checker.Valid:
		return GlyphValid
	case checker.Invalid:
		return GlyphInvalid
	case "":
		return GlyphNone
	}
	return GlyphUnknown
}

// GridCell gathers the cells of one lock × nemesis set (its seeds or
// repetitions): how many of each class, and each run's verdict glyph.
type GridCell struct {
	Cells   int
	Classes [ClassMissed + 1]int
	// Glyphs holds one verdict glyph per cell, in seed order.
	Glyphs []string
}

// Class is the group's class: its most severe cell's.
func (g GridCell) Class() Class {
	for c := ClassMissed; c > ClassNone; c-- {
		if g.Classes[c] > 0 {
			return c
		}
	}
	return ClassNone
}

// Outcome says in words how the group's cells fared against their
// expectations: "met 3/3", or for a mixed group "missed 1/3, met 2/3"
// (most severe first).
func (g GridCell) Outcome() string {
	var parts []string
	for c := ClassMissed; c > ClassNone; c-- {
		if n := g.Classes[c]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d/%d", c, n, g.Cells))
		}
	}
	return strings.Join(parts, ", ")
}

// Verdicts is the glyphs of the group's runs, "× × √"; past eight runs,
// counts instead ("7× 3√").
func (g GridCell) Verdicts() string {
	if len(g.Glyphs) <= 8 {
		return strings.Join(g.Glyphs, " ")
	}
	var parts []string
	for _, gl := range []string{GlyphInvalid, GlyphUnknown, GlyphNone, GlyphValid} {
		if n := countOf(g.Glyphs, gl); n > 0 {
			parts = append(parts, fmt.Sprintf("%d%s", n, gl))
		}
	}
	return strings.Join(parts, " ")
}

func countOf(list []string, s string) int {
	n := 0
	for _, x := range list {
		if x == s {
			n++
		}
	}
	return n
}

// Markdown is the group's table cell in summary.md: the class's coloured
// mark, the outcome in words and the verdict glyphs.
func (g GridCell) Markdown() string {
	if g.Cells == 0 {
		return ""
	}
	return classInfo[g.Class()].Mark + " " + g.Outcome() + " · " + g.Verdicts()
}

// Grid is the matrix folded into rows (locks, or scenarios, per backend
// when there are several) × columns (nemesis sets), in the matrix's order.
type Grid struct {
	Rows, Cols []string
	Cells      [][]GridCell
}

// rowOf is a cell's row: its lock, or its scenario, and in a matrix of
// several backends the backend ("token (docker)"), so that one lock's
// rows side by side compare the backends.
func rowOf(c Cell, backends bool) string {
	row := c.Lock
	if c.Scenario != "" {
		row = "scenario " + c.Scenario
	}
	if backends {
		b := c.Backend
		if b == "" {
			b = DefaultBackend
		}
		row += " (" + b + ")"
	}
	return row
}

// NewGrid folds a matrix into its grid.
func NewGrid(m Matrix) Grid {
	var g Grid
	backends := len(m.Spec.BackendList()) > 1
	// Rows in the matrix's order but for the backend, which comes last:
	// a lock's backends are neighbours.
	byRow := slices.Clone(m.Cells)
	slices.SortStableFunc(byRow, func(a, b CellResult) int {
		return cmp.Or(cmp.Compare(b2i(a.Scenario != ""), b2i(b.Scenario != "")),
			cmp.Compare(a.Scenario, b.Scenario), cmp.Compare(a.Lock, b.Lock), cmp.Compare(a.Backend, b.Backend))
	})
	for _, c := range byRow {
		if r := rowOf(c.Cell, backends); !slices.Contains(g.Rows, r) {
			g.Rows = append(g.Rows, r)
		}
	}
	for _, c := range m.Cells {
		if col := c.NemesisSet(); !slices.Contains(g.Cols, col) {
			g.Cols = append(g.Cols, col)
		}
	}
	slices.Sort(g.Cols)
	g.Cells = make([][]GridCell, len(g.Rows))
	for i := range g.Cells {
		g.Cells[i] = make([]GridCell, len(g.Cols))
	}
	for _, c := range m.Cells {
		gc := &g.Cells[slices.Index(g.Rows, rowOf(c.Cell, backends))][slices.Index(g.Cols, c.NemesisSet())]
		gc.Cells++
		gc.Classes[ClassOf(c)]++
		gc.Glyphs = append(gc.Glyphs, glyph(c.Verdict))
	}
	return g
}

var (
	colHatch = color.NRGBA{0x70, 0x70, 0x70, 0xff}
	colGrid  = color.NRGBA{0xff, 0xff, 0xff, 0xff}
)

func box(x0, x1, y0, y1 float64) plotter.XYs {
	return plotter.XYs{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}}
}

// HeatMap draws the grid: one square per lock × nemesis set coloured by
// its outcome against the expectation (met, flaky, missed, no rule,
// unknown: what CI does about it), with the runs' verdicts as glyphs and
// the outcome in words inside. The legend is drawn under it by
// WriteHeatMap; w and h are the plot's own size.
func HeatMap(m Matrix) (*plot.Plot, vg.Length, vg.Length, error) {
	g := NewGrid(m)
	p := plot.New()
	p.Title.Text = "outcome against the expectation, per lock × nemesis set (" + m.Spec.Name + ")"
	if m.Shard != "" {
		p.Title.Text += " (shard " + m.Shard + ")"
	}
	p.Title.TextStyle.Font.Size = 14
	for i := range g.Rows {
		y := float64(len(g.Rows) - 1 - i) // first row on top
		for j := range g.Cols {
			if err := addGridCell(p, g.Cells[i][j], float64(j), y); err != nil {
				return nil, 0, 0, err
			}
		}
	}
	rows := make([]string, len(g.Rows))
	for i, r := range g.Rows {
		rows[len(g.Rows)-1-i] = r
	}
	p.NominalX(g.Cols...)
	p.NominalY(rows...)
	p.X.Min, p.X.Max = -0.5, float64(len(g.Cols))-0.5
	p.Y.Min, p.Y.Max = -0.5, float64(len(g.Rows))-0.5
	p.X.Tick.Label.Font.Size, p.Y.Tick.Label.Font.Size = 12, 12
	longest := 0
	for _, r := range g.Rows {
		longest = max(longest, len(r))
	}
	w := vg.Length(longest)*7 + vg.Length(max(len(g.Cols), 4))*120 + 60
	h := vg.Length(len(g.Rows))*62 + 80
	return p, w, h, nil
}

// addGridCell draws grid cell gc as the square centred on (x, y): filled
// with its class's colour, hatched when a cell could not run, and
// labelled with its verdicts and its outcome in words.
func addGridCell(p *plot.Plot, gc GridCell, x, y float64) error {
	cls := gc.Class()
	sq, err := plotter.NewPolygon(box(x-0.5, x+0.5, y-0.5, y+0.5))
	if err != nil {
		return err
	}
	sq.Color, sq.LineStyle.Color, sq.LineStyle.Width = classInfo[cls].Colour, colGrid, vg.Points(3)
	p.Add(sq)
	if gc.Classes[ClassUnknown] > 0 {
		if err := addHatching(p, x, y); err != nil {
			return err
		}
	}
	if gc.Cells == 0 {
		return nil
	}
	lb, err := plotter.NewLabels(plotter.XYLabels{
		XYs:    plotter.XYs{{X: x, Y: y + 0.12}, {X: x, Y: y - 0.2}},
		Labels: []string{gc.Verdicts(), gc.Outcome()},
	})
	if err != nil {
		return err
	}
	for k := range lb.TextStyle {
		lb.TextStyle[k].Font.Size = [...]vg.Length{18, 11}[k]
		lb.TextStyle[k].XAlign, lb.TextStyle[k].YAlign = draw.XCenter, draw.YCenter
		if cls == ClassMissed || cls == ClassNoRule {
			lb.TextStyle[k].Color = color.White // readable on red and purple
		}
	}
	p.Add(lb)
	return nil
}

// legendRow is the height of one line of the legend.
const legendRow = vg.Length(19)

// legendHeight is the height of the legend under the plot: a line per
// class, the glyphs' line, and a margin.
func legendHeight() vg.Length { return legendRow*vg.Length(len(Classes())+1) + 16 }

// drawLegend draws the legend in c: a swatch and its words per class, then
// what the glyphs mean, in 12-point type (the plot's tick labels' size).
func drawLegend(c draw.Canvas) {
	sty := draw.TextStyle{Color: color.Black, Font: font.From(plot.DefaultFont, 12), Handler: plot.DefaultTextHandler,
		YAlign: draw.YCenter}
	x0 := c.Min.X + 16
	y := c.Max.Y - legendRow/2 - 4
	for _, cls := range Classes() {
		sw := []vg.Point{{X: x0, Y: y - 6}, {X: x0 + 24, Y: y - 6}, {X: x0 + 24, Y: y + 6}, {X: x0, Y: y + 6}}
		c.FillPolygon(classInfo[cls].Colour, sw)
		c.StrokeLines(draw.LineStyle{Color: colHatch, Width: vg.Points(0.5)}, append(sw, sw[0]))
		c.FillText(sty, vg.Point{X: x0 + 32, Y: y}, cls.Legend())
		y -= legendRow
	}
	c.FillText(sty, vg.Point{X: x0, Y: y}, GlyphLegend)
}

// addHatching draws diagonal hatching on the square centred on (x, y),
// clipped to it.
func addHatching(p *plot.Plot, x, y float64) error {
	for k := -0.9; k < 1; k += 0.15 {
		x0, x1 := x-0.5+max(k, 0), x+0.5+min(k, 0)
		y0, y1 := y-0.5+(x0-(x-0.5+k)), y-0.5+(x1-(x-0.5+k))
		l, err := plotter.NewLine(plotter.XYs{{X: x0, Y: y0}, {X: x1, Y: y1}})
		if err != nil {
			return err
		}
		l.LineStyle.Color, l.LineStyle.Width = colHatch, vg.Points(0.5)
		p.Add(l)
	}
	return nil
}

// WriteHeatMap writes the heat map with its legend under it as PNG and SVG
// into dir.
func WriteHeatMap(dir string, m Matrix) error {
	if len(m.Cells) == 0 {
		return nil
	}
	p, w, h, err := HeatMap(m)
	if err != nil {
		return fmt.Errorf("heat map: %w", err)
	}
	lh := legendHeight()
	w = max(w, 560) // the legend's longest line
	for _, name := range []string{HeatmapPNG, HeatmapSVG} {
		c, err := draw.NewFormattedCanvas(w, h+lh, strings.TrimPrefix(filepath.Ext(name), "."))
		if err != nil {
			return fmt.Errorf("heat map: %w", err)
		}
		dc := draw.New(c)
		p.Draw(draw.Crop(dc, 0, 0, lh, 0))
		drawLegend(draw.Crop(dc, 0, 0, 0, -h))
		var b bytes.Buffer
		if _, err := c.WriteTo(&b); err != nil {
			return fmt.Errorf("heat map: %w", err)
		}
		if err := writeFileAtomic(filepath.Join(dir, name), b.Bytes()); err != nil {
			return fmt.Errorf("heat map: %w", err)
		}
	}
	return nil
}

// WriteOutputs writes matrix.json, junit.xml, summary.md and the heat map
// into store/<name>/, and returns that directory.
func WriteOutputs(store string, m Matrix) (string, error) {
	if err := reports.CheckName("matrix", m.Spec.Name); err != nil {
		return "", err
	}
	dir := filepath.Join(store, m.Spec.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("matrix outputs: %w (choose another --store)", err)
	}
	if err := m.WriteJSON(dir); err != nil {
		return "", err
	}
	for _, out := range []struct {
		name  string
		write func(*strings.Builder) error
	}{
		{JUnitFile, func(b *strings.Builder) error { return WriteJUnit(b, m) }},
		{SummaryFile, func(b *strings.Builder) error { return WriteMarkdown(b, m) }},
	} {
		var b strings.Builder
		if err := out.write(&b); err != nil {
			return "", err
		}
		if err := writeFileAtomic(filepath.Join(dir, out.name), []byte(b.String())); err != nil {
			return "", err
		}
	}
	if err := WriteHeatMap(dir, m); err != nil {
		return "", err
	}
	return dir, nil
}

// writeFileAtomic writes b to file through a temporary file and a rename.
func writeFileAtomic(file string, b []byte) error {
	// A temporary file of its own (O_EXCL, a random name): a fixed name
	// planted as a symbolic link would be written through, outside dir.
	f, err := os.CreateTemp(filepath.Dir(file), "."+filepath.Base(file)+".*.tmp")
	if err != nil {
		return fmt.Errorf("write %s: %w", file, err)
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(f.Name(), file)
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return fmt.Errorf("write %s: %w", file, err)
	}
	return nil
}

// WriteFileAtomic is writeFileAtomic for the command line's copies
// (--junit, --summary).
func WriteFileAtomic(file string, b []byte) error { return writeFileAtomic(file, b) }
