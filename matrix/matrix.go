package matrix

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/inputfile"
	"github.com/lockharness/lockharness/reports"
)

// Outcome is how a cell fared against its expectation.
type Outcome string

// Outcomes.
const (
	Met    Outcome = "met"     // the verdict is what was expected
	Missed Outcome = "missed"  // it is not: the nightly fails, naming the cell
	Flaky  Outcome = "flaky"   // expected to vary: reported, never failing
	Error  Outcome = "error"   // the run could not be carried out
	NotRun Outcome = "not-run" // interrupted before it, or no shard ran it
)

// CellMarker is the file the matrix writes into a cell's run directory once
// the run has finished and been checked: the cell is done, and a re-run of
// the matrix (or a merge) takes its results from that directory. An
// interrupted run has results.json but no marker, so it is run again.
const CellMarker = "matrix-cell.json"

// Output file names in store/<matrix name>/.
const (
	JSONFile    = "matrix.json"
	JUnitFile   = "junit.xml"
	SummaryFile = "summary.md"
	HeatmapPNG  = "heatmap.png"
	HeatmapSVG  = "heatmap.svg"
)

// CellResult is one cell of matrix.json: what ran, what it found, what was
// expected and whether that held.
type CellResult struct {
	Cell
	// Test is the cell's directory of the store; Dir its run, relative
	// to the store ("<test>/<timestamp>").
	Test string `json:"test"`
	Dir  string `json:"dir,omitempty"`
	// Verdict is the run's verdict; Checkers each checker's (scenario
	// cells are judged on those).
	Verdict  checker.Verdict            `json:"verdict,omitempty"`
	Checkers map[string]checker.Verdict `json:"checkers,omitempty"`
	// Catalogued is a scenario's expected verdict per checker.
	Catalogued map[string]string `json:"catalogued,omitempty"`
	// Headline is the most telling violation, or why the verdict is
	// unknown.
	Headline string `json:"headline,omitempty"`
	// Error is why the run could not be carried out.
	Error string `json:"error,omitempty"`
	Expectation
	Outcome Outcome `json:"outcome"`
	// Explain says in one line why the outcome is what it is.
	Explain string `json:"explain,omitempty"`
	// Command reproduces the cell alone.
	Command string `json:"command"`
	// Seconds is the run's wall time; it is not part of the comparison
	// of two matrices (see Canonical).
	Seconds float64 `json:"seconds,omitempty"`
}

// FromResults fills a cell's result from its run's results.json.
func FromResults(c Cell, dir string, res reports.Results) CellResult {
	r := CellResult{Cell: c, Test: c.TestName(), Dir: dir, Verdict: res.Verdict, Command: res.Meta.Command,
		Seconds: res.Meta.Duration.Seconds()}
	if len(res.Checkers) > 0 {
		r.Checkers = map[string]checker.Verdict{}
		for n, cr := range res.Checkers {
			r.Checkers[n] = cr.Verdict
		}
	}
	if c.Scenario != "" && len(res.Meta.Expected) > 0 {
		r.Catalogued = res.Meta.Expected
	}
	r.Headline = Headline(res.Result)
	return r
}

// Headline is the one line a failure message leads with: the most telling
// fatal violation, else why the verdict is unknown.
func Headline(res checker.Result) string {
	for _, i := range reports.MostTelling(res.Violations) {
		if v := res.Violations[i]; v.Fatal {
			return v.Description
		}
	}
	if res.Verdict == checker.Valid {
		return ""
	}
	names := make([]string, 0, len(res.Checkers))
	for n := range res.Checkers {
		names = append(names, n)
	}
	sort.Strings(names)
	var why []string
	for _, n := range names {
		if c := res.Checkers[n]; c.Verdict != checker.Valid && c.Reason != "" {
			why = append(why, n+": "+c.Reason)
		}
	}
	return strings.Join(why, "; ")
}

