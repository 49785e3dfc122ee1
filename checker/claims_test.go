package checker

import (
	"strings"
	"testing"
)

// A grant that continues a live claim (a renewal that hands out a new
// fencing token) gives the claim its token: the hold shows the latest.
func TestAGrantThatContinuesAClaimCarriesItsFence(t *testing.T) {
	b := &hb{}
	b.inv(0, 1, "acquire", "lock-0", nil).ok(ms, 1, "acquire", "lock-0", fenced(100*ms, 1))
	b.inv(50*ms, 1, "renew", "lock-0", nil).ok(51*ms, 1, "renew", "lock-0", fenced(150*ms, 2))
	b.inv(120*ms, 1, "release", "lock-0", nil).ok(121*ms, 1, "release", "lock-0", nil)
	r := check(t, b.ops)
	want(t, r, Valid, map[string]Verdict{LockPromise: Valid})
	if len(r.Holds) != 1 || r.Holds[0].Fence != 2 || r.Holds[0].Start != ms || r.Holds[0].End != 120*ms {
		t.Errorf("holds %+v, want one from 1ms to 120ms with the renewal's fence 2", r.Holds)
	}
}

// Past maxReported overlaps on one key the overlaps are still counted,
// but no more are spelled out.
func TestOverlapsPastTheCapAreCountedNotSpelledOut(t *testing.T) {
	const n = maxReported + 10
	b := &hb{}
	b.inv(0, 0, "acquire", "lock-0", nil).ok(ms, 0, "acquire", "lock-0", lease(0)) // held for good
	for i := int64(0); i < n; i++ {
		t0 := 10*ms + i*10*ms
		b.inv(t0, 1, "acquire", "lock-0", nil).ok(t0+ms, 1, "acquire", "lock-0", lease(t0+100*ms))
		b.inv(t0+5*ms, 1, "release", "lock-0", nil).ok(t0+6*ms, 1, "release", "lock-0", nil)
	}
	r := check(t, b.ops)
	want(t, r, Invalid, map[string]Verdict{LockPromise: Invalid})
	if got := r.Checkers[LockPromise].Stats["overlaps"]; got != n {
		t.Errorf("%v overlaps counted, want %d", got, n)
	}
	spelled := 0
	for _, v := range r.Violations {
		if v.Kind == KindOverlap {
			spelled++
			if !strings.Contains(v.Description, "process 0 and process 1 both held lock-0") {
				t.Errorf("overlap %q", v.Description)
			}
		}
	}
	if spelled != maxReported {
		t.Errorf("%d overlaps spelled out, want %d", spelled, maxReported)
	}
}
