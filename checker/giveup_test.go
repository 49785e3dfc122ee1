package checker

import (
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/lockharness/lockharness/history"
)

// timedOutReleases is a contended key of a correct lock where every
// release times out (info, 1.9 s after its invocation, as a release
// under latency does): each holder's successor acquires it 10 ms after
// the holder let go, so each release's interval spans some 48 later
// holds. cycles holds in all, by 50 processes in turn.
func timedOutReleases(cycles int) []history.Op {
	b := &hb{}
	const procs, step = 50, 40 * ms
	type done struct {
		t int64
		p int
	}
	var pending []done       // releases in flight, by completion time
	flush := func(t int64) { // the completions due by t
		for len(pending) > 0 && pending[0].t <= t {
			b.info(pending[0].t, pending[0].p, "release", "lock-0")
			pending = pending[1:]
		}
	}
	for c := range cycles {
		t0, p := int64(c)*step, c%procs
		flush(t0)
		b.inv(t0, p, "acquire", "lock-0", nil)
		flush(t0 + ms)
		b.ok(t0+ms, p, "acquire", "lock-0", lease(t0+1000*ms))
		flush(t0 + 30*ms)
		b.inv(t0+30*ms, p, "release", "lock-0", &history.Value{Token: "t"})
		pending = append(pending, done{t0 + 30*ms + 1900*ms, p})
	}
	for _, d := range pending {
		b.info(d.t, d.p, "release", "lock-0")
	}
	return b.ops
}

// TestGiveUpTakesEffectAtItsInvocation: a release that failed, timed out
// or never completed is, for the check, a give-up at its invocation (see
// leaseOps); pictures keep its interval; both say the same.
func TestGiveUpTakesEffectAtItsInvocation(t *testing.T) {
	ops := timedOutReleases(300)
	p := mustPrepare(t, ops)
	narrow, wide := leaseOps(p, "lock-0", false), leaseOps(p, "lock-0", true)
	gaveUp := 0
	for _, op := range narrow {
		if in := op.Input.(LeaseOp); in.Kind == LeaseGiveUp {
			gaveUp++
			if op.Return != op.Call || in.Return != in.Call || in.ReturnIndex != in.CallIndex {
				t.Fatalf("a give-up over an interval: %+v", op)
			}
		}
	}
	if gaveUp != 300 {
		t.Fatalf("%d give-ups, want 300", gaveUp)
	}
	for _, ops := range [][]porcupine.Operation{narrow, wide[:200]} {
		if r := checkLinearizable(ctx, LeaseMutexModel(), ops, time.Minute); r.res != porcupine.Ok {
			t.Fatalf("%d operations: %v %s", len(ops), r.res, r.reason)
		}
	}
	if r := checkOps(ctx, ops, Config{Timeout: time.Minute}); r.Checkers[LockPromise].Verdict != Valid {
		t.Fatalf("lock promise: %+v %v", r.Checkers[LockPromise], r.Violations)
	}
}
