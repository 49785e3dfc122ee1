package matrix

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/reports"

	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/nemesis"
)

func testSpec() Spec {
	return Spec{Name: "matrix", Backends: []string{DefaultBackend}, Locks: []string{"token", "redlock", "set-nx-ex"},
		Nemeses: ParseNemesisSets([]string{"partition", "clock+kill"}), Seeds: SeedRange(3), Run: DefaultRunParams()}
}

func TestCellsAreSortedAndNamedForTheStore(t *testing.T) {
	cells := testSpec().Cells()
	if len(cells) != 3*2*3 {
		t.Fatalf("got %d cells, want 18", len(cells))
	}
	if got := cells[0].ID(); got != "redlock/clock+kill/seed-1" {
		t.Errorf("first cell %s", got)
	}
	seen := map[string]bool{}
	for _, c := range cells {
		name := c.TestName()
		if seen[name] {
			t.Errorf("two cells share the store name %s", name)
		}
		seen[name] = true
		if _, err := reports.NewRunDir(t.TempDir(), name, time.Now()); err != nil {
			t.Errorf("store refuses %s: %v", name, err)
		}
	}
	if got := (Cell{Backend: "local", Lock: "set-nx-ex", Nemeses: []string{"clock", "kill"}, Seed: 12}).TestName(); got != "matrix.set-nx-ex.clock_kill.seed-12" {
		t.Errorf("test name %s", got)
	}
	// Seeds sort as numbers, not strings.
	s := testSpec()
	s.Seeds = SeedRange(11)
	var seeds []uint64
	for _, c := range s.Cells() {
		if c.Lock == "token" && c.NemesisSet() == "partition" {
			seeds = append(seeds, c.Seed)
		}
	}
	if !slices.IsSorted(seeds) {
		t.Errorf("seeds out of order: %v", seeds)
	}
}

func TestShardsPartitionTheCells(t *testing.T) {
	cells := testSpec().Cells()
	for n := 1; n <= 7; n++ {
		var union []string
		for i := 1; i <= n; i++ {
			sh, err := ParseShard(fmt.Sprintf("%d/%d", i, n))
			if err != nil {
				t.Fatal(err)
			}
			part := sh.Select(cells)
			if len(part) < len(cells)/n || len(part) > len(cells)/n+1 {
				t.Errorf("shard %s has %d of %d cells: unbalanced", sh, len(part), len(cells))
			}
			for _, c := range part {
				union = append(union, c.ID())
			}
		}
		slices.Sort(union)
		var want []string
		for _, c := range cells {
			want = append(want, c.ID())
		}
		slices.Sort(want)
		if !slices.Equal(union, want) {
			t.Errorf("%d shards: union of the shards is not the matrix (%d vs %d cells)", n, len(union), len(want))
		}
	}
	// The split does not depend on the order the cells came in.
	rev := slices.Clone(cells)
	slices.Reverse(rev)
	a, b := Shard{2, 4}.Select(cells), Shard{2, 4}.Select(rev)
	if !slices.EqualFunc(a, b, func(x, y Cell) bool { return x.ID() == y.ID() }) {
		t.Error("shard 2/4 depends on the input order")
	}
	for _, bad := range []string{"0/3", "4/3", "1/0", "a/b", "3", "-1/2"} {
		if _, err := ParseShard(bad); err == nil {
			t.Errorf("shard %q accepted", bad)
		}
	}
}

const testRules = `
rules:
  - lock: redlock
    nemeses: "*clock*"
    seed: "2"
    expect: flaky
    reason: a clock jump on a minority breaks quorum only with some schedules
    link: https://github.com/lockharness/lockharness/issues/99
  - lock: redlock
    expect: valid
  - nemeses: clock*
    expect: invalid
  - lock: "set-*"
    expect: invalid
  - scenario: redlock-*
    expect: valid
`

