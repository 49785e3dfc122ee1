package checker

import (
	"strings"
	"testing"
	"time"

	"github.com/lockharness/lockharness/history"
)

// The rule (DESIGN.md, "Evidence"): a valid verdict rests on grants and on
// the requested exposure; a fault window runs from the fault's invoke to its
// heal's invoke (or the final heal, or the end), and it struck a holder when
// some claim was live in it; a client pause struck a holder when it began
// inside its process's live claim, and outlived the lease when that claim
// ended before the pause did.

func checkReq(t *testing.T, ops []history.Op, allow bool, reqs ...Requirement) Result {
	t.Helper()
	return checkOps(ctx, ops, Config{Timeout: time.Minute, Require: reqs, AllowVacuous: allow})
}

var partitionReq = Requirement{Name: "the partition nemesis", Faults: []string{"start-partition"}}

// grant records process p acquiring lock-0 at t (ok 1ms later) with the
// given deadline, and releasing it at rel (0: never).
func grant(b *hb, p int, t, deadline, rel int64) {
	b.inv(t, p, "acquire", "lock-0", nil).ok(t+ms, p, "acquire", "lock-0", lease(deadline))
	if rel > 0 {
		b.inv(rel, p, "release", "lock-0", nil).ok(rel+ms, p, "release", "lock-0", nil)
	}
}

func TestEmptyHistoryIsVacuous(t *testing.T) {
	r := check(t, nil)
	if r.Verdict != Unknown || !strings.HasPrefix(r.Reason, VacuousPrefix) || !strings.Contains(r.Reason, "nothing was granted") {
		t.Fatalf("verdict %s, reason %q", r.Verdict, r.Reason)
	}
	for name, c := range r.Checkers {
		if c.Verdict != Valid {
			t.Errorf("%s: %s; per-checker verdicts stay as they are", name, c.Verdict)
		}
	}
}

func TestNoGrantCountsTheAttempts(t *testing.T) {
	b := &hb{}
	b.inv(0, 0, "acquire", "lock-0", nil).fail(ms, 0, "acquire", "lock-0")
	b.inv(2*ms, 1, "acquire", "lock-0", nil).fail(3*ms, 1, "acquire", "lock-0")
	r := check(t, b.ops)
	// (The liveness checker may judge a lock that refuses everyone; the
	// missing grant is listed whatever the verdict.)
	if len(r.Vacuous) != 1 || r.Vacuous[0] != "nothing was granted (2 acquires: 2 failed, 0 unknown)" {
		t.Fatalf("verdict %s, vacuous %q", r.Verdict, r.Vacuous)
	}
	if r.Coverage.Grants != 0 || r.Coverage.Claims != 0 {
		t.Errorf("coverage %+v", r.Coverage)
	}
}

func TestGrantsAloneAreEnoughWithoutRequirements(t *testing.T) {
	b := &hb{}
	grant(b, 0, 0, 1000*ms, 100*ms)
	b.inv(200*ms, 0, "renew", "lock-0", nil).fail(201*ms, 0, "renew", "lock-0")
	r := check(t, b.ops)
	if r.Verdict != Valid || len(r.Vacuous) != 0 || r.Reason != "" {
		t.Fatalf("verdict %s, vacuous %v", r.Verdict, r.Vacuous)
	}
	if c := r.Coverage; c.Grants != 1 || c.Claims != 1 || c.Renewals != 0 {
		t.Errorf("coverage %+v", c)
	}
}

