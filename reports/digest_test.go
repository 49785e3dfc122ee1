package reports

import (
	"context"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/history"
)

// The report drawn from the history file, read event by event, is the
// report drawn from the history in memory: the same results.json, page and
// figures, byte for byte.
func TestRenderOfAFileIsRenderOfEvents(t *testing.T) {
	for name, fixture := range map[string]func() (RunMeta, []history.Op, checker.Result){
		"clock-jump": clockFixture, "valid": validFixture,
	} {
		t.Run(name, func(t *testing.T) {
			meta, ops, res := fixture()
			res = checked(ops, res)
			mem, file := outDir(t, "mem-"+name), outDir(t, "file-"+name)
			writeHistory(t, mem, ops)
			writeHistory(t, file, ops)
			if _, err := Render(context.Background(), mem, record(meta), history.Events(ops), res); err != nil {
				t.Fatal(err)
			}
			out, err := Render(context.Background(), file, record(meta), history.File(filepath.Join(file, HistoryFile)), res)
			if err != nil {
				t.Fatal(err)
			}
			if out.Verdict != res.Verdict {
				t.Errorf("the report of the file returned verdict %s, want %s", out.Verdict, res.Verdict)
			}
			sameFiles(t, mem, file, "between the history in memory and its file")
		})
	}
}

// The latency digest is bounded whatever the length of the run: at most
// maxFine buckets and maxPoints points; its quantiles are within a bin
// (7.5%) of the exact ones, and its largest is exact.
func TestLatencyDigestIsBoundedAndClose(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	l := newLatencyDigest(0)
	const sec = int64(time.Second)
	type lat struct {
		t  int64
		ms float64
	}
	var all []lat
	for t0 := int64(0); t0 < 20_000*sec; t0 += 7 * int64(time.Millisecond) {
		d := int64(math.Exp(rng.NormFloat64()) * 1e6) // about 1 ms, log-normal
		typ := history.OK
		if rng.IntN(3) == 0 {
			typ = history.Fail
		}
		l.add(true, t0, t0+d, typ)
		if typ == history.OK {
			all = append(all, lat{t0, math.Max(float64(d)/1e6, 1e-3)})
		}
	}
	if len(l.buckets) > maxFine || l.numPoints() > maxPoints {
		t.Fatalf("digest of 20,000 s holds %d buckets and %d points, want at most %d and %d", len(l.buckets), l.numPoints(), maxFine, maxPoints)
	}
	var lats []float64 // the first bucket's
	for _, a := range all {
		if a.t < l.fine {
			lats = append(lats, a.ms)
		}
	}
	slices.Sort(lats)
	b := l.buckets[0]
	for _, q := range []float64{0.5, 0.95, 0.99} {
		exact := lats[int(math.Ceil(q*float64(len(lats))))-1]
		got := histQuantile(&b.hist[0], b.max[0], q)
		if math.Abs(got-exact)/exact > 0.075 {
			t.Errorf("q%.2f: %.4f ms from the histogram, %.4f ms exact", q, got, exact)
		}
	}
	if got := histQuantile(&b.hist[0], b.max[0], 1); got != lats[len(lats)-1] {
		t.Errorf("max %.4f, exact %.4f", got, lats[len(lats)-1])
	}
}

