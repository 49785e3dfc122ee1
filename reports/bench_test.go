package reports

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/history/synth"
)

// A long run's overview is bounded by its pixels, and a violation in it is
// still drawn.
func TestLongRunOverviewIsDownsampledButKeepsViolations(t *testing.T) {
	meta, ops, res := bigRun(100_000, 1)
	// One overlap, 1 ms long, somewhere in the middle.
	mid := res.Holds[len(res.Holds)/2]
	res.Violations = []checker.Violation{{Checker: "lock-promise", Kind: checker.KindOverlap, Key: mid.Key,
		Processes: []int{mid.Process, (mid.Process + 5) % 10}, Start: mid.Start, End: mid.Start + ms, Fatal: true}}
	res.Verdict = checker.Invalid
	v := newRunView(meta, ops, res)
	w, h, fig, area := v.timeline(window{From: 0, To: v.end, Title: "long"})
	if area.SourceHolds < 10_000 {
		t.Fatalf("fixture has only %d holds", area.SourceHolds)
	}
	// At most a bar per pixel column per row and key (each client here
	// uses one key), and a tick per column per row and kind.
	plotW := float64(figWidth - legendWidth)
	cols := int(plotW*DPI/72) + 1
	if bound := len(v.procs) * cols; area.MergedBars > bound || area.Ticks > 2*bound {
		t.Errorf("overview draws %d bars and %d ticks for %d holds, want at most %d", area.MergedBars, area.Ticks, area.SourceHolds, bound)
	}
	dir := outDir(t, "long")
	if err := saveFigure(dir, "overview", w, h, fig); err != nil {
		t.Fatal(err)
	}
	img := decodePNG(t, filepath.Join(dir, "overview.png"))
	vi := res.Violations[0]
	for _, p := range vi.Processes {
		x, y := area.Pixel(seconds(vi.Start), area.ClientY[p])
		if n := countRed(img, rectAround(x, y, 3)); n == 0 {
			t.Errorf("the 1 ms overlap is not drawn on client %d's row of the overview", p)
		}
	}
}

// BenchmarkRender100k and BenchmarkRender1M render the full report of a
// valid run of 100,000 and 1,000,000 events and report the size of what
// they wrote: the figures must not grow with the number of events.
func BenchmarkRender100k(b *testing.B) { benchRender(b, 100_000) }

func BenchmarkRender1M(b *testing.B) {
	if testing.Short() {
		b.Skip("large")
	}
	benchRender(b, 1_000_000)
}

func benchRender(b *testing.B, events int) {
	meta, ops, res := bigRun(events, 1)
	b.Logf("%d events, %d holds, %.0f s of run", len(ops), len(res.Holds), seconds(runEnd(ops)))
	dir := outDir(b, "bench")
	res.Seen = seenOf(ops)
	b.ResetTimer()
	for b.Loop() {
		if _, err := Render(context.Background(), dir, record(meta), history.Events(ops), res); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	var total int64
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			continue
		}
		total += info.Size()
		b.Logf("%-22s %8d bytes", e.Name(), info.Size())
		b.ReportMetric(float64(info.Size())/1024, e.Name()+"-KiB")
	}
	b.ReportMetric(float64(total)/1024, "total-KiB")
}

