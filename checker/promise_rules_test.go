package checker

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/lockharness/lockharness/history"
)

// The tests in this file are written from the rules in claim's doc
// comment, one case per interleaving, not from one recorded history.

// tb builds a hand-made history from events given in any order: they are
// sorted by time (ties keep the order given) and numbered.
type tb struct{ ops []history.Op }

func (b *tb) add(t int64, thread, owner int, typ history.Type, f, key string, v *history.Value) {
	op := history.Op{Time: t, Process: history.Process(thread), Type: typ, F: f, Key: key, Value: v}
	if owner >= 0 {
		o := history.Process(owner)
		op.Owner = &o
	}
	b.ops = append(b.ops, op)
}

// call adds an invocation at inv and, unless typ is "", its completion at
// done; thread records it, for owner (-1: its own).
func (b *tb) call(thread, owner int, f, key string, inv, done int64, typ history.Type, in, out *history.Value) {
	b.add(inv, thread, owner, history.Invoke, f, key, in)
	if typ != "" {
		b.add(done, thread, owner, typ, f, key, out)
	}
}

func (b *tb) history() []history.Op {
	ops := slices.Clone(b.ops)
	slices.SortStableFunc(ops, func(a, b history.Op) int { return cmp.Compare(a.Time, b.Time) })
	for i := range ops {
		ops[i].Index = int64(i)
	}
	return ops
}

var (
	notHeld = &history.Value{NotHeld: true}
	refused = &history.Value{} // a fail that is not "not held": a Redis error reply
)

func tokLease(token string, deadline int64) *history.Value {
	return &history.Value{Token: token, Deadline: deadline}
}

// outcome is a completion: its type and value.
type outcome struct {
	name string
	typ  history.Type
	v    *history.Value
}

// Rule 1: a renew concurrent with its own process's release (completed
// after the release's invocation, invoked before its completion), in every
// order of the four events and with every outcome of either, grants
// nothing: the next holder, who acquires right after both, overlaps no one.
// A renew by the client itself (as old histories record a watchdog) and
// one by a renewer thread (Owner) are the same.
func TestRenewConcurrentWithOwnReleaseGrantsNothing(t *testing.T) {
	const relInv, relDone = 1300 * ms, 1310 * ms
	windows := []struct {
		name     string
		inv, ans int64
	}{
		{"invoked before the release, answered before its completion", 1290 * ms, 1305 * ms},
		{"invoked before the release, answered after its completion", 1290 * ms, 1320 * ms},
		{"invoked during the release, answered before its completion", 1302 * ms, 1305 * ms},
		{"invoked during the release, answered after its completion", 1302 * ms, 1320 * ms},
		{"invoked at the release's invocation, answered at its completion", relInv, relDone},
	}
	renews := []outcome{
		{"ok", history.OK, nil}, // value set per case
		{"not held", history.Fail, notHeld},
		{"refused", history.Fail, refused},
		{"info", history.Info, nil},
		{"never answered", "", nil},
	}
	releases := []outcome{
		{"ok", history.OK, nil},
		{"refused", history.Fail, refused},
		{"info", history.Info, nil},
		{"never answered", "", nil},
	}
	for _, w := range windows {
		for _, rn := range renews {
			for _, rl := range releases {
				for _, watchdog := range []bool{false, true} {
					name := fmt.Sprintf("renew %s, %s; release %s; watchdog thread %v", rn.name, w.name, rl.name, watchdog)
					t.Run(name, func(t *testing.T) {
						b := &tb{}
						b.call(0, -1, history.FAcquire, "lock-0", 1000*ms, 1001*ms, history.OK, nil, tokLease("a", 2*s))
						thread, owner := 0, -1
						if watchdog {
							thread, owner = 7, 0
						}
						v := rn.v
						if rn.typ == history.OK {
							v = tokLease("a", w.inv+s)
						}
						b.call(thread, owner, history.FRenew, "lock-0", w.inv, w.ans, rn.typ, nil, v)
						b.call(0, -1, history.FRelease, "lock-0", relInv, relDone, rl.typ, &history.Value{Token: "a"}, rl.v)
						b.call(1, -1, history.FAcquire, "lock-0", 1321*ms, 1322*ms, history.OK, nil, tokLease("b", 2321*ms))
						b.call(1, -1, history.FRelease, "lock-0", 1500*ms, 1501*ms, history.OK, &history.Value{Token: "b"}, nil)
						ops := b.history()
						r := check(t, ops)
						if r.Checkers[LockPromise].Verdict != Valid {
							t.Fatalf("lock promise %s (%s): %+v\n%s", r.Checkers[LockPromise].Verdict, r.Checkers[LockPromise].Reason, r.Violations, dump(ops))
						}
					})
				}
			}
		}
	}
}

