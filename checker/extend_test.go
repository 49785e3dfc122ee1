package checker

import (
	"testing"

	"github.com/lockharness/lockharness/history"
)

// A lock that "extends" a lease that has already expired (PEXPIRE of a
// missing key reported as success) tells the holder it holds a lock that
// exists nowhere: the next acquire succeeds while the renewed claim runs.
// That is two holders, whoever wrote (the extend-after-expiry scenarios).
func TestExtendOfAnExpiredLeaseThenAnotherGrantIsAnOverlap(t *testing.T) {
	for _, refused := range []bool{false, true} {
		b := &hb{}
		b.inv(0, 1, "acquire", "lock-0", nil).ok(ms, 1, "acquire", "lock-0", lease(s))
		b.inv(10*ms, 1, "read", "lock-0", nil).ok(11*ms, 1, "read", "lock-0", ctr(0))
		b.inv(1800*ms, 1, "renew", "lock-0", nil)
		if refused {
			b.ev(1801*ms, 1, history.Fail, "renew", "lock-0", &history.Value{NotHeld: true})
		} else {
			b.ok(1801*ms, 1, "renew", "lock-0", lease(2800*ms))
		}
		b.inv(2000*ms, 2, "acquire", "lock-0", nil).ok(2001*ms, 2, "acquire", "lock-0", lease(3*s))
		b.section(2010*ms, 2, 0, 1, 0, accepted(2, 1))
		b.inv(2100*ms, 2, "release", "lock-0", nil).ok(2101*ms, 2, "release", "lock-0", nil)
		b.inv(2200*ms, 1, "release", "lock-0", nil).fail(2201*ms, 1, "release", "lock-0")
		b.inv(3*s, 9, "read", "lock-0", nil).ok(3*s+ms, 9, "read", "lock-0", ctr(1))
		r := check(t, b.ops)
		want := Invalid
		if refused {
			want = Valid
		}
		if got := r.Checkers[LockPromise].Verdict; got != want {
			t.Errorf("refused=%v: lock-promise %v, want %v: %+v", refused, got, want, r.Violations)
		}
	}
}
