package checker

import (
	"cmp"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/lockharness/lockharness/history"
)

// windowed checks ops in windows of at least target events (1: a cut at
// every point the cutter allows); st says how it cut them.
func windowed(ops []history.Op, target int) (Result, windowStats, bool) {
	i := 0
	next := func() (history.Op, bool) {
		if i == len(ops) {
			return history.Op{}, false
		}
		i++
		return ops[i-1], true
	}
	res, exact, st := checkWindowsStats(ctx, next, Config{Timeout: time.Minute}, target)
	return res, st, exact
}

// sameResult fails unless the windowed result is the whole one: every
// verdict and reason, the counts, coverage, holds, statistics and
// non-linearizable keys, and the violations (whose order among equal
// starts may differ).
func sameResult(t *testing.T, name string, whole, win Result) {
	t.Helper()
	norm := func(r Result) Result {
		vs := slices.Clone(r.Violations)
		slices.SortStableFunc(vs, func(a, b Violation) int {
			return cmp.Or(cmp.Compare(a.Start, b.Start), cmp.Compare(a.Checker, b.Checker), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Key, b.Key), cmp.Compare(a.Description, b.Description))
		})
		r.Violations = vs
		return r
	}
	a, b := norm(whole), norm(win)
	if !reflect.DeepEqual(a, b) {
		ja, _ := json.MarshalIndent(a, "", " ")
		jb, _ := json.MarshalIndent(b, "", " ")
		if dir := os.Getenv("WINDOW_DIFF_DIR"); dir != "" {
			_ = os.WriteFile(filepath.Join(dir, "whole.json"), ja, 0o644)
			_ = os.WriteFile(filepath.Join(dir, "windowed.json"), jb, 0o644)
		}
		if len(ja) > 4000 {
			ja, jb = ja[:4000], jb[:4000]
		}
		t.Fatalf("%s: windowed check differs from the whole check\nwhole: %s\nwindowed: %s", name, ja, jb)
	}
}

// withFinalHeal ends a generated history with the final heal a run
// records, so that windows may be cut in it (liveness is judged in the
// last window, which must hold the recovery period).
func withFinalHeal(ops []history.Op) []history.Op {
	last := history.Op{}
	if len(ops) > 0 {
		last = ops[len(ops)-1]
	}
	return append(ops,
		history.Op{Index: last.Index + 1, Time: last.Time + 1, Process: history.Nemesis, Type: history.Invoke, F: history.FFinalHeal},
		history.Op{Index: last.Index + 2, Time: last.Time + 2, Process: history.Nemesis, Type: history.OK, F: history.FFinalHeal})
}

