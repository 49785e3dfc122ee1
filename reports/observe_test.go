package reports

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/history/synth"
)

// TestDigestedReportIsTheReport: a report gathered while the check reads
// the history (RenderDigested, as harness report draws it) writes the
// same files, byte for byte, as one that reads the history again
// (Render); and of a valid history it reads nothing more: the history
// file is gone by then.
// fileCount is the count of a group of files on the page.
var fileCount = regexp.MustCompile(` \(\d+\)</summary>`)

func TestDigestedReportIsTheReport(t *testing.T) {
	crash, err := synth.Ops(synth.Config{Shape: synth.Crash, Events: 20_000, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	// A hold the check never saw the run acquire the key of, or one
	// that ends after the history: the overview's holds gathered ahead
	// (holdsAhead) no longer fit, and are gathered again.
	lateHold := func(key string, past int64) func(*checker.Result) {
		return func(res *checker.Result) {
			h := res.Holds[len(res.Holds)-1]
			if key != "" {
				h.Key = key
			}
			h.Start, h.End = res.Seen.End-ms, res.Seen.End+past
			res.Holds = append(res.Holds, h)
		}
	}
	for _, tc := range []struct {
		name  string
		ops   []history.Op
		valid bool
		tweak func(*checker.Result)
	}{
		{"clock-jump", func() []history.Op { _, ops, _ := clockFixture(); return ops }(), false, nil},
		{"valid", func() []history.Op { _, ops, _ := validFixture(); return ops }(), true, nil},
		{"crash shape", crash, true, nil},
		{"a key never acquired", func() []history.Op { _, ops, _ := clockFixture(); return ops }(), false, lateHold("lock-elsewhere", 0)},
		{"a hold past the end", func() []history.Op { _, ops, _ := clockFixture(); return ops }(), false, lateHold("", 5000*ms)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			dirs := [2]string{t.TempDir(), t.TempDir()}
			for i, dir := range dirs {
				writeHistory(t, dir, tc.ops)
				src := history.File(filepath.Join(dir, HistoryFile))
				cfg := checker.Config{Views: true, SpillDir: t.TempDir()}
				var g *Digest
				if i == 1 {
					end, ok := src.LastTime()
					if !ok {
						t.Fatal("no last time")
					}
					g = NewDigest(end)
					cfg.Observe = g.See
				}
				res, err := checker.Check(ctx, src, cfg)
				if err != nil || (res.Verdict == checker.Valid) != tc.valid {
					t.Fatalf("check: %s %v", res.Verdict, err)
				}
				if tc.tweak != nil {
					if res.HoldsInFile() {
						t.Fatal("the holds of the fixture went to a file")
					}
					tc.tweak(&res)
				}
				away := filepath.Join(t.TempDir(), HistoryFile)
				if i == 1 && tc.valid {
					if err := os.Rename(src.Path(), away); err != nil {
						t.Fatal(err)
					}
				}
				if _, err := RenderDigested(ctx, dir, record(RunMeta{Test: "t"}), src, res, g); err != nil {
					t.Fatal(err)
				}
				if i == 1 && tc.valid {
					_ = os.Rename(away, src.Path())
				}
			}
			files, err := os.ReadDir(dirs[0])
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range files {
				a, _ := os.ReadFile(filepath.Join(dirs[0], f.Name()))
				b, err := os.ReadFile(filepath.Join(dirs[1], f.Name()))
				// The page lists the files, the history among them, which
				// was away while the digested report was drawn.
				link := []byte(`<a href="history.jsonl">history.jsonl</a> `)
				a, b = bytes.Replace(a, link, nil, 1), bytes.Replace(b, link, nil, 1)
				// and counts the files of its group.
				a, b = fileCount.ReplaceAll(a, nil), fileCount.ReplaceAll(b, nil)
				if err != nil || !bytes.Equal(a, b) {
					t.Errorf("%s differs (%v)", f.Name(), err)
				}
			}
		})
	}
}
