package checker

import (
	"strings"
	"testing"

	"github.com/lockharness/lockharness/history"
)

// failingAcquires appends n failed acquires by process p on lock-0, one
// every 100ms from t0.
func (b *hb) failingAcquires(t0 int64, p, n int) *hb {
	for i := int64(0); i < int64(n); i++ {
		t := t0 + i*100*ms
		b.inv(t, p, "acquire", "lock-0", nil).fail(t+ms, p, "acquire", "lock-0")
	}
	return b
}

// A run killed early loses its last unflushed events: here the holder's
// grant. What is left looks like a lock nobody can take, but the history
// has no final heal: liveness is unknown, never invalid.
func TestLivenessWithoutFinalHealIsUnknown(t *testing.T) {
	b := &hb{}
	b.inv(0, 0, "acquire", "lock-0", nil) // its ok was never written
	b.failingAcquires(10*ms, 1, 8)
	r := check(t, b.ops)
	want(t, r, Unknown, map[string]Verdict{Liveness: Unknown})
	if reason := r.Checkers[Liveness].Reason; !strings.Contains(reason, "no final heal") {
		t.Errorf("reason %q does not say the final heal is missing", reason)
	}
	if len(r.Violations) != 0 {
		t.Errorf("violations on a history that cannot show one: %v", r.Violations)
	}
}

// An interrupted run heals and stops: its recovery period is shorter than a
// lease, too short to call the lock unavailable.
func TestLivenessWithShortRecoveryIsUnknown(t *testing.T) {
	b := &hb{}
	b.inv(0, 0, "acquire", "lock-0", nil).ok(ms, 0, "acquire", "lock-0", lease(2*s))
	b.inv(500*ms, 0, "release", "lock-0", nil).info(600*ms, 0, "release", "lock-0")
	b.nem(700*ms, history.Invoke, history.FFinalHeal).nem(700*ms, history.OK, history.FFinalHeal)
	b.failingAcquires(2100*ms, 1, 3) // lease ended at 2s; recovery 1.6s < 2s
	r := check(t, b.ops)
	want(t, r, Unknown, map[string]Verdict{Liveness: Unknown})
	if reason := r.Checkers[Liveness].Reason; !strings.Contains(reason, "--recovery") {
		t.Errorf("reason %q does not name the fix", reason)
	}
}

// A crashed holder of a lease that never expires (naive SETNX) blocks the
// key for good: a recovery period of any length shows it.
func TestPermanentDeadlockIsInvalidInShortRecovery(t *testing.T) {
	b := &hb{}
	b.inv(0, 0, "acquire", "lock-0", nil).ok(ms, 0, "acquire", "lock-0", lease(0))
	b.inv(10*ms, 0, "crash", "lock-0", nil).info(10*ms, 0, "crash", "lock-0")
	b.nem(50*ms, history.Invoke, history.FFinalHeal).nem(50*ms, history.OK, history.FFinalHeal)
	b.failingAcquires(100*ms, 1, 3) // 250ms of recovery
	r := check(t, b.ops)
	want(t, r, Invalid, map[string]Verdict{Liveness: Invalid})
}

// A success shows liveness however short the window: a prefix where the
// lock changed hands is valid.
func TestLivenessSuccessInPrefixIsValid(t *testing.T) {
	b := &hb{}
	b.inv(0, 0, "acquire", "lock-0", nil).ok(ms, 0, "acquire", "lock-0", lease(s))
	b.inv(5*ms, 0, "release", "lock-0", nil).ok(6*ms, 0, "release", "lock-0", nil)
	b.inv(10*ms, 1, "acquire", "lock-0", nil).ok(11*ms, 1, "acquire", "lock-0", lease(s))
	r := check(t, b.ops)
	want(t, r, Valid, map[string]Verdict{Liveness: Valid})
}