func TestExpectationsFirstMatchWins(t *testing.T) {
	e, err := ParseExpectations([]byte(testRules))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		cell Cell
		want string
		rule int
	}{
		{Cell{Backend: "local", Lock: "redlock", Nemeses: []string{"clock", "kill"}, Seed: 2}, ExpectFlaky, 1},
		{Cell{Backend: "local", Lock: "redlock", Nemeses: []string{"clock", "kill"}, Seed: 3}, ExpectValid, 2},
		{Cell{Backend: "local", Lock: "token", Nemeses: []string{"clock", "kill"}, Seed: 1}, ExpectInvalid, 3},
		{Cell{Backend: "local", Lock: "set-nx-ex", Nemeses: []string{"partition"}, Seed: 1}, ExpectInvalid, 4},
		{Cell{Backend: "local", Lock: "token", Nemeses: []string{"partition"}, Seed: 1}, "", 0}, // no rule: a miss
		{Cell{Backend: "local", Lock: "redlock", Scenario: "redlock-clock-jump", Repeat: 1}, ExpectValid, 5},
		{Cell{Backend: "local", Lock: "token", Scenario: "token-pause", Repeat: 1}, ExpectCatalogued, 0},
	}
	for _, c := range cases {
		got := e.For(c.cell)
		if got.Expect != c.want || got.Rule != c.rule {
			t.Errorf("%s: got %q (rule %d), want %q (rule %d)", c.cell.ID(), got.Expect, got.Rule, c.want, c.rule)
		}
	}
	if got := (Expectations{}).For(cases[2].cell); got.Expect != ExpectValid {
		t.Errorf("without a file every lock cell must be valid, got %q", got.Expect)
	}
}

