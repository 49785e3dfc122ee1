package matrix

import (
	"fmt"
	"io"
	"strings"
)

// WriteMarkdown writes the summary a CI step shows ($GITHUB_STEP_SUMMARY):
// the outcome in one line, the cells that missed, the flaky ones with
// their reasons and issues, then the grid of locks × nemesis sets.
func WriteMarkdown(w io.Writer, m Matrix) error {
	var b strings.Builder
	title := "lockharness matrix: " + m.Spec.Name
	if m.Shard != "" {
		title += " (shard " + m.Shard + ")"
	}
	if bs := m.Spec.BackendList(); len(bs) > 1 {
		title += " on " + strings.Join(bs, " and ")
	}
	status := "✅ every cell met its expectation"
	switch m.ExitCode() {
	case 1:
		status = fmt.Sprintf("❌ %d cell(s) missed their expectation", m.Tally.Missed)
	case 2:
		status = fmt.Sprintf("⚠️ %d cell(s) could not be run, %d not run, %d missed", m.Tally.Errors, m.Tally.NotRun, m.Tally.Missed)
	}
	fmt.Fprintf(&b, "## %s\n\n%s. %s.\n\n", title, status, m.Tally)
	if miss := m.Misses(); len(miss) > 0 {
		b.WriteString("### Cells that did not meet their expectation\n\n| cell | expected | got | why | reproduce |\n|---|---|---|---|---|\n")
		for _, c := range miss {
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s | `%s` |\n", c.ID(), orDash(c.Expect), orDash(string(c.Verdict)), mdEscape(c.Explain), mdEscape(c.Command))
		}
		b.WriteString("\n")
	}
	var flaky []CellResult
	for _, c := range m.Cells {
		if c.Outcome == Flaky {
			flaky = append(flaky, c)
		}
	}
	if len(flaky) > 0 {
		b.WriteString("### Flaky (reported, never failing)\n\n| cell | got | reason | issue |\n|---|---|---|---|\n")
		for _, c := range flaky {
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", c.ID(), orDash(string(c.Verdict)), mdEscape(c.Reason), mdEscape(c.Link))
		}
		b.WriteString("\n")
	}
	writeGrid(&b, NewGrid(m))
	_, err := io.WriteString(w, b.String())
	return err
}

// writeGrid writes the grid as the heat map draws it: per lock × nemesis
// set the class's coloured mark, the outcome in words and the verdicts'
// glyphs, then the heat map's legend in the same words.
func writeGrid(b *strings.Builder, g Grid) {
	if len(g.Rows) == 0 {
		return
	}
	b.WriteString("### Outcome against the expectation (as in the heat map)\n\n| lock |")
	for _, col := range g.Cols {
		fmt.Fprintf(b, " %s |", mdEscape(col))
	}
	b.WriteString("\n|---|")
	for range g.Cols {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for i, row := range g.Rows {
		fmt.Fprintf(b, "| %s |", mdEscape(row))
		for j := range g.Cols {
			fmt.Fprintf(b, " %s |", g.Cells[i][j].Markdown())
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
	for _, c := range Classes() {
		fmt.Fprintf(b, "- %s %s\n", classInfo[c].Mark, c.Legend())
	}
	fmt.Fprintf(b, "- %s\n", GlyphLegend)
}