// Judge sets the outcome of a cell from its verdict and expectation. Only
// the verdict counts: a vacuous run (nothing exercised) is not valid, so
// it meets neither valid nor invalid.
func (r *CellResult) Judge() {
	got := string(r.Verdict)
	switch {
	case r.Error != "":
		r.Outcome, r.Explain = Error, r.Error
	case r.Verdict == "":
		r.Outcome, r.Explain = NotRun, "not run"
	case r.Expect == ExpectFlaky:
		r.Outcome, r.Explain = Flaky, fmt.Sprintf("%s (flaky: %s, %s)", got, r.Reason, r.Link)
	case r.Expect == "":
		r.Outcome, r.Explain = Missed, fmt.Sprintf("no rule of the expectations file matches this cell (got %s): add one", got)
	case r.Expect == ExpectCatalogued:
		var diff []string
		names := make([]string, 0, len(r.Catalogued))
		for n := range r.Catalogued {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			if string(r.Checkers[n]) != r.Catalogued[n] {
				diff = append(diff, fmt.Sprintf("%s expected %s, got %s", n, r.Catalogued[n], orDash(string(r.Checkers[n]))))
			}
		}
		if len(r.Catalogued) == 0 {
			diff = append(diff, "the run recorded no catalogued expectation")
		}
		if len(diff) == 0 {
			r.Outcome, r.Explain = Met, "as catalogued"
		} else {
			r.Outcome, r.Explain = Missed, strings.Join(diff, "; ")
		}
	case got == r.Expect:
		r.Outcome, r.Explain = Met, got+" as expected"
	default:
		r.Outcome, r.Explain = Missed, fmt.Sprintf("expected %s, got %s", r.Expect, got)
		if r.Headline != "" {
			r.Explain += ": " + r.Headline
		}
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// Tally counts a matrix's cells by verdict and by outcome.
type Tally struct {
	Cells   int `json:"cells"`
	Valid   int `json:"valid"`
	Invalid int `json:"invalid"`
	Unknown int `json:"unknown"`
	Met     int `json:"met"`
	Missed  int `json:"missed"`
	Flaky   int `json:"flaky"`
	Errors  int `json:"errors"`
	NotRun  int `json:"not_run"`
}

// Add counts one cell.
func (t *Tally) Add(r CellResult) {
	t.Cells++
	switch r.Verdict {
	case checker.Valid:
		t.Valid++
	case checker.Invalid:
		t.Invalid++
	case "":
	default:
		t.Unknown++
	}
	switch r.Outcome {
	case Met:
		t.Met++
	case Missed:
		t.Missed++
	case Flaky:
		t.Flaky++
	case Error:
		t.Errors++
	case NotRun:
		t.NotRun++
	}
}

func (t Tally) String() string {
	s := fmt.Sprintf("%d cells: %d valid, %d invalid, %d unknown; %d as expected, %d missed, %d flaky",
		t.Cells, t.Valid, t.Invalid, t.Unknown, t.Met, t.Missed, t.Flaky)
	if t.Errors > 0 {
		s += fmt.Sprintf(", %d errors", t.Errors)
	}
	if t.NotRun > 0 {
		s += fmt.Sprintf(", %d not run", t.NotRun)
	}
	return s
}

// Matrix is matrix.json.
type Matrix struct {
	Spec Spec `json:"spec"`
	// Shard is the share of the cells this matrix holds ("" for all).
	Shard string       `json:"shard,omitempty"`
	Cells []CellResult `json:"cells"`
	Tally Tally        `json:"tally"`
	// WallSeconds is how long the command ran (not part of Canonical).
	WallSeconds float64 `json:"wall_seconds,omitempty"`
}

// Build judges the results and tallies them, in the matrix's order.
func Build(spec Spec, shard Shard, results []CellResult) Matrix {
	spec.upgrade()
	m := Matrix{Spec: spec, Shard: shard.String(), Cells: slices.Clone(results)}
	slices.SortStableFunc(m.Cells, func(a, b CellResult) int { return compareCells(a.Cell, b.Cell) })
	for i := range m.Cells {
		m.Cells[i].Expectation = spec.Expect.For(m.Cells[i].Cell)
		m.Cells[i].Judge()
		m.Tally.Add(m.Cells[i])
	}
	return m
}

// Exit codes of a matrix: 0 every cell met its expectation (flaky ones
// aside), 1 one did not, 2 a cell could not be run (errors outrank misses:
// the matrix cannot vouch for anything then).
func (m Matrix) ExitCode() int {
	switch {
	case m.Tally.Errors > 0 || m.Tally.NotRun > 0:
		return 2
	case m.Tally.Missed > 0:
		return 1
	}
	return 0
}

// Misses are the cells that did not meet their expectation.
func (m Matrix) Misses() []CellResult {
	var out []CellResult
	for _, c := range m.Cells {
		if c.Outcome == Missed || c.Outcome == Error || c.Outcome == NotRun {
			out = append(out, c)
		}
	}
	return out
}

// Canonical is matrix.json without what differs between two executions of
// the same matrix that found the same things: wall times, the run
// directories' timestamps and the shard. Two shards merged and one
// unsharded run give byte-identical canonical forms.
func (m Matrix) Canonical() ([]byte, error) {
	m.Shard, m.WallSeconds = "", 0
	m.Cells = slices.Clone(m.Cells)
	for i := range m.Cells {
		m.Cells[i].Seconds, m.Cells[i].Dir = 0, ""
	}
	return json.MarshalIndent(m, "", "  ")
}

// WriteJSON writes matrix.json into dir, atomically.
func (m Matrix) WriteJSON(dir string) error {
	return reports.WriteJSON(dir, JSONFile, m)
}

// MaxJSONSize bounds a matrix.json read back (a shard's, for a merge, or
// the store's): MaxCells cells of a few kilobytes each.
const MaxJSONSize = 64 << 20

// ReadJSON reads a matrix.json: a regular file of at most MaxJSONSize
// (inputfile), parsed by ParseJSON.
func ReadJSON(file string) (Matrix, error) {
	b, err := inputfile.Read(context.Background(), file, inputfile.Kind{Name: "matrix.json", Max: MaxJSONSize})
	if err != nil {
		return Matrix{}, err
	}
	m, err := ParseJSON(b)
	if err != nil {
		return Matrix{}, fmt.Errorf("read matrix %s: %w", file, err)
	}
	return m, nil
}

// ParseJSON parses a matrix.json, its spec upgraded from an older one and
// no larger than a matrix runs (checkSize): a shard's is data from outside.
func ParseJSON(b []byte) (Matrix, error) {
	var m Matrix
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&m); err != nil {
		return Matrix{}, err
	}
	m.Spec.upgrade()
	if err := m.Spec.checkSize(); err != nil {
		return Matrix{}, err
	}
	return m, nil
}

// Lookup finds cell c's finished run in the store: the newest run
// directory of its test that carries the cell marker. ok is false when
// the cell has not been run to the end.
func Lookup(store string, c Cell) (res CellResult, ok bool, err error) {
	test := c.TestName()
	runs, err := os.ReadDir(filepath.Join(store, test))
	if errors.Is(err, fs.ErrNotExist) {
		return res, false, nil
	}
	if err != nil {
		return res, false, fmt.Errorf("read store: %w", err)
	}
	for i := len(runs) - 1; i >= 0; i-- { // names are timestamps: newest last
		d := runs[i]
		if !d.IsDir() || strings.HasPrefix(d.Name(), ".") {
			continue
		}
		dir := filepath.Join(store, test, d.Name())
		if _, err := os.Stat(filepath.Join(dir, CellMarker)); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, reports.ResultsFile))
		if err != nil {
			continue
		}
		var r reports.Results
		if err := json.Unmarshal(b, &r); err != nil {
			return res, false, fmt.Errorf("%s: %w", filepath.Join(dir, reports.ResultsFile), err)
		}
		return FromResults(c, test+"/"+d.Name(), r), true, nil
	}
	return res, false, nil
}

// MarkDone writes the cell marker into a finished run's directory.
func MarkDone(runDir string, c Cell) error {
	return reports.WriteJSON(runDir, CellMarker, c)
}
