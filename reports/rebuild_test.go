package reports

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/history"
)

func writeHistory(t *testing.T, dir string, ops []history.Op) {
	t.Helper()
	var buf bytes.Buffer
	for _, op := range ops {
		b, err := json.Marshal(op)
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(append(b, '\n'))
	}
	if err := os.WriteFile(filepath.Join(dir, HistoryFile), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Rebuilding a stored run from its history alone writes the same
// results.json as the run did, byte for byte, and redraws the report.
func TestRebuildReproducesResults(t *testing.T) {
	for _, tc := range []struct {
		name    string
		fixture func() (RunMeta, []history.Op, checker.Result)
		withRun bool
	}{
		{"clock-jump", clockFixture, true},
		{"valid", validFixture, true},
		{"no-run-json", clockFixture, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := outDir(t, "rebuild-"+tc.name)
			meta, ops, _ := tc.fixture()
			dir, err := NewRunDir(store, meta.Test, meta.Start)
			if err != nil {
				t.Fatal(err)
			}
			writeHistory(t, dir, ops)
			if tc.withRun {
				if err := WriteJSON(dir, MetaFile, meta); err != nil {
					t.Fatal(err)
				}
			}
			ctx := context.Background()
			cfg := checker.Config{}
			// What the run itself wrote.
			ran, _ := checker.Check(ctx, history.Events(ops), cfg)
			if !tc.withRun {
				meta = DeriveMeta(dir, ops)
			}
			// As the runner does: results.json as checked, then the report.
			if err := WriteJSON(dir, ResultsFile, Results{Meta: meta, Result: ran}); err != nil {
				t.Fatal(err)
			}
			if err := Render(ctx, dir, meta, ops, ran); err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(filepath.Join(dir, ResultsFile))
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 2; i++ {
				got, err := Rebuild(ctx, dir, cfg)
				if err != nil {
					t.Fatal(err)
				}
				b, err := os.ReadFile(filepath.Join(dir, ResultsFile))
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(b, want) {
					t.Fatalf("rebuild %d wrote a different results.json:\n%s\nwant:\n%s", i+1, b, want)
				}
				if got.Verdict != ran.Verdict {
					t.Errorf("rebuild verdict %s, run %s", got.Verdict, ran.Verdict)
				}
			}
			for _, f := range []string{IndexFile, TimelineFile + ".png", LatencyFile + ".png", RateFile + ".png"} {
				if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
					t.Errorf("rebuild did not draw %s", f)
				}
			}
			if !tc.withRun {
				if meta.Test != "clock-jump" || len(meta.Nemeses) == 0 || meta.Start.IsZero() {
					t.Errorf("derived meta %+v", meta)
				}
			}
		})
	}
}