func TestFaultWindowEndsAtItsHeal(t *testing.T) {
	// The partition is in force from 100ms to its stop at 300ms; the only
	// claim begins at 400ms: the fault never struck a holder.
	b := &hb{}
	b.nem(100*ms, history.Invoke, "start-partition").nem(110*ms, history.OK, "start-partition")
	b.nem(300*ms, history.Invoke, "stop-partition").nem(310*ms, history.OK, "stop-partition")
	grant(b, 0, 400*ms, 1400*ms, 500*ms)
	r := checkReq(t, b.ops, false, partitionReq)
	if fc := r.Coverage.Faults["start-partition"]; fc.TookEffect != 1 || fc.StruckHolder != 0 {
		t.Fatalf("coverage %+v", r.Coverage.Faults)
	}
	if _, ok := r.Coverage.Faults["stop-partition"]; ok {
		t.Errorf("a heal counted as a fault: %+v", r.Coverage.Faults)
	}
	want(t, r, Unknown, map[string]Verdict{LockPromise: Valid, Resource: Valid, Liveness: Valid})
	if !strings.Contains(r.Reason, "the partition nemesis never struck while a client held a lock (1 start-partition took effect, none while a client held a lock)") {
		t.Errorf("reason %q", r.Reason)
	}

	// The same partition, but a claim from 250ms (before the heal's invoke).
	b = &hb{}
	b.nem(100*ms, history.Invoke, "start-partition").nem(110*ms, history.OK, "start-partition")
	grant(b, 0, 250*ms, 1250*ms, 0)
	b.nem(300*ms, history.Invoke, "stop-partition").nem(310*ms, history.OK, "stop-partition")
	b.inv(350*ms, 0, "release", "lock-0", nil).ok(351*ms, 0, "release", "lock-0", nil)
	r = checkReq(t, b.ops, false, partitionReq)
	if fc := r.Coverage.Faults["start-partition"]; fc.StruckHolder != 1 {
		t.Fatalf("coverage %+v", r.Coverage.Faults)
	}
	want(t, r, Valid, nil)
}

func TestUnhealedFaultLastsUntilTheFinalHeal(t *testing.T) {
	b := &hb{}
	b.nem(100*ms, history.Invoke, "kill").nem(110*ms, history.OK, "kill")
	grant(b, 0, 500*ms, 1500*ms, 600*ms)
	b.nem(700*ms, history.Invoke, history.FFinalHeal).nem(710*ms, history.OK, history.FFinalHeal)
	grant(b, 0, 800*ms, 1800*ms, 900*ms)
	kill := Requirement{Name: "the kill nemesis", Faults: []string{"kill"}}
	if r := checkReq(t, b.ops, false, kill); r.Verdict != Valid || r.Coverage.Faults["kill"].StruckHolder != 1 {
		t.Fatalf("verdict %s, coverage %+v", r.Verdict, r.Coverage)
	}
	// Held only after the final heal: the kill was over by then.
	b = &hb{}
	b.nem(100*ms, history.Invoke, "kill").nem(110*ms, history.OK, "kill")
	b.nem(700*ms, history.Invoke, history.FFinalHeal).nem(710*ms, history.OK, history.FFinalHeal)
	grant(b, 0, 800*ms, 1800*ms, 900*ms)
	if r := checkReq(t, b.ops, false, kill); r.Verdict != Unknown || r.Coverage.Faults["kill"].StruckHolder != 0 {
		t.Fatalf("verdict %s, coverage %+v", r.Verdict, r.Coverage)
	}
}

func TestFaultsThatDidNotTakeEffect(t *testing.T) {
	b := &hb{}
	grant(b, 0, 0, 1000*ms, 0)
	b.nem(100*ms, history.Invoke, "start-partition").nem(110*ms, history.Fail, "start-partition")
	b.nem(200*ms, history.Invoke, "start-partition").nem(210*ms, history.Info, "start-partition")
	r := checkReq(t, b.ops, false, partitionReq)
	fc := r.Coverage.Faults["start-partition"]
	if fc.TookEffect != 0 || fc.Failed != 1 || fc.Unknown != 1 || fc.StruckHolder != 0 {
		t.Fatalf("coverage %+v", fc)
	}
	if r.Verdict != Unknown || !strings.Contains(r.Reason, "no start-partition took effect: 1 failed, 1 unknown") {
		t.Errorf("verdict %s, reason %q", r.Verdict, r.Reason)
	}
}