// BenchmarkRenderFile1M renders the report of BenchmarkRender1M's run from
// its history file, event by event, as `harness report` and a run do:
// peak-heap-MB is what the report holds, the digest and the figures, not
// the history.
func BenchmarkRenderFile1M(b *testing.B) {
	if testing.Short() {
		b.Skip("large")
	}
	meta, ops, res := bigRun(1_000_000, 1)
	dir := outDir(b, "bench-file")
	path := filepath.Join(dir, HistoryFile)
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	for i := range ops {
		if err := enc.Encode(&ops[i]); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	f.Close()
	res.Seen = seenOf(ops)
	ops = nil
	runtime.GC()
	b.ReportAllocs()
	stop := make(chan struct{})
	top := make(chan uint64)
	go func() {
		var peak uint64
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		for {
			metrics.Read(s)
			peak = max(peak, s[0].Value.Uint64())
			select {
			case <-stop:
				top <- peak
				return
			case <-t.C:
			}
		}
	}()
	b.ResetTimer()
	for b.Loop() {
		if _, err := Render(context.Background(), dir, record(meta), history.File(path), res); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	close(stop)
	b.ReportMetric(float64(<-top>>20), "peak-heap-MB")
}

// A run of many keys draws, per client row, at most a bar per pixel column
// and key colour: keys that share a colour share a bar, so the overview is
// bounded by its pixels however many keys there are.
func TestManyKeysOverviewIsBoundedByColours(t *testing.T) {
	b := &builder{ttl: 500 * ms}
	const clients, keys, perClient = 2, 1000, 20_000
	for p := 0; p < clients; p++ {
		t0 := int64(p) * ms
		for i := 0; i < perClient; i++ {
			key := fmt.Sprintf("lock-%d", (i*7+p)%keys)
			b.section(p, key, t0, t0+5*ms, int64(i+1), false)
			t0 += 6 * ms
		}
	}
	ops := b.build()
	res := checker.Result{Verdict: checker.Valid, Counts: counts(ops), Holds: b.holds}
	v := newRunView(RunMeta{Lock: "token"}, ops, res)
	_, _, _, area := v.timeline(window{From: 0, To: v.end, Title: "many keys"})
	if area.SourceHolds != clients*perClient {
		t.Fatalf("the overview took %d holds, want %d", area.SourceHolds, clients*perClient)
	}
	plotW := float64(figWidth - legendWidth)
	cols := int(plotW*DPI/72) + 1
	if bound := clients * len(keyColours) * cols; area.MergedBars > bound {
		t.Errorf("%d keys: the overview draws %d bars for %d holds, want at most %d", keys, area.MergedBars, area.SourceHolds, bound)
	}
}

// BenchmarkReportFileValid, …Crash, …Unmatched and …LongHolds are harness
// report of a stored synthetic history of 1M events (history/synth):
// the check, gathering the report's digest as it reads the history,
// then the drawing. Beside checker's BenchmarkCheckFileValid and
// BenchmarkCheckFileCrash, ns/event says what the report adds to the
// check (issue 27: at most a fifth).
func BenchmarkReportFileValid(b *testing.B)     { benchReportFile(b, synth.Valid) }
func BenchmarkReportFileCrash(b *testing.B)     { benchReportFile(b, synth.Crash) }
func BenchmarkReportFileUnmatched(b *testing.B) { benchReportFile(b, synth.Unmatched) }
func BenchmarkReportFileLongHolds(b *testing.B) { benchReportFile(b, synth.LongHolds) }

// BenchmarkReportFileCrashNoExpiry is the report of client crashes of a
// lock without expiry: a crashed holder keeps its key to the end.
func BenchmarkReportFileCrashNoExpiry(b *testing.B) { benchReportFile(b, synth.CrashNoExpiry) }

// BenchmarkReportFileManyKeys is the report of a fresh key per acquire:
// 250,000 keys in its 1M events (docs/measurements.md measures a million
// keys, 4M events, with harness report).
func BenchmarkReportFileManyKeys(b *testing.B) { benchReportFile(b, synth.ManyKeys) }

func benchReportFile(b *testing.B, shape synth.Shape) {
	events := 1_000_000
	if testing.Short() {
		events /= 4
	}
	dir := b.TempDir()
	n, err := synth.WriteFile(filepath.Join(dir, HistoryFile), synth.Config{Shape: shape, Events: events, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	src := history.File(filepath.Join(dir, HistoryFile))
	end, _ := src.LastTime()
	var drawing time.Duration
	b.ResetTimer()
	for b.Loop() {
		g := NewDigest(end)
		res, err := checker.Check(context.Background(), src, checker.Config{Views: true, SpillDir: dir, Observe: g.See})
		if err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		if _, err := RenderDigested(context.Background(), dir, record(RunMeta{Test: string(shape)}), src, res, g); err != nil {
			b.Fatal(err)
		}
		drawing += time.Since(t0)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/event")
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
	// What the report adds after its check (the digest, gathered during
	// the check, is in the check's time).
	b.ReportMetric(float64(drawing.Milliseconds())/float64(b.N), "render-ms/op")
}