// The same shapes without concurrency are ordinary renews: one answered
// before the release was invoked extends the claim up to the release, and
// one invoked after the release completed that succeeds grants the key
// again, so the next holder overlaps it and its release is a foreign one
// (and a "not held" answer to such a renew is no evidence: the client had
// let go).
func TestRenewNotConcurrentWithReleaseIsOrdinary(t *testing.T) {
	cases := []struct {
		name     string
		inv, ans int64
		out      outcome
		want     []string
	}{
		{"answered before the release: extends, then released", 1280 * ms, 1290 * ms, outcome{"ok", history.OK, tokLease("a", 2280*ms)}, nil},
		{"invoked after the release completed, ok: a claim again", 1311 * ms, 1315 * ms, outcome{"ok", history.OK, tokLease("a", 2311*ms)}, []string{KindForeignRelease, KindOverlap}},
		{"invoked after the release completed, not held", 1311 * ms, 1315 * ms, outcome{"not held", history.Fail, notHeld}, nil},
	}
	for _, c := range cases {
		for _, watchdog := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s; watchdog %v", c.name, watchdog), func(t *testing.T) {
				b := &tb{}
				thread, owner := 0, -1
				if watchdog {
					thread, owner = 7, 0
				}
				b.call(0, -1, history.FAcquire, "lock-0", 1000*ms, 1001*ms, history.OK, nil, tokLease("a", 2*s))
				b.call(thread, owner, history.FRenew, "lock-0", c.inv, c.ans, c.out.typ, nil, c.out.v)
				b.call(0, -1, history.FRelease, "lock-0", 1300*ms, 1310*ms, history.OK, &history.Value{Token: "a"}, nil)
				b.call(1, -1, history.FAcquire, "lock-0", 1321*ms, 1322*ms, history.OK, nil, tokLease("b", 2321*ms))
				b.call(1, -1, history.FRelease, "lock-0", 1500*ms, 1501*ms, history.OK, &history.Value{Token: "b"}, nil)
				r := check(t, b.history())
				if got := kinds(r.Violations, true); !slices.Equal(got, c.want) {
					t.Fatalf("violations %v, want %v: %+v", got, c.want, r.Violations)
				}
				if strings.Contains(r.Checkers[LockPromise].Reason, "disagree") {
					t.Fatal(r.Checkers[LockPromise].Reason)
				}
			})
		}
	}
}

// Rule 2: a definite "not held" to a release or renew is a lost lease
// exactly when the claim was certainly live at the answer's completion:
// deadline after the completion. A deadline inside the call, or before
// it, or an unknown (info) or refused answer, is no evidence.
func TestLostLeaseOnlyOnDefiniteNotHeldBeforeDeadline(t *testing.T) {
	const inv, done = 3400 * ms, 3410 * ms
	deadlines := []struct {
		name string
		d    int64
		live bool
	}{
		{"deadline after the completion", 4010 * ms, true},
		{"deadline just after the completion", done + 1, true},
		{"deadline at the completion", done, false},
		{"deadline inside the call", 3405 * ms, false},
		{"deadline before the invocation", 3300 * ms, false},
		{"no expiry", 0, true},
	}
	answers := []struct {
		out      outcome
		evidence bool
	}{
		{outcome{"not held", history.Fail, notHeld}, true},
		{outcome{"refused", history.Fail, refused}, false},
		{outcome{"info", history.Info, nil}, false},
		{outcome{"info that says not held", history.Info, notHeld}, false},
	}
	for _, f := range []string{history.FRelease, history.FRenew} {
		for _, dl := range deadlines {
			for _, a := range answers {
				for _, watchdog := range []bool{false, true} {
					if watchdog && f == history.FRelease {
						continue
					}
					t.Run(fmt.Sprintf("%s %s, %s, watchdog %v", f, a.out.name, dl.name, watchdog), func(t *testing.T) {
						b := &tb{}
						b.call(2, -1, history.FAcquire, "lock-0", 3000*ms, 3010*ms, history.OK, nil, tokLease("a", dl.d))
						thread, owner := 2, -1
						if watchdog {
							thread, owner = 9, 2
						}
						b.call(thread, owner, f, "lock-0", inv, done, a.out.typ, &history.Value{Token: "a"}, a.out.v)
						if f == history.FRenew {
							b.call(2, -1, history.FRelease, "lock-0", 5*s, 5*s+ms, history.Fail, &history.Value{Token: "a"}, refused)
						}
						r := check(t, b.history())
						var want []string
						if a.evidence && dl.live {
							want = []string{KindLostLease}
						}
						if got := kinds(r.Violations, true); !slices.Equal(got, want) {
							t.Fatalf("violations %v, want %v: %+v", got, want, r.Violations)
						}
						if strings.Contains(r.Checkers[LockPromise].Reason, "disagree") {
							t.Fatal(r.Checkers[LockPromise].Reason)
						}
						if want == nil {
							return
						}
						v := r.Violations[0]
						if v.Checker != LockPromise || !slices.Equal(v.Processes, []int{2}) || r.Checkers[LockPromise].Stats["lost-leases"] != 1 {
							t.Errorf("%+v, stats %v", v, r.Checkers[LockPromise].Stats)
						}
						if !strings.Contains(v.Description, "process 2's lease on lock-0") || !strings.Contains(v.Description, "was gone at 3.410s") {
							t.Errorf("description: %s", v.Description)
						}
						if f == history.FRelease && dl.d == 4010*ms && !strings.Contains(v.Description, "0.600s before its deadline") {
							t.Errorf("description: %s", v.Description)
						}
					})
				}
			}
		}
	}
}

