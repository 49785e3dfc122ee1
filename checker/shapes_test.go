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
