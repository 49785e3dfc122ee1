package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"testing"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/reports"
)

// copyRun copies the run directory from into a store under the test's
// temporary directory, as store/<test>/<run>, and returns the copy.
func copyRun(t *testing.T, from string) string {
	t.Helper()
	to := filepath.Join(t.TempDir(), "store", filepath.Base(filepath.Dir(from)), filepath.Base(from))
	if err := os.MkdirAll(to, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return to
}

// `harness report` on a run directory written before a run's record said
// what its report needs (testdata/README.md) draws the report that run
// drew: results.json (explanations and fault sizes included), index.html,
// porcupine's view and the timelines, byte for byte. `harness check` of
// its history explains its violations as results.json does. Without its
// run.json the report is still drawn, with the same verdict.
// storySection and storyLinks are what a report drawn now has that an
// old run's did not: the stories of its findings, and their files.
var (
	storySection = regexp.MustCompile(`(?s)<section id="stories">.*?</section>\n`)
	storyLinks   = regexp.MustCompile(`<a href="story-[^"]*">[^<]*</a> `)
)

// fileCounts are the counts of the groups of files on a report's page.
var fileCounts = regexp.MustCompile(` \(\d+\)</summary>`)

func TestReportOfAnOldRun(t *testing.T) {
	runs, err := filepath.Glob(filepath.Join("testdata", "oldruns", "*", "*"))
	if err != nil || len(runs) < 2 {
		t.Fatalf("fixtures: %v %v", runs, err)
	}
	for _, old := range runs {
		t.Run(filepath.Base(filepath.Dir(old)), func(t *testing.T) {
			dir := copyRun(t, old)
			drawn := []string{reports.ResultsFile, reports.IndexFile, "porcupine-lock-0.html", "timeline.svg", "timeline-violation-1.svg"}
			for _, f := range drawn {
				if err := os.Remove(filepath.Join(dir, f)); err != nil {
					t.Fatal(err)
				}
			}
			if code, out, stderr := runCLI(t, "report", dir); code != 1 {
				t.Fatalf("report: exit %d, want 1 (invalid): %s %s", code, out, stderr)
			}
			for _, f := range drawn {
				want, _ := os.ReadFile(filepath.Join(old, f))
				got, err := os.ReadFile(filepath.Join(dir, f))
				if f == reports.IndexFile {
					// A report lists its files, and counts them: the holds
					// now have their own.
					got = bytes.Replace(got, []byte(`<a href="holds.jsonl">holds.jsonl</a> `), nil, 1)
					// And it begins with the story of each kind of finding,
					// whose files it lists too.
					got = storySection.ReplaceAll(got, nil)
					got = storyLinks.ReplaceAll(got, nil)
					want = bytes.Replace(want, []byte(`<a href="holds.jsonl">holds.jsonl</a> `), nil, 1)
					got, want = fileCounts.ReplaceAll(got, nil), fileCounts.ReplaceAll(want, nil)
				}
				if f == reports.ResultsFile {
					sameResults(t, dir, got, want)
					continue
				}
				if err != nil || !sameDrawing(f, got, want) {
					t.Errorf("%s differs from the one the run drew (%d bytes, want %d; %v)", f, len(got), len(want), err)
				}
			}
			stored, err := reports.ReadResults(old)
			if err != nil {
				t.Fatal(err)
			}
			checked, code := checkJSON(t, filepath.Join(dir, reports.HistoryFile), nil)
			if code != 1 || checked.Verdict != stored.Verdict || !reflect.DeepEqual(checked.Why, stored.Why) || len(stored.Why)+len(stored.Sizes) == 0 {
				t.Errorf("check: exit %d, verdict %s, why %v; the run: %s, %v", code, checked.Verdict, checked.Why, stored.Verdict, stored.Why)
			}

			bare := copyRun(t, old)
			for _, f := range append(drawn, reports.MetaFile) {
				_ = os.Remove(filepath.Join(bare, f))
			}
			if code, out, stderr := runCLI(t, "report", bare); code != 1 {
				t.Fatalf("report without run.json: exit %d, want 1: %s %s", code, out, stderr)
			}
			derived, err := reports.ReadResults(bare)
			if err != nil || derived.Verdict != stored.Verdict || !reflect.DeepEqual(derived.Violations, stored.Violations) {
				t.Errorf("report without run.json: %s, %v; the run: %s", derived.Verdict, err, stored.Verdict)
			}
			b, _ := json.Marshal(derived.Meta)
			t.Logf("derived: %s", b)
		})
	}
}

// sameResults fails unless the results.json a report wrote into dir (got,
// its holds in holds.jsonl) says what want, written before the holds had
// a file of their own (inline, last), says.
func sameResults(t *testing.T, dir string, got, want []byte) {
	t.Helper()
	var g, w map[string]json.RawMessage
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("results.json: %v", err)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatal(err)
	}
	var wantHolds, gotHolds []checker.Hold
	if err := json.Unmarshal(w["holds"], &wantHolds); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, reports.HoldsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for sc := bufio.NewScanner(f); sc.Scan(); {
		var h checker.Hold
		if err := json.Unmarshal(sc.Bytes(), &h); err != nil {
			t.Fatal(err)
		}
		gotHolds = append(gotHolds, h)
	}
	var n int
	_ = json.Unmarshal(g["hold_count"], &n)
	delete(w, "holds")
	delete(g, "hold_count")
	if !reflect.DeepEqual(g, w) || !reflect.DeepEqual(gotHolds, wantHolds) || n != len(wantHolds) {
		t.Errorf("results.json differs from the one the run drew (%d holds in holds.jsonl, hold_count %d, want %d)", len(gotHolds), n, len(wantHolds))
	}
}