// TestRenderOfHoldsInAFileIsRender: a result whose holds a windowed check
// kept in a file (a long run's) renders the same report, byte for byte, as
// the same result with its holds in memory.
func TestRenderOfHoldsInAFileIsRender(t *testing.T) {
	for name, fixture := range map[string]func() (RunMeta, []history.Op, checker.Result){
		"clock-jump": clockFixture, "valid": validFixture,
	} {
		t.Run(name, func(t *testing.T) {
			meta, ops, _ := fixture()
			mem, file := outDir(t, "mem-"+name), outDir(t, "spilled-"+name)
			writeHistory(t, mem, ops)
			writeHistory(t, file, ops)
			cfg := checker.Config{Timeout: time.Minute, Views: true}
			res, _ := checker.Check(context.Background(), history.Events(ops), cfg)
			cfg.HoldsInMemory, cfg.SpillDir = 3, t.TempDir()
			spilled, err := checker.Check(context.Background(), history.File(filepath.Join(file, HistoryFile)), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if !spilled.HoldsInFile() || spilled.NumHolds() != len(res.Holds) || len(res.Holds) < 10 {
				t.Fatalf("holds in a file %v, %d of them; %d in memory", spilled.HoldsInFile(), spilled.NumHolds(), len(res.Holds))
			}
			if _, err := Render(context.Background(), mem, record(meta), history.File(filepath.Join(mem, HistoryFile)), res); err != nil {
				t.Fatal(err)
			}
			if _, err := Render(context.Background(), file, record(meta), history.File(filepath.Join(file, HistoryFile)), spilled); err != nil {
				t.Fatal(err)
			}
			sameFiles(t, mem, file, "when the holds are in a file")
		})
	}
}

// sameFiles fails unless every file in dir a is in dir b, byte for byte.
func sameFiles(t *testing.T, a, b, how string) {
	t.Helper()
	entries, err := os.ReadDir(a)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		x, _ := os.ReadFile(filepath.Join(a, e.Name()))
		y, err := os.ReadFile(filepath.Join(b, e.Name()))
		if err != nil {
			t.Errorf("%s: %s missing: %v", how, e.Name(), err)
			continue
		}
		if string(x) != string(y) {
			t.Errorf("%s differs %s", e.Name(), how)
		}
	}
}

// A check cut short before it read the whole history (its time ran out)
// saw only part of it: the report reads the rest of what it needs first,
// and draws what it draws after a check that read it all.
func TestRenderAfterACheckCutShort(t *testing.T) {
	meta, ops, _ := clockFixture()
	res, _ := checker.Check(context.Background(), history.Events(ops), checker.Config{Views: true})
	short := res
	short.Seen.Complete, short.Seen.Events, short.Seen.End, short.Seen.Clients = false, 7, 0, false
	short.Seen.Nemesis, short.Seen.ClientFaults = short.Seen.Nemesis[:1], nil
	whole, cut := outDir(t, "whole-check"), outDir(t, "cut-check")
	for dir, r := range map[string]checker.Result{whole: res, cut: short} {
		writeHistory(t, dir, ops)
		if _, err := Render(context.Background(), dir, record(meta), history.File(filepath.Join(dir, HistoryFile)), r); err != nil {
			t.Fatal(err)
		}
	}
	sameFiles(t, whole, cut, "after a check cut short")
}

// A close-up of a violation whose events the check did not keep (it found
// the violation in a later window of a long history) is placed once the
// report's pass over the history has found them, and its marks gathered
// by a pass of their own: the same close-ups as where the check kept them.
func TestCloseUpsOfEventsTheCheckDidNotKeep(t *testing.T) {
	meta, ops, _ := clockFixture()
	res, _ := checker.Check(context.Background(), history.Events(ops), checker.Config{})
	if len(res.Violations) == 0 || len(res.Violations[0].Events) == 0 {
		t.Fatalf("the fixture's check found no violation that names events: %+v", res.Violations)
	}
	bare := res
	bare.Seen = seenOf(ops) // every event, none named
	kept, found := outDir(t, "kept-events"), outDir(t, "found-events")
	for dir, r := range map[string]checker.Result{kept: res, found: bare} {
		if _, err := Render(context.Background(), dir, record(meta), history.Events(ops), r); err != nil {
			t.Fatal(err)
		}
	}
	zooms, _ := filepath.Glob(filepath.Join(kept, "timeline*"))
	if len(zooms) < 4 {
		t.Fatalf("only %v drawn", zooms)
	}
	for _, z := range zooms {
		a, _ := os.ReadFile(z)
		b, err := os.ReadFile(filepath.Join(found, filepath.Base(z)))
		if err != nil || string(a) != string(b) {
			t.Errorf("%s differs where the check did not keep the events (%v)", filepath.Base(z), err)
		}
	}
}

