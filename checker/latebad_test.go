package checker

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/lockharness/lockharness/history"
)

// TestLateViolationInALongHistory: a long valid run with an overlap at its
// very end. The overlap analysis finds it; porcupine's check (whose chunks
// pass until the last) must not blow up time or memory re-checking the
// whole history.
func TestLateViolationInALongHistory(t *testing.T) {
	ops := simValidRun(rand.New(rand.NewPCG(5, 5)), simConfig{procs: 6, keys: 1, events: 100_000, ttl: 1e9})
	last := ops[len(ops)-1].Time
	b := &hb{ops: ops}
	b.inv(last+s, 100, "acquire", "lock-0", nil).ok(last+s+ms, 100, "acquire", "lock-0", lease(0))
	b.inv(last+s+2*ms, 101, "acquire", "lock-0", nil).ok(last+s+3*ms, 101, "acquire", "lock-0", lease(0))
	for i := range b.ops {
		b.ops[i].Index = int64(i)
	}
	start := time.Now()
	r := checkOps(ctx, b.ops, Config{Timeout: 20 * time.Second})
	t.Logf("%d events checked in %v; lock-promise: %s", len(b.ops), time.Since(start), r.Checkers[LockPromise].Reason)
	want(t, r, Invalid, map[string]Verdict{LockPromise: Invalid})
	_ = history.OK
}
