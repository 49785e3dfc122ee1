package checker

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lockharness/lockharness/history"
)

// lostUpdates appends n lost updates on lock-0 from t0 on: processes 1 and
// 2 both read v and both write v+1, storage accepting both, for v = 0, 1,
// …; it returns the time after the last.
func (b *hb) lostUpdates(t0 int64, n int) int64 {
	for v := int64(0); v < int64(n); v++ {
		b.inv(t0, 1, "read", "lock-0", nil).ok(t0+ms, 1, "read", "lock-0", ctr(v))
		b.inv(t0+2*ms, 2, "read", "lock-0", nil).ok(t0+3*ms, 2, "read", "lock-0", ctr(v))
		b.inv(t0+4*ms, 1, "write", "lock-0", wr(v+1, 0)).ok(t0+5*ms, 1, "write", "lock-0", ctr(v+1))
		b.inv(t0+6*ms, 2, "write", "lock-0", wr(v+1, 0)).ok(t0+7*ms, 2, "write", "lock-0", ctr(v+1))
		t0 += 10 * ms
	}
	return t0
}

// Past maxReported lost updates on a key they are counted, not spelled out.
func TestLostUpdatesPastTheCapAreCounted(t *testing.T) {
	const n = maxReported + 5
	b := &hb{}
	b.lostUpdates(0, n)
	r := check(t, b.ops)
	want(t, r, Invalid, map[string]Verdict{Resource: Invalid})
	if got := r.Checkers[Resource].Stats["lost-updates"]; got != n {
		t.Errorf("%v lost updates counted, want %d", got, n)
	}
	spelled := 0
	for _, v := range r.Violations {
		if v.Kind == KindLostUpdate {
			spelled++
		}
	}
	if spelled != maxReported {
		t.Errorf("%d lost updates spelled out, want %d", spelled, maxReported)
	}
}

// A lost update is a proof of its own: when porcupine runs out of time,
// the key is still not linearizable, and the verdict invalid, not unknown.
func TestLostUpdateIsProofWhenPorcupineRunsOutOfTime(t *testing.T) {
	b := &hb{}
	b.lostUpdates(0, 1)
	r := checkOps(ctx, b.ops, Config{Timeout: time.Nanosecond})
	if got := r.Checkers[Resource]; got.Verdict != Invalid || got.Reason != resourceInvalid {
		t.Errorf("resource %s (%s), want invalid", got.Verdict, got.Reason)
	}
	if len(r.NonLinearizableKeys) != 1 || r.NonLinearizableKeys[0] != "lock-0" {
		t.Errorf("non-linearizable keys %v", r.NonLinearizableKeys)
	}
	if got := kinds(r.Violations, true); len(got) != 1 || got[0] != KindLostUpdate {
		t.Errorf("findings %v, want the lost update alone", got)
	}
}

// A key's latest read may lie in a window before the last of a long
// history: the last window judges the final count against every window's
// writes, as the whole check does. A verification read (a read-only
// section) keeps its key open until the last window; a key whose latest
// section wrote splits, and has no final read to judge.
func TestLastReadOfAKeyInAnEarlierWindow(t *testing.T) {
	for _, final := range []int64{3, 2, -1} { // right, one update short, no verification read
		b := &hb{}
		for v := int64(0); v < 3; v++ {
			t0 := v * 10 * ms
			b.section(t0, 1, v, v+1, 0, accepted(1, v+1))
		}
		b.inv(40*ms, 1, "acquire", "lock-9", nil).ok(41*ms, 1, "acquire", "lock-9", lease(0)) // process 1 acquired
		if final >= 0 {
			b.inv(50*ms, 9, "read", "lock-0", nil).ok(51*ms, 9, "read", "lock-0", ctr(final))
		}
		b.nem(60*ms, history.Invoke, history.FFinalHeal).nem(61*ms, history.OK, history.FFinalHeal)
		// Then a long while of another key.
		for i := int64(0); i < 40; i++ {
			t0 := 100*ms + i*10*ms
			b.inv(t0, 3, "acquire", "lock-1", nil).ok(t0+ms, 3, "acquire", "lock-1", lease(t0+5*ms))
			b.inv(t0+2*ms, 3, "release", "lock-1", nil).ok(t0+3*ms, 3, "release", "lock-1", nil)
		}
		whole := check(t, b.ops)
		win, st, exact := windowed(b.ops, 1)
		if !exact || st.cuts < 2 {
			t.Fatalf("windowed check: exact %v, %d cuts", exact, st.cuts)
		}
		name := fmt.Sprintf("final read %d", final)
		sameResult(t, name, whole, win)
		got, judged := win.Checkers[Resource].Stats["final-count/lock-0"]
		if judged != (final >= 0) || got != float64(max(final, 0)) {
			t.Errorf("%s: final count %v (judged %v)", name, got, judged)
		}
		bad := strings.Contains(strings.Join(kinds(win.Violations, true), " "), KindFinalCount)
		if bad != (final == 2) {
			t.Errorf("%s: final-count finding %v, violations %+v", name, bad, win.Violations)
		}
	}
}

// A write without a claim that failed is a stale write that says so.
func TestStaleWriteThatFailed(t *testing.T) {
	b := &hb{}
	b.inv(0, 1, "write", "lock-0", wr(1, 0)).fail(ms, 1, "write", "lock-0")
	r := check(t, b.ops)
	var found []string
	for _, v := range r.Violations {
		if v.Kind == KindStaleWrite {
			found = append(found, v.Description)
		}
	}
	if len(found) != 1 || !strings.HasSuffix(found[0], "without holding lock-0; it failed") {
		t.Errorf("stale writes %q", found)
	}
}
