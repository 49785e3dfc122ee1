package checker

import (
	"slices"
	"strings"
	"testing"
)

// fenceHistory: process 1 holds with token a, releases; process 2 then
// acquires with token b and writes with it.
func fenceHistory(a, b int64, concurrent bool) *hb {
	h := &hb{}
	if concurrent {
		// Process 2's acquire is invoked before process 1's completes:
		// their tokens may come in either order.
		h.inv(0, 1, "acquire", "lock-0", nil).inv(ms, 2, "acquire", "lock-0", nil)
		h.ok(2*ms, 1, "acquire", "lock-0", fenced(s, a))
		h.section(10*ms, 1, 0, 1, a, accepted(1, 1))
		h.inv(100*ms, 1, "release", "lock-0", nil).ok(101*ms, 1, "release", "lock-0", nil)
		h.ok(102*ms, 2, "acquire", "lock-0", fenced(s+ms, b))
	} else {
		h.inv(0, 1, "acquire", "lock-0", nil).ok(ms, 1, "acquire", "lock-0", fenced(s, a))
		h.section(10*ms, 1, 0, 1, a, accepted(1, 1))
		h.inv(100*ms, 1, "release", "lock-0", nil).ok(101*ms, 1, "release", "lock-0", nil)
		h.inv(102*ms, 2, "acquire", "lock-0", nil).ok(103*ms, 2, "acquire", "lock-0", fenced(s+102*ms, b))
	}
	h.section(110*ms, 2, 1, 2, b, func(h *hb, t int64) { h.ok(t, 2, "write", "lock-0", ctr(2)) })
	h.inv(200*ms, 2, "release", "lock-0", nil).ok(201*ms, 2, "release", "lock-0", nil)
	h.inv(300*ms, 9, "read", "lock-0", nil).ok(301*ms, 9, "read", "lock-0", ctr(2))
	return h
}

func TestFenceGoingBackwardsIsInvalid(t *testing.T) {
	for _, c := range []struct {
		name string
		a, b int64
		what string
	}{
		{"backwards", 5, 1, "went backwards"},
		{"repeated", 5, 5, "handed out twice"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := check(t, fenceHistory(c.a, c.b, false).ops)
			want(t, r, Invalid, map[string]Verdict{LockPromise: Valid, Resource: Invalid, Liveness: Valid})
			if got := kinds(r.Violations, true); !slices.Equal(got, []string{KindFenceBackwards}) {
				t.Fatalf("kinds %v", got)
			}
			v := r.Violations[0]
			if !strings.Contains(v.Description, c.what) || !slices.Equal(v.Processes, []int{1, 2}) {
				t.Errorf("%+v", v)
			}
			if r.Checkers[Resource].Stats["fence-backwards"] != 1 {
				t.Errorf("stats %v", r.Checkers[Resource].Stats)
			}
		})
	}
}

func TestFenceOrderOfConcurrentGrantsIsFree(t *testing.T) {
	// Increasing tokens are fine; so are decreasing ones for grants whose
	// calls overlapped (the counter may have numbered them either way).
	for _, h := range []*hb{fenceHistory(1, 2, false), fenceHistory(2, 1, true)} {
		r := check(t, h.ops)
		if r.Checkers[Resource].Verdict != Valid {
			t.Errorf("resource %v: %+v", r.Checkers[Resource].Verdict, r.Violations)
		}
	}
}
