package checker

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/history/synth"
)

// shapeOps is a synthetic history of the shape, of about n events.
func shapeOps(t testing.TB, shape synth.Shape, n int, seed uint64) []history.Op {
	t.Helper()
	ops, err := synth.Ops(synth.Config{Shape: shape, Events: n, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	return ops
}

// TestShapesAreValidAndCut: every synthetic shape is a valid run, and
// the windowed check cuts it and gives the whole check's result.
func TestShapesAreValidAndCut(t *testing.T) {
	for _, shape := range synth.Shapes {
		for seed := uint64(0); seed < 3; seed++ {
			n := 20_000
			if shape == synth.LongHolds {
				n = 100_000 // a hold is about 32,000 events
			}
			ops := shapeOps(t, shape, n, seed)
			name := fmt.Sprintf("%s seed %d", shape, seed)
			whole := checkOps(ctx, ops, Config{Timeout: time.Minute})
			if whole.Verdict != Valid {
				t.Fatalf("%s: verdict %s: %+v %v", name, whole.Verdict, whole.Checkers, whole.Violations)
			}
			win, st, exact := windowed(ops, 2000)
			if !exact {
				t.Fatalf("%s: not checked in windows", name)
			}
			t.Logf("%s: %d events, %+v", name, len(ops), st)
			sameResult(t, name, whole, win)
			if shape != synth.LongHolds && st.cuts < len(ops)/2000/2 || st.cuts < 2 {
				t.Errorf("%s: %d events, only %d cuts", name, len(ops), st.cuts)
			}
		}
	}
}

// TestCrashedProcessRecordingAgainInWindows: an event of a crashed
// process after its crash makes the history unusable, and the windowed
// check (which cut the history before it, across the crash) says so as
// the whole check does.
func TestCrashedProcessRecordingAgainInWindows(t *testing.T) {
	ops := shapeOps(t, synth.Crash, 30_000, 4)
	crash := -1
	for i, op := range ops {
		if op.F == history.FCrash && op.Type == history.Info && i < len(ops)/3 {
			crash = i
		}
	}
	if crash < 0 {
		t.Fatal("no crash in the first third")
	}
	// A later event of another process on another key becomes the
	// crashed process's.
	j := len(ops) * 2 / 3
	for ops[j].Type != history.Invoke || ops[j].Key == ops[crash].Key {
		j++
	}
	bad := slices.Clone(ops)
	bad[j].Process = ops[crash].Process
	whole := checkOps(ctx, bad, Config{Timeout: time.Minute})
	if whole.Verdict != Unknown || !strings.Contains(whole.Checkers[LockPromise].Reason, "crashed at") {
		t.Fatalf("whole check: %s %+v", whole.Verdict, whole.Checkers[LockPromise])
	}
	win, st, exact := windowed(bad, 500)
	if !exact || st.cuts < 10 {
		t.Fatalf("windows: %+v (exact %v)", st, exact)
	}
	sameResult(t, "recorded after its crash", whole, win)
}

// TestWindowsWaitForHeldBack: where cuts hold events back, a window
// waits for more fresh events (checkWindows): a history is cut no more
// often than at the target alone (less often where events were held
// back), and still gives the whole check's result.
func TestWindowsWaitForHeldBack(t *testing.T) {
	fewer := false
	for _, shape := range []synth.Shape{synth.LongHolds, synth.Crash, synth.Valid} {
		n := 20_000
		if shape == synth.LongHolds {
			n = 100_000
		}
		ops := shapeOps(t, shape, n, 1)
		whole := checkOps(ctx, ops, Config{Timeout: time.Minute})
		_, fixed, _ := windowed(ops, 300)
		cfg := Config{Timeout: time.Minute, carryInMemory: 8}
		w := checkWindows(ctx, history.Events(ops), cfg, 300, false)
		if !w.exact || w.noHeal {
			t.Fatalf("%s: not checked in windows: exact %v, no heal %v", shape, w.exact, w.noHeal)
		}
		sameResult(t, string(shape), whole, w.res)
		if w.st.cuts > fixed.cuts || w.st.cuts < 2 {
			t.Fatalf("%s: %d cuts waiting (%+v), %d at the target (%+v)", shape, w.st.cuts, w.st, fixed.cuts, fixed)
		}
		fewer = fewer || w.st.cuts < fixed.cuts
		t.Logf("%s: %d cuts waiting, %d at the target (%d events held back at most)", shape, w.st.cuts, fixed.cuts, fixed.maxHeld)
	}
	if !fewer {
		t.Fatal("no history was cut less often for the events held back")
	}
}
