package checker

import (
	"bufio"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/history/synth"
)

// The histories are simulated runs of a correct lock (see simValidRun):
// 10 clients cycling acquire, read, write, release, some failed and
// unknown acquires, nemesis events and a final heal. An operation is an
// invocation and its completion: two events.

// BenchmarkCheck100kOps checks 100k operations (200k events) on 4 keys.
func BenchmarkCheck100kOps(b *testing.B) {
	benchCheck(b, simConfig{procs: 10, keys: 4, events: 200_000, ttl: 1e9, pInfo: 0.01, heal: true})
}

// BenchmarkCheck1MOps checks a million operations (2M events) on 4 keys:
// the size of a minute of 50 clients on one key.
func BenchmarkCheck1MOps(b *testing.B) {
	if testing.Short() {
		b.Skip("large")
	}
	benchCheck(b, simConfig{procs: 10, keys: 4, events: 2_000_000, ttl: 1e9, pInfo: 0.01, heal: true})
}

// BenchmarkCheck20kKeys and BenchmarkCheck1MKeys check 100k operations
// spread over many keys (--keys 20000, --keys 1000000): the cost must grow
// with the operations, not with keys × operations.
func BenchmarkCheck20kKeys(b *testing.B) {
	benchCheck(b, simConfig{procs: 10, keys: 20_000, events: 200_000, ttl: 1e9, pInfo: 0.01, heal: true})
}

func BenchmarkCheck1MKeys(b *testing.B) {
	if testing.Short() {
		b.Skip("large")
	}
	benchCheck(b, simConfig{procs: 10, keys: 1_000_000, events: 200_000, ttl: 1e9, pInfo: 0.01, heal: true})
}

func benchCheck(b *testing.B, cfg simConfig) {
	ops := simValidRun(rand.New(rand.NewPCG(1, 2)), cfg)
	b.Logf("%d events", len(ops))
	b.ReportAllocs()
	runtime.GC()
	peak := peakHeap(b)
	b.ResetTimer()
	for range b.N {
		r := checkOps(ctx, ops, Config{Timeout: time.Minute})
		if r.Verdict != Valid {
			b.Fatalf("verdict %s: %+v", r.Verdict, r.Checkers)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(ops)), "ns/event")
	b.ReportMetric(float64(peak()>>20), "peak-heap-MB")
}

// BenchmarkCheckFile1MOps is BenchmarkCheck1MOps read from a file in
// windows (Check of a file, as a run checks its history); peak-heap-MB beside
// BenchmarkCheck1MOps's shows what the windows save: the whole check holds
// the history and everything derived from it, the windowed one a window.
func BenchmarkCheckFile1MOps(b *testing.B) {
	if testing.Short() {
		b.Skip("large")
	}
	benchCheckFile(b, simConfig{procs: 10, keys: 4, events: 2_000_000, ttl: 1e9, pInfo: 0.01, heal: true})
}

// BenchmarkCheckFile20kKeys is a million operations (2M events) of 10
// clients spread over 20,000 keys (--keys 20000) read from a file: some
// client always has an operation in flight on some key, so only windows
// cut per key keep the memory to a window's (peak-heap-MB).
func BenchmarkCheckFile20kKeys(b *testing.B) {
	if testing.Short() {
		b.Skip("large")
	}
	benchCheckFile(b, simConfig{procs: 10, keys: 20_000, events: 2_000_000, ttl: 1e9, pInfo: 0.01, heal: true})
}

