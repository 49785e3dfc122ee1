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

// rebuild is what `harness report` does with a stored run: read its
// record (or derive one from the history), check its history file, and
// render what the check found.
func rebuild(ctx context.Context, dir string, cfg checker.Config) (Results, error) {
	rec, ok, err := ReadRecord(dir)
	if err != nil {
		return Results{}, err
	}
	if !ok {
		rec = record(RunMeta{})
	}
	cfg.Views = true
	src := history.File(filepath.Join(dir, HistoryFile))
	res, err := checker.Check(ctx, src, cfg)
	if err != nil {
		return Results{}, err
	}
	if !ok {
		rec = DeriveRecord(dir, rec, res)
	}
	return Render(ctx, dir, rec, src, res)
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
			rec := record(meta)
			if tc.withRun {
				if err := WriteJSON(dir, MetaFile, rec); err != nil {
					t.Fatal(err)
				}
			}
			ctx := context.Background()
			cfg := checker.Config{Views: true}
			// What the run itself wrote.
			ran, _ := checker.Check(ctx, history.Events(ops), cfg)
			if !tc.withRun {
				rec = DeriveRecord(dir, record(RunMeta{}), ran)
			}
			if _, err := Render(ctx, dir, rec, history.Events(ops), ran); err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(filepath.Join(dir, ResultsFile))
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 2; i++ {
				got, err := rebuild(ctx, dir, cfg)
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
				if rec.Test != "clock-jump" || len(rec.Nemeses) == 0 || rec.Start.IsZero() {
					t.Errorf("derived record %+v", rec.RunMeta)
				}
			}
		})
	}
}
