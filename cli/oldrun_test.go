package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

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