// A latency point's cell packs its outcome, column and row into a word
// and gives them back, whatever their sign.
func TestPointCellPacksItsParts(t *testing.T) {
	for _, c := range []struct {
		t   int
		col int64
		row int32
	}{{0, 0, 0}, {2, 1, -120}, {1, 1 << 40, 12_320}, {2, -3, -1}, {0, 123_456_789, 7}} {
		k := newPointCell(c.t, c.col, c.row)
		if k.outcome() != c.t || k.col() != c.col {
			t.Errorf("cell %+v gives back outcome %d, column %d", c, k.outcome(), k.col())
		}
		if want := newPointCell(c.t, c.col/2, c.row); k.withCol(c.col/2) != want {
			t.Errorf("cell %+v moved to column %d is %x, want %x", c, c.col/2, k.withCol(c.col/2), want)
		}
		if o := newPointCell(c.t, c.col, c.row+1); o == k {
			t.Errorf("cells %+v and the row above are one", c)
		}
	}
}

// asMap is the table's cells and points as a map.
func (t *cellTable) asMap() map[pointCell]latPoint {
	m := map[pointCell]latPoint{}
	t.each(func(k pointCell, p latPoint) { m[k] = p })
	return m
}

// The table of latency points keeps what a map keeps: the first point
// put at a cell (addNew), or the earliest (keepEarliest), the cell 0
// too, through its growth and after it is cleared.
func TestCellTableKeepsAsAMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	tab, want := newCellTable(), map[pointCell]latPoint{}
	for round := range 2 {
		for i := range 50_000 {
			k := pointCell(rng.IntN(30_000))
			if i%1000 == 0 {
				k = 0
			}
			p := latPoint{X: rng.Float64(), Y: float64(i)}
			q, had := want[k]
			if round == 0 {
				if got := tab.addNew(k, p); got == had {
					t.Fatalf("addNew(%d) = %v with the cell %v before", k, got, had)
				}
				if !had {
					want[k] = p
				}
				continue
			}
			tab.keepEarliest(k, p)
			if !had || p.X < q.X {
				want[k] = p
			}
		}
		if got := tab.asMap(); tab.n != len(want) || !maps.Equal(got, want) {
			t.Fatalf("round %d: the table holds %d cells (%d counted), a map %d", round, len(got), tab.n, len(want))
		}
		tab.clear()
		clear(want)
	}
}

// pointsMap is the digest's points by cell.
func pointsMap(l *latencyDigest) map[pointCell]latPoint {
	m := map[pointCell]latPoint{}
	l.eachPoint(func(k pointCell, p latPoint) { m[k] = p })
	return m
}

// The latency points kept on the grid and off it are those a map keeps,
// the first point of each cell, the earliest of merged cells when they
// coarsen: with acquires completed late, invoked before the history's
// start and past its end (off the grid's columns), latencies past its
// rows, and every outcome.
func TestPointGridKeepsAMapsPoints(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const n = 300_000
	end := int64(n) * 40_000 // 25,000 acquires a second: coarsens
	l, want, cellT := newLatencyDigest(end), map[pointCell]latPoint{}, startCellT(end)
	types := []history.Type{history.OK, history.Fail, history.Info}
	for i := range n {
		invoke := int64(i) * 40_000
		d := int64(math.Exp(rng.NormFloat64()*2) * 1e6)
		switch rng.IntN(50) {
		case 0:
			d = int64(rng.IntN(30)) * int64(time.Second) // completed late
		case 1:
			d = int64(1e18) // past the grid's rows
		case 2:
			invoke = -invoke // before the start: off the grid
		case 3:
			invoke += 2 * end // past the end: off the grid
		}
		typ := types[rng.IntN(3)]
		l.add(true, invoke, invoke+d, typ)
		ms := max(float64(d)/1e6, 1e-3)
		k := newPointCell(outcomeIndex(typ), invoke/cellT, int32(math.Floor(log10(ms)*pointBinsPerDecade)))
		if _, ok := want[k]; !ok {
			want[k] = latPoint{X: seconds(invoke), Y: ms}
		}
		for len(want) > maxPoints {
			cellT *= 2
			out := map[pointCell]latPoint{}
			for k, p := range want {
				k = k.withCol(k.col() / 2)
				if q, ok := out[k]; !ok || p.X < q.X {
					out[k] = p
				}
			}
			want = out
		}
	}
	if cellT == startCellT(end) || l.offGrid == nil || len(l.grid.pts) == 0 {
		t.Fatalf("the points never coarsened, or none is on the grid or off it")
	}
	if got := pointsMap(l); l.cellT != cellT || l.numPoints() != len(got) || !maps.Equal(got, want) {
		t.Errorf("the digest holds %d points (%d counted) of %d ns; a map %d of %d ns", len(got), l.numPoints(), l.cellT, len(want), cellT)
	}
}

