package reports

import (
	"fmt"
	"image"
	"slices"
	"testing"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/history"
)

func TestPackLanes(t *testing.T) {
	// Three client slots, each crashing every 10 s: the process of slot
	// s in generation k is 3k+s, alive from 10k to 10k+9.
	var crashed []life
	for k := range 5 {
		for s := range 3 {
			crashed = append(crashed, life{Proc: 3*k + s, From: int64(10 * k), To: int64(10*k + 9)})
		}
	}
	for _, tc := range []struct {
		name  string
		lives []life
		want  [][]int
	}{
		{"none", nil, nil},
		{"no crashes: a row per process, in order of process", []life{
			{Proc: 2, From: 0, To: 100}, {Proc: 0, From: 3, To: 100}, {Proc: 1, From: 1, To: 90}, {Proc: 3, From: 0, To: 99},
		}, [][]int{{0}, {1}, {2}, {3}}},
		{"crashes: a row per slot", crashed, [][]int{{0, 3, 6, 9, 12}, {1, 4, 7, 10, 13}, {2, 5, 8, 11, 14}}},
		{"a lease outliving its holder's crash keeps its row until it ends", []life{
			{Proc: 0, From: 0, To: 50}, // crashed at 10 holding a lease to 50
			{Proc: 1, From: 0, To: 100},
			{Proc: 2, From: 20, To: 100}, // 0's successor, while 0's lease lives
			{Proc: 3, From: 60, To: 100}, // after it
		}, [][]int{{0, 3}, {1}, {2}}},
		{"a life that starts as another ends does not share its row", []life{
			{Proc: 0, From: 0, To: 10}, {Proc: 1, From: 10, To: 20}, {Proc: 2, From: 11, To: 20},
		}, [][]int{{0, 2}, {1}}},
		{"the lowest lane free is taken", []life{
			{Proc: 0, From: 0, To: 10}, {Proc: 1, From: 0, To: 5}, {Proc: 2, From: 6, To: 20}, {Proc: 3, From: 11, To: 20},
		}, [][]int{{0, 3}, {1, 2}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := packLanes(tc.lives)
			if !slices.EqualFunc(got, tc.want, slices.Equal[[]int]) {
				t.Errorf("packLanes = %v, want %v", got, tc.want)
			}
		})
	}
}

// crashFixture is a run of slots clients, each crashing every
// generation: a new process takes the slot (as workloads.Mutex numbers
// them). A crashed holder's lease outlives the crash. Processes 3 and 4
// (of different slots) overlap on lock-0, and 8 makes a lost update.
func crashFixture(slots, generations int) ([]history.Op, checker.Result) {
	b := &builder{ttl: 400 * ms}
	const gen = 1000 * ms
	var res checker.Result
	for k := range generations {
		for s := range slots {
			p := k*slots + s
			t0 := int64(k)*gen + int64(s)*10*ms + 20*ms
			key := fmt.Sprint("lock-", s)
			b.section(p, key, t0, t0+200*ms, int64(p+1), false)
			if k == generations-1 {
				continue
			}
			// The last section's lease is still live when the client crashes.
			t1 := t0 + 600*ms
			b.section(p, key, t1, -1, int64(p+1), false)
			b.ev(t1+50*ms, history.Process(p), history.Invoke, history.FCrash, "", nil)
			b.ev(t1+50*ms, history.Process(p), history.Info, history.FCrash, "", nil)
		}
	}
	b.nemesis(int64(generations)*gen, history.FFinalHeal, nil, "")
	ops := b.build()
	res = checker.Result{Verdict: checker.Invalid, Checkers: map[string]checker.CheckResult{"lock-promise": {Verdict: checker.Invalid}},
		Counts: counts(ops), Holds: b.holds}
	res.Violations = []checker.Violation{
		{Checker: "lock-promise", Kind: checker.KindOverlap, Key: "lock-0", Processes: []int{3, 4}, Start: 1100 * ms, End: 1200 * ms, Fatal: true},
		{Checker: "resource", Kind: checker.KindLostUpdate, Key: "lock-2", Processes: []int{8}, Start: 2100 * ms, End: 2100 * ms, Fatal: true},
	}
	return ops, res
}

