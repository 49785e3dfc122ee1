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
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/lockharness/lockharness/reports"
)

// GridCell gathers the cells of one lock × nemesis set (its seeds or
// repetitions).
type GridCell struct {
	Cells, Judged, Invalid, Unknown int
	// Missed counts cells that missed their expectation, errors and
	// cells not run included: the group is outlined.
	Missed int
	Flaky  int
}

// Rate is the violation rate: invalid cells over cells with a verdict.
func (g GridCell) Rate() float64 {
	if g.Judged == 0 {
		return 0
	}
	return float64(g.Invalid) / float64(g.Judged)
}

// Label is the cell's text: "2/3" invalid of judged, "?1" unknown, and in
// markdown "✗" where an expectation was missed.
func (g GridCell) Label(markdown bool) string {
	if g.Cells == 0 {
		return ""
	}
	s := fmt.Sprintf("%d/%d", g.Invalid, g.Judged)
	if g.Unknown > 0 {
		s += fmt.Sprintf(" ?%d", g.Unknown)
	}
	if g.Flaky > 0 {
		s += " ~"
	}
	if markdown && g.Missed > 0 {
		s += " ✗"
	}
	return s
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
		if c.Verdict != "" {
			gc.Judged++
		}
		switch c.Verdict {
		case "invalid":
			gc.Invalid++
		case "valid", "":
		default:
			gc.Unknown++
		}
		switch c.Outcome {
		case Missed, Error, NotRun:
			gc.Missed++
		case Flaky:
			gc.Flaky++
		}
	}
	return g
}

var (
	colEmpty   = color.NRGBA{0xee, 0xee, 0xee, 0xff}
	colOutline = color.NRGBA{0x15, 0x3e, 0xa8, 0xff}
	colHatch   = color.NRGBA{0x70, 0x70, 0x70, 0xff}
	colGrid    = color.NRGBA{0xff, 0xff, 0xff, 0xff}
)

// rateColour goes from pale green (0: no violation) through yellow to
// deep red (1: every cell invalid).
func rateColour(r float64) color.Color {
	lerp := func(a, b uint8, t float64) uint8 { return uint8(float64(a) + (float64(b)-float64(a))*t) }
	if r <= 0.5 {
		t := r / 0.5
		return color.NRGBA{lerp(0xd9, 0xfb, t), lerp(0xf0, 0xc0, t), lerp(0xd3, 0x5e, t), 0xff}
	}
	t := (r - 0.5) / 0.5
	return color.NRGBA{lerp(0xfb, 0xb7, t), lerp(0xc0, 0x1c, t), lerp(0x5e, 0x1c, t), 0xff}
}

func box(x0, x1, y0, y1 float64) plotter.XYs {
	return plotter.XYs{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}}
}

// HeatMap draws the grid: one square per lock × nemesis set coloured by
// its violation rate, labelled "invalid/judged" (and "?n" unknown, which
// are also hatched), outlined in blue where an expectation was missed.
func HeatMap(m Matrix) (*plot.Plot, vg.Length, vg.Length, error) {
	g := NewGrid(m)
	p := plot.New()
	p.Title.Text = "violation rate per lock × nemesis set (" + m.Spec.Name + ")"
	if m.Shard != "" {
		p.Title.Text += " (shard " + m.Shard + ")"
	}
	p.X.Label.Text = "label: invalid/cells · ?n unknown (hatched) · ~ flaky · blue outline: expectation missed"
	p.X.Label.TextStyle.Font.Size = 9
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
	p.X.Tick.Label.Font.Size, p.Y.Tick.Label.Font.Size = 11, 11
	longest := 0
	for _, r := range g.Rows {
		longest = max(longest, len(r))
	}
	w := vg.Length(longest)*6 + vg.Length(max(len(g.Cols), 4))*95 + 60
	h := vg.Length(len(g.Rows))*55 + 110
	return p, w, h, nil
}

// addGridCell draws grid cell gc as the square centred on (x, y): filled
// with its rate's colour, hatched when some runs were unknown, outlined
// when an expectation was missed, and labelled.
func addGridCell(p *plot.Plot, gc GridCell, x, y float64) error {
	fill := colEmpty
	var fc color.Color = fill
	if gc.Judged > 0 {
		fc = rateColour(gc.Rate())
	}
	sq, err := plotter.NewPolygon(box(x-0.5, x+0.5, y-0.5, y+0.5))
	if err != nil {
		return err
	}
	sq.Color, sq.LineStyle.Color, sq.LineStyle.Width = fc, colGrid, vg.Points(2)
	p.Add(sq)
	if gc.Unknown > 0 {
		if err := addHatching(p, x, y); err != nil {
			return err
		}
	}
	if gc.Missed > 0 {
		ol, err := plotter.NewPolygon(box(x-0.44, x+0.44, y-0.44, y+0.44))
		if err != nil {
			return err
		}
		ol.Color, ol.LineStyle.Color, ol.LineStyle.Width = nil, colOutline, vg.Points(4)
		p.Add(ol)
	}
	if gc.Cells > 0 {
		lb, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{{X: x, Y: y}}, Labels: []string{gc.Label(false)}})
		if err != nil {
			return err
		}
		for k := range lb.TextStyle {
			lb.TextStyle[k].Font.Size = 13
			lb.TextStyle[k].XAlign, lb.TextStyle[k].YAlign = draw.XCenter, draw.YCenter
			if gc.Judged > 0 && gc.Rate() > 0.6 {
				lb.TextStyle[k].Color = color.White // readable on deep red
			}
		}
		p.Add(lb)
	}
	return nil
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

// WriteHeatMap writes the heat map as PNG and SVG into dir.
func WriteHeatMap(dir string, m Matrix) error {
	if len(m.Cells) == 0 {
		return nil
	}
	p, w, h, err := HeatMap(m)
	if err != nil {
		return fmt.Errorf("heat map: %w", err)
	}
	for _, name := range []string{HeatmapPNG, HeatmapSVG} {
		wt, err := p.WriterTo(w, h, strings.TrimPrefix(filepath.Ext(name), "."))
		if err != nil {
			return fmt.Errorf("heat map: %w", err)
		}
		var b bytes.Buffer
		if _, err := wt.WriteTo(&b); err != nil {
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