// TestWindowedCheckIsTheWholeCheck: the windowed check (CheckFile's) gives
// the whole check's result, cut at every point it allows, on the real
// fixtures, on simulated runs of a correct lock, on the same runs broken
// (a lost update, an overlapping grant, a fencing token handed out twice),
// and on the property test's random lock histories (unknown outcomes,
// crashes, watchdogs racing releases).
func TestWindowedCheckIsTheWholeCheck(t *testing.T) {
	type tc struct {
		name string
		ops  []history.Op
	}
	var cases []tc
	for _, f := range []string{"token", "fenced", "set-nx-ex", "setnx"} {
		cases = append(cases, tc{"fixture " + f, readFixture(t, f)})
	}
	for seed := uint64(0); seed < 40; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		cfg := simConfig{procs: 2 + int(seed%5), keys: 1 + int(seed%3), events: 400 + int(seed%7)*150, ttl: int64(2e6 + seed%4*3e6), pInfo: float64(seed%3) * 0.05, heal: true}
		ops := simValidRun(rng, cfg)
		cases = append(cases, tc{"sim", ops})
		// Broken copies: one read sees an older value; one grant's lease
		// lasts far longer than the lock kept it; one fence repeats.
		var reads, grants []int
		for i, op := range ops {
			if op.Type == history.OK && op.F == history.FRead && op.Value != nil && op.Value.Counter != nil && *op.Value.Counter > 0 {
				reads = append(reads, i)
			}
			if op.Type == history.OK && op.F == history.FAcquire && op.Value != nil {
				grants = append(grants, i)
			}
		}
		if len(reads) > 0 {
			b := slices.Clone(ops)
			i := reads[rng.IntN(len(reads))]
			v := *b[i].Value
			c := *v.Counter - 1
			v.Counter = &c
			b[i].Value = &v
			cases = append(cases, tc{"sim lost update", b})
		}
		// Writes whose outcome is unknown (a timeout): some landed (the
		// next read shows it), some did not (the next read says so).
		var writes []int
		for i, op := range ops {
			if op.Type == history.OK && op.F == history.FWrite && op.Value != nil && !op.Value.Rejected {
				writes = append(writes, i)
			}
		}
		if len(writes) > 0 {
			b := slices.Clone(ops)
			for range 1 + len(writes)/40 {
				i := writes[rng.IntN(len(writes))]
				b[i].Type, b[i].Value, b[i].Error = history.Info, nil, "i/o timeout"
			}
			cases = append(cases, tc{"sim unknown writes", b})
		}
		if len(grants) > 1 {
			b := slices.Clone(ops)
			i := grants[rng.IntN(len(grants))]
			v := *b[i].Value
			v.Deadline += 50e6
			b[i].Value = &v
			cases = append(cases, tc{"sim overlap", b})
			b = slices.Clone(ops)
			j := grants[1+rng.IntN(len(grants)-1)]
			v = *b[j].Value
			v.Fence = 1
			b[j].Value = &v
			cases = append(cases, tc{"sim fence repeats", b})
		}
	}
	shapes := []genConfig{
		{procs: 2, keys: 1, opsPerProc: 6, maxLat: 3, maxGap: 4, maxTTL: 10},
		{procs: 3, keys: 1, opsPerProc: 8, maxLat: 4, maxGap: 6, maxTTL: 12, pInfo: 0.15},
		{procs: 4, keys: 2, opsPerProc: 10, maxLat: 2, maxGap: 10, maxTTL: 20, pInfo: 0.1, crash: true},
		{procs: 5, keys: 1, opsPerProc: 6, maxLat: 5, maxGap: 20, maxTTL: 8, pInfo: 0.1},
		{procs: 2, keys: 1, opsPerProc: 6, maxLat: 3, maxGap: 4, maxTTL: 12, pInfo: 0.1, renewers: true},
		{procs: 3, keys: 2, opsPerProc: 8, maxLat: 1, maxGap: 8, maxTTL: 16, renewers: true},
	}
	for si, shape := range shapes {
		for seed := uint64(0); seed < 150; seed++ {
			rng := rand.New(rand.NewPCG(seed, uint64(si)+100))
			cases = append(cases, tc{"generated", withFinalHeal(genLockHistory(rng, shape))})
		}
	}
	windows, exact := 0, 0
	verdicts := map[Verdict]int{}
	for i, c := range cases {
		whole := Check(ctx, c.ops, Config{Timeout: time.Minute})
		for _, target := range []int{1, 7} {
			win, st, ok := windowed(c.ops, target)
			if !ok {
				continue // read again and checked whole: nothing to compare
			}
			if target == 1 {
				windows += st.cuts
				exact++
			}
			sameResult(t, c.name+" #"+string(rune('0'+i%10)), whole, win)
		}
		verdicts[whole.Verdict]++
	}
	t.Logf("%d histories (%v), %d checked in windows, %d cuts", len(cases), verdicts, exact, windows)
	if windows < len(cases) || verdicts[Invalid] == 0 || verdicts[Valid] == 0 {
		t.Fatalf("the histories did not exercise the windows: %d cuts, verdicts %v", windows, verdicts)
	}
}

// TestCheckFileReadsInWindows: CheckFile on a history file gives Check's
// result, in windows.
func TestCheckFileReadsInWindows(t *testing.T) {
	ops := simValidRun(rand.New(rand.NewPCG(3, 4)), simConfig{procs: 5, keys: 2, events: 20_000, ttl: 5e6, pInfo: 0.02, heal: true})
	path := filepath.Join(t.TempDir(), "history.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	enc := json.NewEncoder(f)
	for i := range ops {
		if err := enc.Encode(&ops[i]); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()
	whole := Check(ctx, ops, Config{Timeout: time.Minute})
	res, truncated, err := checkFile(ctx, path, Config{Timeout: time.Minute}, 1000)
	if err != nil || truncated {
		t.Fatalf("CheckFile: %v (truncated %v)", err, truncated)
	}
	sameResult(t, "file", whole, res)
	if _, st, _ := windowed(ops, 1000); st.cuts == 0 {
		t.Fatal("no window was cut")
	}
}