// On a run with crashes the timeline has a row per client slot, not per
// process, and its violations are still drawn on the rows of the
// processes they name, and on no other.
func TestTimelineOfCrashesHasARowPerSlot(t *testing.T) {
	const slots, generations = 3, 5
	ops, res := crashFixture(slots, generations)
	meta := RunMeta{Test: "crashes", Lock: "token", Start: time.Date(2026, 1, 4, 0, 0, 0, 0, time.UTC)}
	v := newRunView(meta, ops, res)
	img, _, area := drawTimeline(t, v, window{From: 0, To: v.end, Title: "crashes"}, outDir(t, "crash-lanes"), "overview")
	rows := 0
	for _, r := range area.Rows {
		if r.Kind == rowClient {
			rows++
		}
	}
	// The lease a crashed holder leaves lives on after its successor
	// starts: one more process alive at once per slot at most.
	if alive := aliveAtOnce(v); rows > alive || rows >= slots*generations {
		t.Errorf("%d client rows, want at most %d (processes alive at once) of %d processes", rows, alive, slots*generations)
	}
	if len(area.ClientY) != slots*generations {
		t.Errorf("%d processes placed, want %d", len(area.ClientY), slots*generations)
	}
	for _, vi := range res.Violations {
		at := seconds((vi.Start + vi.End) / 2)
		for _, p := range vi.Processes {
			// An overlap's bar covers the row; another finding is a
			// triangle's outline above the row's middle.
			x, y := area.Pixel(at, area.ClientY[p])
			drawn := countRed(img, image.Rect(x-2, y-2, x+3, y+3)) >= 3
			if vi.Kind != checker.KindOverlap {
				drawn = near(img, image.Rect(x-6, y-8, x+7, y+3), colViolation, 40)
			}
			if !drawn {
				t.Errorf("%s of client %d: not drawn on its row at %.2f s", vi.Kind, p, at)
			}
		}
	}
	overlap := res.Violations[0]
	for p, py := range area.ClientY {
		if py == area.ClientY[3] || py == area.ClientY[4] {
			continue
		}
		x, y := area.Pixel(seconds((overlap.Start+overlap.End)/2), py)
		if n := countRed(img, image.Rect(x-2, y-2, x+3, y+3)); n > 0 {
			t.Errorf("client %d's row is red at the overlap of 3 and 4", p)
		}
	}
}

// aliveAtOnce is the most processes of v whose lives overlap at once.
func aliveAtOnce(v *runView) int {
	most := 0
	for _, a := range v.lives {
		n := 0
		for _, b := range v.lives {
			if b.From <= a.From && a.From <= b.To {
				n++
			}
		}
		most = max(most, n)
	}
	return most
}

// A crashed holder's lease that outlives its crash keeps the holder's
// row until it ends: the successor that starts meanwhile is not drawn
// over it.
func TestLaneOfCrashedHolderLastsItsLease(t *testing.T) {
	ops, res := crashFixture(1, 3)
	res.Violations = nil // they name processes of other slots
	meta := RunMeta{Test: "crashes", Lock: "token", Start: time.Date(2026, 1, 4, 0, 0, 0, 0, time.UTC)}
	v := newRunView(meta, ops, res)
	lanes := v.lanesOf(v.procs)
	// Process 0's lease runs from 0.62 s to 1.02 s, past its crash at
	// 0.67 s, to its successor's start; 1's likewise: 2 may take 0's row.
	if !slices.EqualFunc(lanes, [][]int{{0, 2}, {1}}, slices.Equal[[]int]) {
		t.Errorf("lanes %v, want [[0 2] [1]]: lives %v", lanes, v.lives)
	}
	for p, l := range v.lives {
		for _, h := range res.Holds {
			if h.Process == p && v.holdEnd(h) > l.To {
				t.Errorf("client %d's life ends at %d, before its hold to %d", p, l.To, v.holdEnd(h))
			}
		}
	}
}