func TestInstantaneousFaultStrikesALiveClaim(t *testing.T) {
	failover := Requirement{Name: "the failover nemesis", Faults: []string{"promote", "await-promotion"}}
	b := &hb{}
	grant(b, 0, 0, 1000*ms, 200*ms)
	b.nem(300*ms, history.Invoke, "promote").nem(310*ms, history.OK, "promote")
	grant(b, 1, 400*ms, 1400*ms, 500*ms)
	r := checkReq(t, b.ops, false, failover)
	if r.Verdict != Unknown || !strings.Contains(r.Reason, "the failover nemesis never struck while a client held a lock (1 promote/await-promotion took effect") {
		t.Fatalf("verdict %s, reason %q", r.Verdict, r.Reason)
	}
	// A claim that ended while the promotion was under way (before the
	// clients moved) was never exposed to it.
	b = &hb{}
	grant(b, 0, 0, 1000*ms, 0)
	b.nem(300*ms, history.Invoke, "promote")
	b.inv(305*ms, 0, "release", "lock-0", nil).ok(306*ms, 0, "release", "lock-0", nil)
	b.nem(310*ms, history.OK, "promote")
	if r := checkReq(t, b.ops, false, failover); r.Verdict != Unknown {
		t.Fatalf("verdict %s: %q", r.Verdict, r.Reason)
	}
	// One live when the promotion took effect was.
	b = &hb{}
	grant(b, 0, 0, 1000*ms, 0)
	b.nem(300*ms, history.Invoke, "promote").nem(310*ms, history.OK, "promote")
	b.inv(315*ms, 0, "release", "lock-0", nil).ok(316*ms, 0, "release", "lock-0", nil)
	if r := checkReq(t, b.ops, false, failover); r.Verdict != Valid || r.Coverage.Faults["promote"].StruckHolder != 1 {
		t.Fatalf("verdict %s: %q", r.Verdict, r.Reason)
	}
}

func TestClientPauseCoverage(t *testing.T) {
	pause := func(b *hb, p int, from, to int64) {
		b.inv(from, p, "pause", "lock-0", &history.Value{Duration: to - from}).ok(to, p, "pause", "lock-0", &history.Value{Duration: to - from})
	}
	b := &hb{}
	pause(b, 0, 0, 50*ms) // before any grant: struck nobody
	grant(b, 0, 100*ms, 1100*ms, 0)
	pause(b, 0, 200*ms, 400*ms) // inside the claim, within the lease
	b.inv(500*ms, 0, "release", "lock-0", nil).ok(501*ms, 0, "release", "lock-0", nil)
	grant(b, 1, 600*ms, 1600*ms, 0)
	pause(b, 1, 700*ms, 1800*ms) // outlives the lease (deadline 1600ms)
	b.inv(1800*ms, 1, "release", "lock-0", nil).fail(1801*ms, 1, "release", "lock-0")
	pause(b, 0, 1900*ms, 2000*ms) // 0 holds nothing now

	r := checkReq(t, b.ops, false, Requirement{Name: "a pause longer than the TTL", PauseStruck: true, PauseOutlived: true})
	if p := r.Coverage.Pauses; p.Total != 4 || p.StruckHolder != 2 || p.OutlivedLease != 1 {
		t.Fatalf("pauses %+v", p)
	}
	if r.Verdict != Valid {
		t.Fatalf("verdict %s: %q", r.Verdict, r.Reason)
	}

	// Only the pauses outside claims: neither requirement is met.
	b = &hb{}
	pause(b, 0, 0, 50*ms)
	grant(b, 0, 100*ms, 1100*ms, 200*ms)
	pause(b, 0, 300*ms, 1500*ms)
	r = checkReq(t, b.ops, false, Requirement{Name: "the client-pause nemesis", PauseStruck: true, PauseOutlived: true})
	if r.Verdict != Unknown || len(r.Vacuous) != 2 ||
		!strings.Contains(r.Vacuous[0], "the client-pause nemesis: no client pause struck a holder (2 pauses, none inside a live claim)") ||
		!strings.Contains(r.Vacuous[1], "no client pause outlived its holder's lease (0 pauses struck a holder)") {
		t.Fatalf("verdict %s, vacuous %q", r.Verdict, r.Vacuous)
	}
}

func TestCrashWhileHolding(t *testing.T) {
	crash := Requirement{Name: "the client-crash nemesis", CrashStruck: true}
	b := &hb{}
	grant(b, 0, 0, 1000*ms, 100*ms)
	b.inv(200*ms, 0, "crash", "lock-0", nil).info(200*ms, 0, "crash", "lock-0")
	if r := checkReq(t, b.ops, false, crash); r.Verdict != Unknown || r.Coverage.Crashes.Total != 1 || r.Coverage.Crashes.WhileHolding != 0 {
		t.Fatalf("verdict %s, crashes %+v", r.Verdict, r.Coverage.Crashes)
	}
	b = &hb{}
	grant(b, 0, 0, 1000*ms, 0)
	b.inv(200*ms, 0, "crash", "lock-0", nil).info(200*ms, 0, "crash", "lock-0")
	if r := checkReq(t, b.ops, false, crash); r.Verdict != Valid || r.Coverage.Crashes.WhileHolding != 1 {
		t.Fatalf("verdict %s, crashes %+v", r.Verdict, r.Coverage.Crashes)
	}
}

