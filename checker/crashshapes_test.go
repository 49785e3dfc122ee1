package checker

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/history/synth"
)

// withCrashesInFlight is a history of the Crash shape (ops) where the
// crashes strike with an operation in flight, which then never completes:
// every other holder that dies in its critical section has invoked its
// release (its crash's invocation becomes the release's, the crash is its
// lone info), and every client that dies at a failpoint in its acquire
// loses the acquire's completion. The crashed holders left as they are
// keep a lease that is live when the crash comes. It also says how many
// releases and acquires it left in flight.
func withCrashesInFlight(ops []history.Op) (_ []history.Op, releases, acquires int) {
	out := make([]history.Op, 0, len(ops))
	last := map[history.Process]int{} // → position in out of the process's latest event
	holders := 0
	for _, op := range ops {
		j, seen := last[op.Process]
		if op.F == history.FCrash && op.Type == history.Invoke && seen {
			prev := out[j]
			switch {
			case prev.F == history.FAcquire && prev.Type == history.Info:
				// Dead at a failpoint in its acquire: the acquire
				// never completes.
				out = slices.Delete(out, j, j+1)
				acquires++
			case prev.F == history.FRead && prev.Type == history.OK:
				holders++
				if holders%2 == 0 {
					// Dead with its release in flight.
					op.F, op.Value = history.FRelease, &history.Value{Token: "in-flight"}
					releases++
				}
			}
		}
		last[op.Process] = len(out)
		out = append(out, op)
	}
	return out, releases, acquires
}

// TestCrashesInFlightInWindows: crashes with a release or an acquire in
// flight (never completed) and crashed holders whose lease is live at a
// cut are judged as the whole check judges them, the history is cut
// across them, and a correct lock's history stays valid.
func TestCrashesInFlightInWindows(t *testing.T) {
	for seed := uint64(0); seed < 4; seed++ {
		ops, releases, acquires := withCrashesInFlight(shapeOps(t, synth.Crash, 40_000, seed))
		if releases == 0 || acquires == 0 {
			t.Fatalf("seed %d: %d releases and %d acquires in flight at a crash", seed, releases, acquires)
		}
		name := fmt.Sprintf("crash shape seed %d, crashes in flight", seed)
		incomplete := 0
		p := mustPrepare(t, ops)
		for i := range p.calls {
			if !p.calls[i].completed() {
				incomplete++
			}
		}
		if incomplete == 0 {
			t.Fatalf("%s: every operation completed", name)
		}
		whole := checkOps(ctx, ops, Config{Timeout: time.Minute})
		if whole.Verdict != Valid {
			t.Fatalf("%s: verdict %s: %+v %v", name, whole.Verdict, whole.Checkers, whole.Violations)
		}
		win, st, exact := windowed(ops, 2000)
		if !exact || st.cuts < len(ops)/2000/2 {
			t.Fatalf("%s: %d events, windows %+v (exact %v)", name, len(ops), st, exact)
		}
		sameResult(t, name, whole, win)
		t.Logf("%s: %d events, %d operations never completed, %+v", name, len(ops), incomplete, st)
	}
}

// TestCrashNoExpiryShapeInWindows: holders of leases that never expire
// die holding them (synth.CrashNoExpiry), and their keys' other processes
// are refused from then on: a valid history (its recovery makes no
// attempt), which the windows judge as the whole check does, though they
// cannot cut a key after its holder's crash (its claim never ends).
func TestCrashNoExpiryShapeInWindows(t *testing.T) {
	ops := shapeOps(t, synth.CrashNoExpiry, 30_000, 1)
	crashes := 0
	for _, op := range ops {
		if op.F == history.FCrash && op.Type == history.Info {
			crashes++
		}
	}
	whole := checkOps(ctx, ops, Config{Timeout: time.Minute})
	if whole.Verdict != Valid || crashes < 5 {
		t.Fatalf("verdict %s, %d crashes: %+v %v", whole.Verdict, crashes, whole.Checkers, whole.Violations)
	}
	win, st, exact := windowed(ops, 2000)
	if !exact {
		t.Fatal("not checked in windows")
	}
	t.Logf("%d events, %d crashes, %+v", len(ops), crashes, st)
	sameResult(t, "crash without expiry", whole, win)
}