// A "not held" that names an older lease of the process (a stale watchdog
// of a lease the client released) is about that lease, not the one in
// force; with the current lease's token, or none, it is evidence.
func TestLostLeaseNamesTheLeaseInForce(t *testing.T) {
	for _, c := range []struct {
		token string
		want  []string
	}{{"a", nil}, {"b", []string{KindLostLease}}, {"", []string{KindLostLease}}} {
		b := &tb{}
		b.call(0, -1, history.FAcquire, "lock-0", 1*s, 1*s+ms, history.OK, nil, tokLease("a", 2*s))
		b.call(0, -1, history.FRelease, "lock-0", 1100*ms, 1101*ms, history.OK, &history.Value{Token: "a"}, nil)
		b.call(0, -1, history.FAcquire, "lock-0", 1200*ms, 1201*ms, history.OK, nil, tokLease("b", 2200*ms))
		b.call(5, 0, history.FRenew, "lock-0", 1300*ms, 1301*ms, history.Fail, nil, &history.Value{Token: c.token, NotHeld: true})
		b.call(0, -1, history.FRelease, "lock-0", 1500*ms, 1501*ms, history.OK, &history.Value{Token: "b"}, nil)
		r := check(t, b.history())
		if got := kinds(r.Violations, true); !slices.Equal(got, c.want) {
			t.Errorf("token %q: violations %v, want %v: %+v", c.token, got, c.want, r.Violations)
		}
	}
}

// Rule 3: a renewer thread's calls pair on their own thread, however they
// overlap the client's: a renew outstanding across its client's release and
// next acquire, and two watchdogs (a stale one and a new one) renewing at
// once, leave the history usable and valid.
func TestRenewerThreadsOverlappingTheirClientAreUsable(t *testing.T) {
	b := &tb{}
	b.call(0, -1, history.FAcquire, "lock-0", 1*s, 1*s+ms, history.OK, nil, tokLease("a", 2*s))
	// The stale watchdog of lease a: invoked while a is held, answered
	// after the client released a and acquired b.
	b.call(10, 0, history.FRenew, "lock-0", 1300*ms, 1600*ms, history.OK, nil, tokLease("a", 2300*ms))
	b.call(0, -1, history.FRelease, "lock-0", 1400*ms, 1410*ms, history.OK, &history.Value{Token: "a"}, nil)
	b.call(0, -1, history.FAcquire, "lock-0", 1420*ms, 1430*ms, history.OK, nil, tokLease("b", 2420*ms))
	// The new watchdog renews b while the stale one is still out, twice.
	b.call(11, 0, history.FRenew, "lock-0", 1500*ms, 1700*ms, history.OK, nil, tokLease("b", 2500*ms))
	b.call(10, 0, history.FRenew, "lock-0", 1650*ms, 1660*ms, history.Fail, nil, &history.Value{Token: "a", NotHeld: true})
	b.call(11, 0, history.FRenew, "lock-0", 1800*ms, 1810*ms, history.OK, nil, tokLease("b", 2800*ms))
	b.call(0, -1, history.FRelease, "lock-0", 1900*ms, 1910*ms, history.OK, &history.Value{Token: "b"}, nil)
	b.call(1, -1, history.FAcquire, "lock-0", 1920*ms, 1930*ms, history.OK, nil, tokLease("c", 2920*ms))
	b.call(1, -1, history.FRelease, "lock-0", 2100*ms, 2110*ms, history.OK, &history.Value{Token: "c"}, nil)
	ops := b.history()
	r := check(t, ops)
	want(t, r, Valid, map[string]Verdict{LockPromise: Valid})
	// The renewals are the owner's: one claim by process 0 from the
	// second acquire to its release, extended by the watchdogs.
	var mine []Hold
	for _, h := range r.Holds {
		if h.Process == 0 {
			mine = append(mine, h)
		}
		if h.Process >= 10 {
			t.Errorf("a hold attributed to the renewer thread: %+v", h)
		}
	}
	if len(mine) != 2 || mine[1].Deadline != 2800*ms || mine[1].End != 1900*ms {
		t.Errorf("process 0's holds: %+v", mine)
	}

	// Without renewer threads (the client's own process number) the two
	// overlapping renews cannot be paired: a malformed history, unknown.
	for i := range ops {
		if ops[i].Owner != nil {
			ops[i].Process, ops[i].Owner = *ops[i].Owner, nil
		}
	}
	if r := check(t, ops); r.Verdict != Unknown || !strings.Contains(r.Checkers[LockPromise].Reason, "outstanding") {
		t.Errorf("old encoding: %s %+v", r.Verdict, r.Checkers[LockPromise])
	}
}