func TestAllowVacuousKeepsValidButSaysWhy(t *testing.T) {
	r := checkReq(t, nil, true, partitionReq)
	if r.Verdict != Valid || r.Reason != "" || len(r.Vacuous) != 2 {
		t.Fatalf("verdict %s, reason %q, vacuous %q", r.Verdict, r.Reason, r.Vacuous)
	}
}

func TestInvalidStaysInvalidWhenVacuous(t *testing.T) {
	// Two overlapping claims and no partition at all: the violation is a
	// fact; the missing exposure is still listed.
	b := &hb{}
	grant(b, 0, 0, 1000*ms, 0)
	grant(b, 1, 100*ms, 1100*ms, 0)
	r := checkReq(t, b.ops, false, partitionReq)
	if r.Verdict != Invalid || len(r.Vacuous) != 1 || r.Reason != "" {
		t.Fatalf("verdict %s, reason %q, vacuous %q", r.Verdict, r.Reason, r.Vacuous)
	}
}

// A lock that must refuse to grant under a fault (WAIT with the replication
// link frozen) is exposed by acquires attempted while the fault is in force,
// whether or not anyone held the lock then.
func TestAttemptsDuringAFault(t *testing.T) {
	frozen := Requirement{Name: "the frozen replication link", Faults: []string{"cut-replication"}, Attempted: true}
	// The link is frozen from 100ms until the promotion at 500ms; an
	// acquire invoked at 200ms is refused; the only grant is at 800ms.
	b := &hb{}
	b.nem(100*ms, history.Invoke, "cut-replication").nem(101*ms, history.OK, "cut-replication")
	b.inv(200*ms, 1, "acquire", "lock-0", nil).fail(300*ms, 1, "acquire", "lock-0")
	b.nem(500*ms, history.Invoke, "promote").nem(501*ms, history.OK, "promote")
	grant(b, 0, 800*ms, 1800*ms, 900*ms)
	r := checkReq(t, b.ops, false, frozen)
	if fc := r.Coverage.Faults["cut-replication"]; fc.Attempts != 1 || fc.StruckHolder != 0 {
		t.Fatalf("coverage %+v", r.Coverage.Faults)
	}
	want(t, r, Valid, nil)

	// No acquire while frozen: the refusal was never put to the test.
	b = &hb{}
	b.nem(100*ms, history.Invoke, "cut-replication").nem(101*ms, history.OK, "cut-replication")
	b.nem(500*ms, history.Invoke, "promote").nem(501*ms, history.OK, "promote")
	grant(b, 0, 800*ms, 1800*ms, 900*ms)
	r = checkReq(t, b.ops, false, frozen)
	want(t, r, Unknown, map[string]Verdict{LockPromise: Valid, Resource: Valid, Liveness: Valid})
	if !strings.Contains(r.Reason, "no client tried to acquire while the frozen replication link was in force (1 cut-replication took effect)") {
		t.Errorf("reason %q", r.Reason)
	}
}

// A pause the end of the history cut off lasted at least until then, and
// was meant to last its duration: if that is past its holder's lease, it
// outlived the lease.
func TestPauseCutOffByTheEndOfTheHistory(t *testing.T) {
	for _, tc := range []struct {
		duration int64
		outlived int
	}{{500 * ms, 1}, {0, 0}} {
		b := &hb{}
		grant(b, 0, 0, 300*ms, 0)
		b.inv(100*ms, 0, "pause", "lock-0", &history.Value{Duration: tc.duration})
		b.inv(200*ms, 1, "acquire", "lock-0", nil).fail(250*ms, 1, "acquire", "lock-0") // the history ends at 250ms
		r := checkReq(t, b.ops, false)
		if p := r.Coverage.Pauses; p.Total != 1 || p.StruckHolder != 1 || p.OutlivedLease != tc.outlived {
			t.Errorf("pause of %s cut off: %+v, want %d outlived", dur(tc.duration), p, tc.outlived)
		}
	}
}
