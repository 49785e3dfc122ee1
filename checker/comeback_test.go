package checker

import (
	"fmt"
	"testing"

	"github.com/lockharness/lockharness/history"
)

// TestWindowedKeysThatComeBack: what the carry keeps of a process and key
// that finished (released, quiet, its entry gone to the file among a
// thousand others) is what the windows after need when the key comes back
// much later: the same process releasing with a stale token (no
// lost-lease evidence: the token of its grant of the first window says
// so), writing without a lease (a stale write, named by its old
// claim), its watchdog renewing after the release (an orphan lock), another
// process acquiring it; and calls that name no key, which carryClaims
// follows apart from the keys'. The windowed check must be the whole
// check, cut at every point it allows.
func TestWindowedKeysThatComeBack(t *testing.T) {
	b := &hb{}
	tok := func(s string, d int64) *history.Value { return &history.Value{Token: s, Deadline: d} }
	b.inv(10, 1, history.FAcquire, "k", nil).ok(11, 1, history.FAcquire, "k", tok("t1", 500))
	b.inv(12, 1, history.FRelease, "k", tok("t1", 0)).ok(13, 1, history.FRelease, "k", nil)
	// (Keyless claims granted and held across cuts: TestWindowedKeylessClaims.)
	b.inv(14, 5, history.FAcquire, "", nil).fail(15, 5, history.FAcquire, "")
	b.inv(16, 5, history.FRelease, "", tok("n1", 0)).ev(17, 5, history.Fail, history.FRelease, "", &history.Value{NotHeld: true})
	// A thousand keys come and go between: the windows cut, and the
	// carry's entries of k go to the file.
	at := b.freshKeys(1000, 1000)
	notHeld := &history.Value{NotHeld: true}
	b.inv(at, 1, history.FWrite, "k", ctr(1)).ok(at+1, 1, history.FWrite, "k", nil)
	// A renew that names no token grants k again; the release's "not
	// held" names an older lease than the latest the process was granted
	// (t1, in the first window), so it is no evidence against this one.
	b.inv(at+2, 1, history.FRenew, "k", nil).ok(at+3, 1, history.FRenew, "k", &history.Value{Deadline: at + 30})
	b.inv(at+4, 1, history.FRelease, "k", tok("t0", 0)).ev(at+5, 1, history.Fail, history.FRelease, "k", notHeld)
	b.inv(at+6, 2, history.FAcquire, "k", nil).ok(at+7, 2, history.FAcquire, "k", tok("t2", at+8))
	b.inv(at+8, 2, history.FRelease, "k", tok("t2", 0)).ok(at+9, 2, history.FRelease, "k", nil)
	b.inv(at+9, 5, history.FRelease, "", tok("n0", 0)).ev(at+9, 5, history.Fail, history.FRelease, "", notHeld)
	owner := history.Process(1)
	renew := func(typ history.Type, t int64, v *history.Value) {
		b.ops = append(b.ops, history.Op{Index: int64(len(b.ops)), Time: t, Process: 11, Owner: &owner, Type: typ, F: history.FRenew, Key: "k", Value: v})
	}
	renew(history.Invoke, at+10, nil)
	renew(history.OK, at+11, tok("t1", at+40))
	b.inv(at+12, 3, history.FAcquire, "k", nil).fail(at+13, 3, history.FAcquire, "k")
	b.nem(at+60, history.Invoke, history.FFinalHeal).nem(at+61, history.OK, history.FFinalHeal)
	b.inv(at+2000, 3, history.FAcquire, "k", nil).ok(at+2001, 3, history.FAcquire, "k", tok("t3", at+3000))
	b.inv(at+2002, 3, history.FRelease, "k", tok("t3", 0)).ok(at+2003, 3, history.FRelease, "k", nil)

	whole := checkOps(ctx, b.ops, Config{})
	kinds := map[string]bool{}
	for _, v := range whole.Violations {
		kinds[v.Kind] = true
	}
	if !kinds[KindStaleWrite] || !kinds[KindOrphan] || kinds[KindLostLease] {
		t.Fatalf("the history does not show what it is for: violations %+v", whole.Violations)
	}
	for _, target := range []int{1, 7, 100} {
		win, st, ok := windowed(b.ops, target)
		if !ok || st.cuts < 10 {
			t.Fatalf("target %d: exact %v, %d cuts", target, ok, st.cuts)
		}
		sameResult(t, fmt.Sprintf("target %d", target), whole, win)
	}
}

// TestWindowedKeylessClaims: calls that name no key are one lock of their
// own (prepare judges them together), so the cutter must follow their
// claims as a key's: a keyless grant held across a thousand keys' cycles
// may not be cut, or the windows after it would not see it held (a second
// keyless holder overlapping it, the first's release ending its hold).
func TestWindowedKeylessClaims(t *testing.T) {
	b := &hb{}
	tok := func(s string, d int64) *history.Value { return &history.Value{Token: s, Deadline: d} }
	b.inv(10, 5, history.FAcquire, "", nil).ok(11, 5, history.FAcquire, "", tok("n1", 1_000_000))
	at := b.freshKeys(1000, 1000)
	b.inv(at, 6, history.FAcquire, "", nil).ok(at+1, 6, history.FAcquire, "", tok("n2", at+500))
	b.inv(at+2, 5, history.FRelease, "", tok("n1", 0)).ok(at+3, 5, history.FRelease, "", nil)
	b.inv(at+4, 6, history.FRelease, "", tok("n2", 0)).ok(at+5, 6, history.FRelease, "", nil)

	whole := checkOps(ctx, b.ops, Config{})
	if whole.Verdict != Invalid {
		t.Fatalf("two keyless holders at once should be invalid: %s %+v", whole.Verdict, whole.Violations)
	}
	for _, target := range []int{1, 7, 100} {
		win, st, ok := windowed(b.ops, target)
		if !ok || st.cuts < 10 {
			t.Fatalf("target %d: exact %v, %d cuts", target, ok, st.cuts)
		}
		sameResult(t, fmt.Sprintf("target %d", target), whole, win)
	}
}

// freshKeys adds n keys that process 4 acquires and releases once each,
// one after another from t0 (ten nanoseconds a key), and returns the time
// after the last: enough of them cut the windows between what comes
// before and after, and send the carry's entries to its file.
func (b *hb) freshKeys(t0 int64, n int) int64 {
	at := t0
	for i := range n {
		key := fmt.Sprintf("f%d", i)
		b.inv(at, 4, history.FAcquire, key, nil).ok(at+1, 4, history.FAcquire, key, &history.Value{Token: "x", Deadline: at + 100})
		b.inv(at+2, 4, history.FRelease, key, nil).ok(at+3, 4, history.FRelease, key, nil)
		at += 10
	}
	return at
}