// The latency digest's logarithm is math.Log10's, within 10^-12, over the
// latencies it takes (1 µs to years, in ms), at powers of ten and of two.
func TestLog10IsMathsWithin1e12(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	xs := []float64{1e-3, 1, 10, 1e3, 1e12, 2, 0.5, math.Sqrt2, math.Nextafter(math.Sqrt2, 2), 1.9999999999999998}
	for range 1_000_000 {
		xs = append(xs, math.Pow(10, rng.Float64()*18-3))
	}
	for _, x := range xs {
		if got, want := log10(x), math.Log10(x); math.Abs(got-want) > 1e-12*math.Max(1, math.Abs(want)) {
			t.Fatalf("log10(%v) = %v, math.Log10 %v", x, got, want)
		}
	}
}

// The digest follows each process as maps of them did (procTable): the
// client processes, those that acted, their lives, and calls paired by
// process, for processes numbered in its slots and past them, renewer
// threads, the nemesis, completions without invocation, times out of
// order.
func TestDigestFollowsProcessesAsMaps(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 32))
	procs := []history.Process{0, 1, 2, 7, 63, 64, maxOpenSlots - 1, maxOpenSlots, 1 << 21, -5, history.Nemesis}
	fs := []string{history.FAcquire, history.FRead, history.FWrite, history.FRelease, history.FPause, history.FCrash}
	types := []history.Type{history.Invoke, history.Invoke, history.OK, history.Fail, history.Info}
	d := newDigest(nil, 0)
	wantProcs, wantActed := map[int]bool{}, map[int]bool{}
	lives := map[int]timeSpan{}
	open := map[history.Process]string{}
	acquires, rare, rareDone := 0, 0, 0
	rareOpen := map[history.Process]bool{}
	for i := range 20_000 {
		op := history.Op{Index: int64(i), Time: int64(rng.IntN(1e9)), Process: procs[rng.IntN(len(procs))],
			Type: types[rng.IntN(len(types))], F: fs[rng.IntN(len(fs))], Key: "lock-1"}
		if rng.IntN(10) == 0 {
			owner := history.Process(1)
			op.Owner = &owner
		}
		d.see(&op)
		if op.Process.IsNemesis() {
			continue
		}
		p := int(op.Process)
		if op.Owner == nil {
			wantProcs[p] = true
			lives[p] = lives[p].with(op.Time)
		}
		if op.Type == history.Invoke {
			if op.F != history.FRead {
				wantActed[p] = true
			}
			open[op.Process] = op.F
			rareOpen[op.Process] = op.F == history.FPause || op.F == history.FCrash
			if rareOpen[op.Process] {
				rare++
			}
			continue
		}
		f, ok := open[op.Process]
		if !ok {
			continue
		}
		delete(open, op.Process)
		if rareOpen[op.Process] {
			rareDone++
		}
		if f == history.FAcquire {
			acquires++
		}
	}
	d.finish()
	if !maps.Equal(d.procs, wantProcs) || !maps.Equal(d.acted, wantActed) {
		t.Errorf("processes %v acted %v, maps %v and %v", d.procs, d.acted, wantProcs, wantActed)
	}
	for p, want := range lives {
		if got, ok := d.calls.life(p); !ok || got != want {
			t.Errorf("process %d lived %+v, a map %+v", p, got, want)
		}
	}
	done := 0
	for _, c := range d.rare {
		if c.Done {
			done++
		}
	}
	if d.lat.n != acquires || len(d.rare) != rare || done != rareDone {
		t.Errorf("%d acquires, %d pauses and crashes (%d done); maps %d, %d (%d)", d.lat.n, len(d.rare), done, acquires, rare, rareDone)
	}
}