// A stale watchdog (its client released the lease, or crashed) whose renew
// succeeds while another process holds the key renewed a foreign lease:
// reported, naming the watchdog.
func TestStaleWatchdogRenewingAForeignLease(t *testing.T) {
	for _, crashed := range []bool{false, true} {
		b := &tb{}
		b.call(0, -1, history.FAcquire, "lock-0", 1*s, 1*s+ms, history.OK, nil, tokLease("a", 2*s))
		if crashed {
			b.add(1100*ms, 0, -1, history.Info, history.FCrash, "lock-0", nil)
		} else {
			b.call(0, -1, history.FRelease, "lock-0", 1100*ms, 1101*ms, history.OK, &history.Value{Token: "a"}, nil)
		}
		acq := 1200 * ms
		if crashed {
			acq = 2100 * ms // after a's deadline
		}
		b.call(1, -1, history.FAcquire, "lock-0", acq, acq+ms, history.OK, nil, tokLease("b", acq+s))
		// The watchdog renews without checking the owner: it extends b's key.
		b.call(10, 0, history.FRenew, "lock-0", acq+300*ms, acq+301*ms, history.OK, nil, tokLease("a", acq+1300*ms))
		b.call(1, -1, history.FRelease, "lock-0", acq+500*ms, acq+501*ms, history.OK, &history.Value{Token: "b"}, nil)
		ops := b.history()
		r := check(t, ops)
		if got := kinds(r.Violations, true); !slices.Equal(got, []string{KindForeignRelease}) {
			t.Fatalf("crashed %v: violations %v: %+v\n%s", crashed, got, r.Violations, dump(ops))
		}
		if d := r.Violations[0].Description; !strings.Contains(d, "process 0's watchdog (thread 10) renewed lock-0") || !strings.Contains(d, "while process 1 held it") {
			t.Errorf("description: %s", d)
		}
		if strings.Contains(r.Checkers[LockPromise].Reason, "disagree") {
			t.Error(r.Checkers[LockPromise].Reason)
		}
	}
}

// The owner encoding round-trips through the JSON history, and an old
// history (no owner anywhere) reads as before.
func TestOwnerEncodingReadsBack(t *testing.T) {
	const jsonl = `{"index":0,"time":1,"process":0,"type":"invoke","f":"acquire","key":"lock-0"}
{"index":1,"time":2,"process":0,"type":"ok","f":"acquire","key":"lock-0","value":{"token":"a","deadline":1000}}
{"index":2,"time":3,"process":1000000,"owner":0,"type":"invoke","f":"renew","key":"lock-0"}
{"index":3,"time":4,"process":0,"type":"invoke","f":"release","key":"lock-0","value":{"token":"a"}}
{"index":4,"time":5,"process":0,"type":"fail","f":"release","key":"lock-0","value":{"not_held":true}}
{"index":5,"time":6,"process":1000000,"owner":0,"type":"ok","f":"renew","key":"lock-0","value":{"token":"a","deadline":2000}}
`
	res, err := history.Read(strings.NewReader(jsonl))
	if err != nil {
		t.Fatal(err)
	}
	r := check(t, res.Ops)
	if got := kinds(r.Violations, true); !slices.Equal(got, []string{KindLostLease}) {
		t.Fatalf("violations %v: %+v", got, r.Violations)
	}
	bad := strings.Replace(jsonl, `"process":0,"type":"invoke","f":"release"`, `"process":0,"owner":3,"type":"invoke","f":"release"`, 1)
	if _, err := history.Read(strings.NewReader(bad)); err == nil || !strings.Contains(err.Error(), "owner") {
		t.Errorf("an owner on a release: %v", err)
	}
}