func TestExpectationsRejectBadFiles(t *testing.T) {
	for name, src := range map[string]string{
		"unknown field":     "rules:\n  - lock: token\n    expected: valid\n",
		"no expect":         "rules:\n  - lock: token\n",
		"bad verdict":       "rules:\n  - lock: token\n    expect: safe\n",
		"flaky without why": "rules:\n  - lock: token\n    expect: flaky\n",
		"flaky no link":     "rules:\n  - lock: token\n    expect: flaky\n    reason: x\n",
		"bad glob":          "rules:\n  - lock: \"[\"\n    expect: valid\n",
		"not yaml":          "rules: [",
	} {
		if _, err := ParseExpectations([]byte(src)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestShippedExpectationsParse(t *testing.T) {
	e, err := ReadExpectations(context.Background(), "expectations.yaml", KnownNames(locks.Builtin(), nemesis.Builtin()))
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Rules) == 0 {
		t.Fatal("no rules")
	}
	// Every cell of the nightly matrix has a rule: nothing is left to a
	// default.
	s := Spec{Name: "matrix", Backends: []string{DefaultBackend}, Locks: []string{"token", "fenced", "redlock", "redsync", "set-nx-ex", "setnx-expire"},
		Nemeses: ParseNemesisSets([]string{"partition", "clock", "kill", "client-pause"}), Seeds: SeedRange(3), Expect: e}
	for _, c := range s.Cells() {
		if e.For(c).Expect == "" {
			t.Errorf("no rule for %s", c.ID())
		}
	}
}

func TestJudgeOnlyTrustsTheVerdict(t *testing.T) {
	cases := []struct {
		expect  string
		verdict checker.Verdict
		errText string
		want    Outcome
	}{
		{ExpectValid, checker.Valid, "", Met},
		{ExpectValid, checker.Invalid, "", Missed},
		{ExpectValid, checker.Unknown, "", Missed}, // vacuous or timed out: not valid
		{ExpectInvalid, checker.Invalid, "", Met},
		{ExpectInvalid, checker.Valid, "", Missed}, // the faults lost their teeth
		{ExpectInvalid, checker.Unknown, "", Missed},
		{ExpectFlaky, checker.Invalid, "", Flaky},
		{ExpectFlaky, checker.Valid, "", Flaky},
		{"", checker.Valid, "", Missed},
		{ExpectValid, "", "setup: no redis-server", Error},
		{ExpectValid, "", "", NotRun},
	}
	for _, c := range cases {
		r := CellResult{Verdict: c.verdict, Error: c.errText, Expectation: Expectation{Expect: c.expect}}
		r.Judge()
		if r.Outcome != c.want {
			t.Errorf("expect %q, verdict %q, error %q: outcome %s, want %s (%s)", c.expect, c.verdict, c.errText, r.Outcome, c.want, r.Explain)
		}
	}
	r := CellResult{Verdict: checker.Valid, Checkers: map[string]checker.Verdict{"lock-promise": "valid", "resource": "valid"},
		Catalogued: map[string]string{"lock-promise": "valid", "resource": "invalid"}, Expectation: Expectation{Expect: ExpectCatalogued}}
	r.Judge()
	if r.Outcome != Missed || !strings.Contains(r.Explain, "resource expected invalid, got valid") {
		t.Errorf("scenario judged %s: %s", r.Outcome, r.Explain)
	}
}

// fakeResults is a plausible outcome for every cell of testSpec: clock
// breaks the single-node locks, the rest holds.
func fakeResults(s Spec) []CellResult {
	var out []CellResult
	for i, c := range s.Cells() {
		r := CellResult{Cell: c, Test: c.TestName(), Dir: c.TestName() + "/20260101T000000.000Z", Command: s.Reproduce(c),
			Verdict: checker.Valid, Seconds: float64(10 + i)}
		if c.Lock != "redlock" && slices.Contains(c.Nemeses, "clock") {
			r.Verdict = checker.Invalid
			r.Headline = "process 1 and process 3 both held lock-0 from 2.1s to 2.4s"
		}
		if c.Lock == "redlock" && c.Seed == 2 && slices.Contains(c.Nemeses, "clock") {
			r.Verdict = checker.Unknown
			r.Headline = "lock-promise: valid but vacuous: no grant overlapped a fault"
			r.Checkers = map[string]checker.Verdict{checker.LockPromise: checker.Unknown}
		}
		out = append(out, r)
	}
	return out
}

func testMatrix(t testing.TB) Matrix {
	t.Helper()
	s := testSpec()
	e, err := ParseExpectations([]byte(testRules))
	if err != nil {
		t.Fatal(err)
	}
	e.File = "expectations.yaml"
	s.Expect = e
	return Build(s, Shard{}, fakeResults(s))
}

func TestBuildTalliesAndExitCode(t *testing.T) {
	m := testMatrix(t)
	if m.Tally.Cells != 18 || m.Tally.Invalid != 6 || m.Tally.Unknown != 1 || m.Tally.Flaky != 1 {
		t.Errorf("tally %+v", m.Tally)
	}
	// token and set-nx-ex under partition: token has no rule (a miss),
	// set-nx-ex is expected invalid but held.
	var missed []string
	for _, c := range m.Misses() {
		missed = append(missed, c.ID())
	}
	want := []string{"set-nx-ex/partition/seed-1", "set-nx-ex/partition/seed-2", "set-nx-ex/partition/seed-3",
		"token/partition/seed-1", "token/partition/seed-2", "token/partition/seed-3"}
	if !slices.Equal(missed, want) {
		t.Errorf("misses %v, want %v", missed, want)
	}
	if m.ExitCode() != 1 {
		t.Errorf("exit %d, want 1", m.ExitCode())
	}
	res := fakeResults(m.Spec)
	res[0].Error, res[0].Verdict = "setup: boom", ""
	if got := Build(m.Spec, Shard{}, res).ExitCode(); got != 2 {
		t.Errorf("a cell that could not run: exit %d, want 2", got)
	}
}

// writeStore lays the results out as a store of finished runs, as Run
// leaves them: results.json and the cell marker in each run directory.
func writeStore(t *testing.T, store string, m Matrix) {
	t.Helper()
	for _, c := range m.Cells {
		dir := filepath.Join(store, filepath.FromSlash(c.Dir))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		res := reports.Results{Meta: reports.RunMeta{Test: c.Test, Lock: c.Lock, Nemeses: c.Nemeses, Seed: c.Seed, Command: c.Command,
			Duration: time.Duration(c.Seconds * float64(time.Second))}}
		res.Verdict = c.Verdict
		if c.Headline != "" {
			kind := checker.KindOverlap
			res.Violations = []checker.Violation{{Checker: checker.LockPromise, Kind: kind, Fatal: c.Verdict == checker.Invalid, Description: c.Headline}}
			if c.Verdict == checker.Unknown {
				res.Violations = nil
			}
		}
		for n, v := range c.Checkers {
			if res.Checkers == nil {
				res.Checkers = map[string]checker.CheckResult{}
			}
			res.Checkers[n] = checker.CheckResult{Verdict: v, Reason: strings.TrimPrefix(c.Headline, n+": ")}
		}
		if err := reports.WriteJSON(dir, reports.ResultsFile, res); err != nil {
			t.Fatal(err)
		}
		if err := MarkDone(dir, c.Cell); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := WriteOutputs(store, m); err != nil {
		t.Fatal(err)
	}
}

func TestTwoShardsMergedEqualTheWholeMatrix(t *testing.T) {
	whole := testMatrix(t)
	var dirs []string
	for i := 1; i <= 2; i++ {
		sh := Shard{i, 2}
		var part []CellResult
		for _, c := range sh.Select(whole.Spec.Cells()) {
			for _, r := range whole.Cells {
				if r.ID() == c.ID() {
					part = append(part, r)
				}
			}
		}
		store := filepath.Join(t.TempDir(), fmt.Sprintf("shard-%d", i))
		m := Build(whole.Spec, sh, part)
		if m.Shard != sh.String() || len(m.Cells) != 9 {
			t.Fatalf("shard %s: %d cells", m.Shard, len(m.Cells))
		}
		writeStore(t, store, m)
		dirs = append(dirs, store)
	}
	out := filepath.Join(t.TempDir(), "merged")
	merged, err := Merge(out, "matrix", dirs, nil)
	if err != nil {
		t.Fatal(err)
	}
	a, err := whole.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	b, err := merged.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Errorf("merged matrix differs from the whole:\n%s\n---\n%s", a, b)
	}
	// Merging again (the same runs) changes nothing; a shard of another
	// matrix is refused.
	if again, err := Merge(out, "matrix", dirs, nil); err != nil {
		t.Fatal(err)
	} else if c, _ := again.Canonical(); !bytes.Equal(a, c) {
		t.Error("a second merge changed the matrix")
	}
	other := whole.Spec
	other.Seeds = SeedRange(2)
	otherStore := filepath.Join(t.TempDir(), "other")
	writeStore(t, otherStore, Build(other, Shard{}, fakeResults(other)))
	if _, err := Merge(filepath.Join(t.TempDir(), "m2"), "matrix", []string{dirs[0], otherStore}, nil); err == nil || !strings.Contains(err.Error(), "another matrix") {
		t.Errorf("merging shards of two matrices: %v", err)
	}
	// Only one shard: the other half is not run, and the exit says so.
	half, err := Merge(filepath.Join(t.TempDir(), "half"), "matrix", dirs[:1], nil)
	if err != nil {
		t.Fatal(err)
	}
	if half.Tally.NotRun != 9 || half.ExitCode() != 2 {
		t.Errorf("one shard of two merged: %+v, exit %d", half.Tally, half.ExitCode())
	}
}

func TestLookupSkipsUnfinishedRuns(t *testing.T) {
	store := t.TempDir()
	c := Cell{Backend: "local", Lock: "token", Nemeses: []string{"kill"}, Seed: 1}
	dir := filepath.Join(store, c.TestName(), "20260101T000000.000Z")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var res reports.Results
	res.Verdict = checker.Valid
	if err := reports.WriteJSON(dir, reports.ResultsFile, res); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := Lookup(store, c); ok || err != nil {
		t.Fatalf("an interrupted run (results, no marker) counts as done: ok=%v err=%v", ok, err)
	}
	if err := MarkDone(dir, c); err != nil {
		t.Fatal(err)
	}
	r, ok, err := Lookup(store, c)
	if !ok || err != nil || r.Verdict != checker.Valid || r.Dir != c.TestName()+"/20260101T000000.000Z" {
		t.Fatalf("finished run not found: %+v ok=%v err=%v", r, ok, err)
	}
}

func TestMarkdownNamesMissesAndFlaky(t *testing.T) {
	var b strings.Builder
	if err := WriteMarkdown(&b, testMatrix(t)); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{"❌ 6 cell(s) missed", "`token/partition/seed-1`", "no rule of the expectations file matches",
		"https://github.com/lockharness/lockharness/issues/99", "| redlock |", "| clock+kill |",
		"| redlock | 🟨 flaky 1/3, met 2/3 · √ ? √ | 🟩 met 3/3 · √ √ √ |",
		"| set-nx-ex | 🟩 met 3/3 · × × × | 🟥 missed 3/3 · √ √ √ |",
		"| token | 🟩 met 3/3 · × × × | 🟪 no rule 3/3 · √ √ √ |"} {
		if !strings.Contains(md, want) {
			t.Errorf("summary lacks %q:\n%s", want, md)
		}
	}
	// The legend, in the heat map's words.
	for _, c := range Classes() {
		if !strings.Contains(md, "- "+classInfo[c].Mark+" "+c.Legend()+"\n") {
			t.Errorf("summary lacks the legend line of %s:\n%s", c, md)
		}
	}
	if !strings.Contains(md, GlyphLegend) {
		t.Errorf("summary lacks the glyphs' legend:\n%s", md)
	}
}

// Each lock × nemesis set is classed by its cells' outcomes against their
// expectations, the most severe first, whatever the verdicts: an expected
// invalid is met (green), an unexpected valid missed (red).
func TestGridClassesByOutcome(t *testing.T) {
	g := NewGrid(testMatrix(t))
	if !slices.Equal(g.Rows, []string{"redlock", "set-nx-ex", "token"}) || !slices.Equal(g.Cols, []string{"clock+kill", "partition"}) {
		t.Fatalf("grid %v × %v", g.Rows, g.Cols)
	}
	want := [][]struct {
		class             Class
		outcome, verdicts string
	}{
		{{ClassFlaky, "flaky 1/3, met 2/3", "√ ? √"}, {ClassMet, "met 3/3", "√ √ √"}},
		{{ClassMet, "met 3/3", "× × ×"}, {ClassMissed, "missed 3/3", "√ √ √"}},
		{{ClassMet, "met 3/3", "× × ×"}, {ClassNoRule, "no rule 3/3", "√ √ √"}},
	}
	for i, row := range want {
		for j, w := range row {
			gc := g.Cells[i][j]
			if gc.Class() != w.class || gc.Outcome() != w.outcome || gc.Verdicts() != w.verdicts {
				t.Errorf("%s × %s: %s %q %q, want %s %q %q", g.Rows[i], g.Cols[j], gc.Class(), gc.Outcome(), gc.Verdicts(), w.class, w.outcome, w.verdicts)
			}
		}
	}
	// A cell that could not run is unknown and has no verdict; a missed
	// one beside it outranks it.
	m := testMatrix(t)
	res := fakeResults(m.Spec)
	res[0].Error, res[0].Verdict = "setup: boom", ""
	m = Build(m.Spec, Shard{}, res)
	if gc := NewGrid(m).Cells[0][0]; gc.Class() != ClassUnknown || gc.Outcome() != "unknown 1/3, flaky 1/3, met 1/3" || gc.Verdicts() != "– ? √" {
		t.Errorf("redlock × clock+kill with an error: %s %q %q", gc.Class(), gc.Outcome(), gc.Verdicts())
	}
	if gc := (GridCell{Cells: 10, Glyphs: strings.Split("××√××××√√×", "")}); gc.Verdicts() != "7× 3√" {
		t.Errorf("ten runs: %q, want counts", gc.Verdicts())
	}
}

// The heat map carries its legend (a line per class, the glyphs' line) in
// 12-point type, and its cells their outcomes in words.
func TestHeatMapWritesPictures(t *testing.T) {
	dir := t.TempDir()
	if err := WriteHeatMap(dir, testMatrix(t)); err != nil {
		t.Fatal(err)
	}
	png, err := os.ReadFile(filepath.Join(dir, HeatmapPNG))
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Fatalf("heatmap.png: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(dir, HeatmapSVG))
	if err != nil || !bytes.Contains(b, []byte("<svg")) || !bytes.Contains(b, []byte("set-nx-ex")) {
		t.Fatalf("heatmap.svg: %v", err)
	}
	svg := html.UnescapeString(string(b))
	var lines []string
	for _, c := range Classes() {
		lines = append(lines, c.Legend())
	}
	for _, want := range append(lines, GlyphLegend, "missed 3/3", "no rule 3/3", "flaky 1/3, met 2/3", "√ ? √") {
		i := strings.Index(svg, ">"+want+"<")
		if i < 0 {
			t.Errorf("heatmap.svg lacks the text %q", want)
			continue
		}
		tag := svg[strings.LastIndex(svg[:i], "<text"):i]
		size := regexp.MustCompile(`font-size:([0-9.]+)px`).FindStringSubmatch(tag)
		if size == nil {
			t.Errorf("heatmap.svg: %q has no font size: %s", want, tag)
		} else if f, _ := strconv.ParseFloat(size[1], 64); f < 11 {
			t.Errorf("heatmap.svg: %q in %v-point type, too small to read: %s", want, size, tag)
		}
	}
}

// xmllint validates against an XSD; it is Debian's libxml2-utils.
func xmllint(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("xmllint")
	if err != nil {
		if testing.Short() {
			t.Skip("xmllint not installed")
		}
		t.Fatal("xmllint is not installed: apt-get install libxml2-utils (or run with -short)")
	}
	return p
}

func validate(t *testing.T, bin string, doc []byte) error {
	t.Helper()
	f := filepath.Join(t.TempDir(), "junit.xml")
	if err := os.WriteFile(f, doc, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "--noout", "--schema", filepath.Join("testdata", "junit.xsd"), f).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%v: %s", err, out)
	}
	return nil
}

func TestJUnitPassesTheSchema(t *testing.T) {
	bin := xmllint(t)
	m := testMatrix(t)
	res := fakeResults(m.Spec)
	res[0].Error, res[0].Verdict = "setup: boom & <bust>", ""
	res[3].Verdict = "" // not run
	m = Build(m.Spec, Shard{1, 1}, res)
	var b bytes.Buffer
	if err := WriteJUnit(&b, m); err != nil {
		t.Fatal(err)
	}
	if err := validate(t, bin, b.Bytes()); err != nil {
		t.Fatalf("junit.xml fails the schema: %v\n%s", err, b.String())
	}
	doc := b.String()
	for _, want := range []string{`<testcase name="token/partition/seed-1" classname="matrix.token"`,
		`<property name="reproduce" value="harness run --lock token --nemesis partition --seed 1`,
		`<property name="nemeses" value="clock+kill">`, `<property name="backend" value="local">`,
		`<failure message="no rule of the expectations file matches`, `type="flaky"`, `<error message="setup: boom &amp; &lt;bust&gt;"`,
		`failures="6" errors="1" skipped="2"`} {
		if !strings.Contains(doc, want) {
			t.Errorf("junit lacks %s", want)
		}
	}
	// The schema can fail: a testcase without a name, a suite without
	// counts.
	for _, bad := range []string{
		`<testsuites><testsuite name="x" tests="1" failures="0" errors="0"><testcase classname="c"/></testsuite></testsuites>`,
		`<testsuites><testsuite name="x"><testcase name="a"/></testsuite></testsuites>`,
		`<testsuites><testsuite name="x" tests="1" failures="0" errors="0"><testcase name="a"><verdict/></testcase></testsuite></testsuites>`,
	} {
		if validate(t, bin, []byte(bad)) == nil {
			t.Errorf("schema accepts %s", bad)
		}
	}
}

func TestMatrixJSONRoundTrips(t *testing.T) {
	m := testMatrix(t)
	dir := t.TempDir()
	if err := m.WriteJSON(dir); err != nil {
		t.Fatal(err)
	}
	back, err := ReadJSON(filepath.Join(dir, JSONFile))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(m)
	b, _ := json.Marshal(back)
	if !bytes.Equal(a, b) {
		t.Error("matrix.json does not round-trip")
	}
}

// A scenario's cells are named for the scenario in JUnit: their class,
// and the scenario and repeat in place of a seed.
func TestJUnitNamesScenarioCells(t *testing.T) {
	s := testSpec()
	s.Scenarios, s.Repeat = []ScenarioRef{{Name: "token-pause", Lock: "token"}}, 1
	var b bytes.Buffer
	if err := WriteJUnit(&b, Build(s, Shard{}, fakeResults(s))); err != nil {
		t.Fatal(err)
	}
	doc := b.String()
	i := strings.Index(doc, `classname="matrix.scenario.token-pause"`)
	if i < 0 {
		t.Fatalf("no test case of the scenario:\n%s", doc)
	}
	tc := doc[i:]
	tc = tc[:strings.Index(tc, "</testcase>")]
	for _, want := range []string{`<property name="lock" value="token">`, `<property name="scenario" value="token-pause">`, `<property name="repeat" value="1">`} {
		if !strings.Contains(tc, want) {
			t.Errorf("the scenario's test case lacks %s:\n%s", want, tc)
		}
	}
	if strings.Contains(tc, `name="seed"`) {
		t.Errorf("the scenario's test case names a seed:\n%s", tc)
	}
}