// benchCheckFile writes the simulated run cfg to a file and checks it
// with Check, in windows.
func benchCheckFile(b *testing.B, cfg simConfig) {
	ops := simValidRun(rand.New(rand.NewPCG(1, 2)), cfg)
	path := filepath.Join(b.TempDir(), "history.jsonl")
	if err := writeOpsFile(path, ops); err != nil {
		b.Fatal(err)
	}
	n := len(ops)
	ops = nil
	runtime.GC()
	b.Logf("%d events", n)
	b.ReportAllocs()
	peak := peakHeap(b)
	b.ResetTimer()
	for range b.N {
		r, err := Check(ctx, history.File(path), Config{Timeout: time.Minute})
		if err != nil || r.Verdict != Valid {
			b.Fatalf("verdict %s (%v): %+v", r.Verdict, err, r.Checkers)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/event")
	b.ReportMetric(float64(peak()>>20), "peak-heap-MB")
}

// writeOpsFile writes ops to a new history file at path, one JSON object
// per line, as a run's recorder does.
func writeOpsFile(path string, ops []history.Op) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	for i := range ops {
		if err := enc.Encode(&ops[i]); err != nil {
			f.Close()
			return err
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// peakHeap samples the heap in use until the returned function is called,
// which returns the largest sample.
func peakHeap(b *testing.B) func() uint64 {
	stop := make(chan struct{})
	done := make(chan uint64)
	go func() {
		var top uint64
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		for {
			metrics.Read(s)
			top = max(top, s[0].Value.Uint64())
			select {
			case <-stop:
				done <- top
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 { close(stop); return <-done }
}

// The shapes of issue 27 (history/synth), read from a file as harness
// check reads one: each must stay within a window's memory
// (peak-heap-MB), whatever its length.
func BenchmarkCheckFileValid(b *testing.B)     { benchShapeFile(b, synth.Valid, 1_000_000) }
func BenchmarkCheckFileCrash(b *testing.B)     { benchShapeFile(b, synth.Crash, 1_000_000) }
func BenchmarkCheckFileUnmatched(b *testing.B) { benchShapeFile(b, synth.Unmatched, 1_000_000) }
func BenchmarkCheckFileLongHolds(b *testing.B) { benchShapeFile(b, synth.LongHolds, 1_000_000) }

// BenchmarkCheckFileCrashInFlight is the crash shape where crashes strike
// with a release or an acquire in flight, which never completes (see
// withCrashesInFlight): what the windows carry of them must not grow.
func BenchmarkCheckFileCrashInFlight(b *testing.B) {
	events := 1_000_000
	if testing.Short() {
		events /= 4
	}
	benchCrashInFlight(b, events)
}

// benchCrashInFlight writes the crash shape of events with its crashes
// made in flight (withCrashesInFlight) to a file and checks it.
func benchCrashInFlight(b *testing.B, events int) {
	ops, err := synth.Ops(synth.Config{Shape: synth.Crash, Events: events, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	ops, _, _ = withCrashesInFlight(ops)
	path := filepath.Join(b.TempDir(), "history.jsonl")
	if err := writeOpsFile(path, ops); err != nil {
		b.Fatal(err)
	}
	n := len(ops)
	ops = nil
	benchFile(b, path, n, Valid)
}

// BenchmarkCheckFileCrashNoExpiry is synth.CrashNoExpiry: holders of
// leases that never expire die holding them, and their keys are refused
// for the rest of the history. Their claims never end: the windows cut
// the keys past the crashes and carry the claims (cutter.forgone), so
// peak-heap-MB is a window's, not the keys' histories.
func BenchmarkCheckFileCrashNoExpiry(b *testing.B) {
	benchShapeFile(b, synth.CrashNoExpiry, 1_000_000)
}

// BenchmarkCheckFileManyKeys is a million distinct keys, 4M events.
func BenchmarkCheckFileManyKeys(b *testing.B) { benchShapeFile(b, synth.ManyKeys, 4_000_000) }

// BenchmarkCheckFile10M is every shape at ten million events (issue 27:
// "any shape up to 10M events"): peak-heap-MB must be a window's, as at
// 1M, not ten times it. Skipped under -short.
func BenchmarkCheckFile10M(b *testing.B) {
	if testing.Short() {
		b.Skip("large")
	}
	for _, shape := range synth.Shapes {
		b.Run(string(shape), func(b *testing.B) { benchShapeFile(b, shape, 10_000_000) })
	}
	b.Run("crash-in-flight", func(b *testing.B) { benchCrashInFlight(b, 10_000_000) })
}

// benchShapeFile writes a synthetic history of the shape to a file and
// checks it with Check, in windows (a quarter of the events under -short).
func benchShapeFile(b *testing.B, shape synth.Shape, events int) {
	if testing.Short() {
		events /= 4
	}
	path := filepath.Join(b.TempDir(), "history.jsonl")
	n, err := synth.WriteFile(path, synth.Config{Shape: shape, Events: events, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	benchFile(b, path, int(n), Valid)
}

// benchFile checks the history file at path (n events) with Check, in
// windows, and fails unless the verdict is want.
func benchFile(b *testing.B, path string, n int, want Verdict) {
	runtime.GC()
	b.ReportAllocs()
	peak := peakHeap(b)
	b.ResetTimer()
	for range b.N {
		r, err := Check(ctx, history.File(path), Config{Timeout: time.Minute, SpillDir: b.TempDir()})
		if err != nil || r.Verdict != want {
			b.Fatalf("verdict %s (%v): %+v", r.Verdict, err, r.Checkers)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/event")
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(peak()>>20), "peak-heap-MB")
}
