package checker

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockharness/lockharness/history"
)

const (
	ms = int64(time.Millisecond)
	s  = int64(time.Second)
)

var ctx = context.Background()

func check(t *testing.T, ops []history.Op) Result {
	t.Helper()
	return checkOps(ctx, ops, Config{Timeout: time.Minute})
}

func kinds(vs []Violation, fatal bool) []string {
	var out []string
	for _, v := range vs {
		if v.Fatal == fatal {
			out = append(out, v.Kind)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func want(t *testing.T, r Result, verdict Verdict, checkers map[string]Verdict) {
	t.Helper()
	if r.Verdict != verdict {
		t.Errorf("verdict %s, want %s; checkers %+v; violations %+v", r.Verdict, verdict, r.Checkers, r.Violations)
	}
	for name, v := range checkers {
		if got := r.Checkers[name].Verdict; got != v {
			t.Errorf("%s: %s (%s), want %s", name, got, r.Checkers[name].Reason, v)
		}
	}
}

func TestSimulatedCorrectLockIsValid(t *testing.T) {
	for seed := uint64(0); seed < 5; seed++ {
		ops := simValidRun(rand.New(rand.NewPCG(seed, 1)), simConfig{procs: 5, keys: 2, events: 5000, ttl: 1e9, pInfo: 0.02, heal: true})
		r := check(t, ops)
		want(t, r, Valid, map[string]Verdict{LockPromise: Valid, Resource: Valid, Liveness: Valid})
		if len(r.Holds) == 0 || r.Counts[history.FAcquire][string(history.OK)] != len(r.Holds) {
			t.Errorf("seed %d: %d holds, %d acquire oks", seed, len(r.Holds), r.Counts[history.FAcquire][string(history.OK)])
		}
		if r.Checkers[Liveness].Stats["recovery-acquire-attempts"] != 0 {
			// The simulation stops before its final heal.
			t.Errorf("seed %d: attempts after the heal: %v", seed, r.Checkers[Liveness].Stats)
		}
	}
}

func TestSequentialHoldersAreValid(t *testing.T) {
	b := &hb{}
	b.inv(1*s, 1, "acquire", "lock-0", nil).ok(1*s+5*ms, 1, "acquire", "lock-0", lease(2*s))
	b.inv(1*s+6*ms, 2, "acquire", "lock-0", nil).fail(1*s+8*ms, 2, "acquire", "lock-0")
	b.inv(1*s+15*ms, 2, "acquire", "lock-0", nil)
	b.inv(1*s+20*ms, 1, "release", "lock-0", nil)
	// Process 2's acquire returns at the very nanosecond process 1 gave up:
	// still after it in the history, so not an overlap.
	b.ok(1*s+20*ms, 2, "acquire", "lock-0", lease(3*s))
	b.ok(1*s+22*ms, 1, "release", "lock-0", nil)
	b.inv(1*s+30*ms, 2, "release", "lock-0", nil).ok(1*s+31*ms, 2, "release", "lock-0", nil)
	r := check(t, b.ops)
	want(t, r, Valid, map[string]Verdict{LockPromise: Valid, Resource: Valid, Liveness: Valid})
	if len(r.Holds) != 2 || r.Holds[0].End != 1*s+20*ms || r.Holds[1].Start != 1*s+20*ms {
		t.Errorf("holds %+v", r.Holds)
	}
	if got := r.Counts["acquire"]["ok"]; got != 2 {
		t.Errorf("acquire ok count %d", got)
	}
}

func TestOverlapNamesBothProcessesAndWindow(t *testing.T) {
	b := &hb{}
	b.inv(3*s, 2, "acquire", "lock-0", nil).ok(3*s+100*ms, 2, "acquire", "lock-0", lease(3*s+970*ms))
	b.inv(3*s+400*ms, 4, "acquire", "lock-0", nil).ok(3*s+410*ms, 4, "acquire", "lock-0", lease(5*s))
	b.inv(4*s, 2, "release", "lock-0", nil).ok(4*s+ms, 2, "release", "lock-0", nil)
	r := check(t, b.ops)
	want(t, r, Invalid, map[string]Verdict{LockPromise: Invalid})
	var ov *Violation
	for i := range r.Violations {
		if r.Violations[i].Kind == KindOverlap {
			ov = &r.Violations[i]
		}
	}
	if ov == nil {
		t.Fatalf("no overlap in %+v", r.Violations)
	}
	if !slices.Equal(ov.Processes, []int{2, 4}) || ov.Key != "lock-0" || ov.Start != 3*s+410*ms || ov.End != 3*s+970*ms || !ov.Fatal {
		t.Errorf("overlap %+v", ov)
	}
	if !strings.Contains(ov.Description, "process 2 and process 4 both held lock-0 from 3.410s to 3.970s") {
		t.Errorf("description %q", ov.Description)
	}
	if !slices.Equal(ov.Events, []int64{1, 3}) {
		t.Errorf("events %v, want the two acquire oks", ov.Events)
	}
	if !slices.Equal(r.NonLinearizableKeys, []string{"lock-0"}) {
		t.Errorf("non-linearizable keys %v", r.NonLinearizableKeys)
	}
	// Process 2's release while process 4 held the key removed 4's lock.
	if !slices.Contains(kinds(r.Violations, true), KindForeignRelease) {
		t.Errorf("kinds %v", kinds(r.Violations, true))
	}
}

func TestUnknownAcquireIsNotAClaim(t *testing.T) {
	// Process 1's acquire timed out: it may hold the lock. Process 2
	// acquires while it might: porcupine must not flag it (the unknown may
	// not have happened), and the overlap analysis counts only ok claims.
	b := &hb{}
	b.inv(1*s, 1, "acquire", "lock-0", nil)
	b.inv(1*s+100*ms, 2, "acquire", "lock-0", nil).ok(1*s+110*ms, 2, "acquire", "lock-0", lease(2*s))
	b.info(1*s+500*ms, 1, "acquire", "lock-0")
	b.inv(1*s+600*ms, 1, "release", "lock-0", nil).fail(1*s+601*ms, 1, "release", "lock-0")
	b.inv(1*s+700*ms, 2, "release", "lock-0", nil).ok(1*s+701*ms, 2, "release", "lock-0", nil)
	r := check(t, b.ops)
	want(t, r, Valid, map[string]Verdict{LockPromise: Valid})
	if r.Counts["acquire"]["info"] != 1 {
		t.Errorf("counts %v", r.Counts)
	}
}

func TestUnknownAcquireThenReleaseOfSomeoneElsesLock(t *testing.T) {
	// The workload releases after an unknown acquire. With a DEL-based
	// release (setnx) that succeeds while another process holds the key,
	// it removed that process's lock.
	b := &hb{}
	b.inv(1*s, 1, "acquire", "lock-0", nil)
	b.inv(1*s+100*ms, 2, "acquire", "lock-0", nil).ok(1*s+110*ms, 2, "acquire", "lock-0", lease(0))
	b.info(1*s+500*ms, 1, "acquire", "lock-0")
	b.inv(1*s+600*ms, 1, "release", "lock-0", nil).ok(1*s+601*ms, 1, "release", "lock-0", nil)
	b.inv(1*s+700*ms, 2, "release", "lock-0", nil).ok(1*s+701*ms, 2, "release", "lock-0", nil)
	r := check(t, b.ops)
	want(t, r, Invalid, map[string]Verdict{LockPromise: Invalid})
	if got := kinds(r.Violations, true); !slices.Equal(got, []string{KindForeignRelease}) {
		t.Errorf("kinds %v", got)
	}
}

func TestLateReleaseDeletesTheNextHoldersLock(t *testing.T) {
	// set-nx-ex: process 1's lease ran out, process 2 took the key, then
	// process 1's DEL succeeded: a foreign release, not an overlap.
	b := &hb{}
	b.inv(0, 1, "acquire", "lock-0", nil).ok(ms, 1, "acquire", "lock-0", lease(1*s))
	b.inv(1*s+100*ms, 2, "acquire", "lock-0", nil).ok(1*s+101*ms, 2, "acquire", "lock-0", lease(2*s+100*ms))
	b.inv(1*s+500*ms, 1, "release", "lock-0", nil).ok(1*s+501*ms, 1, "release", "lock-0", nil)
	b.inv(1*s+900*ms, 2, "release", "lock-0", nil).ok(1*s+901*ms, 2, "release", "lock-0", nil)
	r := check(t, b.ops)
	want(t, r, Invalid, map[string]Verdict{LockPromise: Invalid})
	if got := kinds(r.Violations, true); !slices.Equal(got, []string{KindForeignRelease}) {
		t.Fatalf("kinds %v", got)
	}
	v := r.Violations[0]
	if !slices.Equal(v.Processes, []int{1, 2}) || !strings.Contains(v.Description, "process 1 released lock-0") {
		t.Errorf("%+v", v)
	}
}

func TestExpiredLeaseLetsOthersIn(t *testing.T) {
	b := &hb{}
	b.inv(0, 1, "acquire", "lock-0", nil).ok(ms, 1, "acquire", "lock-0", lease(1*s))
	// Exactly at the deadline: the lease has run out.
	b.inv(1*s-ms, 2, "acquire", "lock-0", nil).ok(1*s, 2, "acquire", "lock-0", lease(2*s))
	b.inv(1*s+ms, 2, "release", "lock-0", nil).ok(1*s+2*ms, 2, "release", "lock-0", nil)
	want(t, check(t, b.ops), Valid, map[string]Verdict{LockPromise: Valid})

	// One nanosecond earlier it has not.
	b = &hb{}
	b.inv(0, 1, "acquire", "lock-0", nil).ok(ms, 1, "acquire", "lock-0", lease(1*s))
	b.inv(1*s-ms, 2, "acquire", "lock-0", nil).ok(1*s-1, 2, "acquire", "lock-0", lease(2*s))
	want(t, check(t, b.ops), Invalid, map[string]Verdict{LockPromise: Invalid})
}

func TestRenewExtendsTheClaim(t *testing.T) {
	b := &hb{}
	b.inv(0, 1, "acquire", "lock-0", nil).ok(ms, 1, "acquire", "lock-0", lease(1*s))
	b.inv(500*ms, 1, "renew", "lock-0", nil).ok(501*ms, 1, "renew", "lock-0", lease(1500*ms))
	b.inv(1100*ms, 2, "acquire", "lock-0", nil).ok(1101*ms, 2, "acquire", "lock-0", lease(2*s))
	r := check(t, b.ops)
	want(t, r, Invalid, map[string]Verdict{LockPromise: Invalid})
	if len(r.Holds) != 2 || r.Holds[0].Deadline != 1500*ms {
		t.Errorf("holds %+v", r.Holds)
	}
}

func TestRenewWhileAnotherHoldsIsForeign(t *testing.T) {
	b := &hb{}
	b.inv(0, 1, "acquire", "lock-0", nil).ok(ms, 1, "acquire", "lock-0", lease(100*ms))
	b.inv(200*ms, 2, "acquire", "lock-0", nil).ok(201*ms, 2, "acquire", "lock-0", lease(1*s))
	b.inv(300*ms, 1, "renew", "lock-0", nil).ok(301*ms, 1, "renew", "lock-0", lease(1300*ms))
	r := check(t, b.ops)
	want(t, r, Invalid, map[string]Verdict{LockPromise: Invalid})
	if got := kinds(r.Violations, true); !slices.Equal(got, []string{KindForeignRelease}) || !strings.Contains(r.Violations[0].Description, "renewed") {
		t.Errorf("%+v", r.Violations)
	}
}

func TestCrashedHolderWithLeaseExpires(t *testing.T) {
	// set-nx-ex: the holder crashes; the key expires; others go on.
	b := &hb{}
	b.inv(0, 0, "acquire", "lock-0", nil).ok(ms, 0, "acquire", "lock-0", lease(1*s))
	b.inv(10*ms, 0, "crash", "lock-0", nil).info(10*ms, 0, "crash", "lock-0")
	for i := int64(0); i < 5; i++ {
		t0 := 100*ms + i*200*ms
		b.inv(t0, 1, "acquire", "lock-0", nil).fail(t0+ms, 1, "acquire", "lock-0")
	}
	b.inv(1100*ms, 1, "acquire", "lock-0", nil).ok(1101*ms, 1, "acquire", "lock-0", lease(2101*ms))
	b.inv(1200*ms, 1, "release", "lock-0", nil).ok(1201*ms, 1, "release", "lock-0", nil)
	b.nem(1300*ms, history.Invoke, history.FFinalHeal).nem(1300*ms, history.OK, history.FFinalHeal)
	b.inv(1400*ms, 2, "acquire", "lock-0", nil).ok(1401*ms, 2, "acquire", "lock-0", lease(2401*ms))
	b.inv(1500*ms, 2, "release", "lock-0", nil).ok(1501*ms, 2, "release", "lock-0", nil)
	r := check(t, b.ops)
	want(t, r, Valid, map[string]Verdict{LockPromise: Valid, Resource: Valid, Liveness: Valid})
	st := r.Checkers[Liveness].Stats
	if st["unavailable-ms"] != 0 || st["recovery-success-rate"] != 1 {
		t.Errorf("liveness stats %v", st)
	}
	if len(r.Holds) != 3 || r.Holds[0].End != 1*s {
		t.Errorf("the crashed holder's claim should end at its deadline: %+v", r.Holds)
	}
}

func TestCrashedHolderWithoutExpiryDeadlocks(t *testing.T) {
	// setnx: the holder crashes; nobody ever gets the key again.
	b := &hb{}
	b.inv(0, 0, "acquire", "lock-0", nil).ok(ms, 0, "acquire", "lock-0", lease(0))
	b.inv(10*ms, 0, "crash", "lock-0", nil).info(10*ms, 0, "crash", "lock-0")
	for i := int64(0); i < 10; i++ {
		t0 := 100*ms + i*200*ms
		if i == 5 {
			b.nem(t0-ms, history.Invoke, history.FFinalHeal).nem(t0-ms, history.OK, history.FFinalHeal)
		}
		b.inv(t0, 1, "acquire", "lock-0", nil).fail(t0+ms, 1, "acquire", "lock-0")
	}
	r := check(t, b.ops)
	want(t, r, Invalid, map[string]Verdict{LockPromise: Valid, Liveness: Invalid})
	if got := kinds(r.Violations, true); !slices.Equal(got, []string{KindUnavailable}) {
		t.Fatalf("kinds %v", got)
	}
	v := r.Violations[0]
	if v.Start != 1099*ms || !strings.Contains(v.Description, "crashed") || !strings.Contains(v.Description, "never expires") {
		t.Errorf("%+v", v)
	}
	st := r.Checkers[Liveness].Stats
	// All ten failed attempts count: the only claim is a dead one.
	if st["unavailable-ms"] != 10 || st["recovery-success-rate"] != 0 || st["recovery-acquire-attempts"] != 5 {
		t.Errorf("stats %v", st)
	}
}

func TestLiveHolderThroughRecoveryIsNotUnavailability(t *testing.T) {
	b := &hb{}
	b.inv(0, 0, "acquire", "lock-0", nil).ok(ms, 0, "acquire", "lock-0", lease(0))
	b.nem(50*ms, history.Invoke, history.FFinalHeal).nem(50*ms, history.OK, history.FFinalHeal)
	for i := int64(0); i < 5; i++ {
		t0 := 100*ms + i*100*ms
		b.inv(t0, 1, "acquire", "lock-0", nil).fail(t0+ms, 1, "acquire", "lock-0")
	}
	r := check(t, b.ops)
	want(t, r, Valid, map[string]Verdict{Liveness: Valid})
	if st := r.Checkers[Liveness].Stats; st["unavailable-ms"] != 0 || st["recovery-success-rate"] != 0 {
		t.Errorf("stats %v", st)
	}
}

func TestUnavailableWithoutAnyHolder(t *testing.T) {
	// A broken lock (say, Redlock without a quorum) fails every acquire
	// and nobody holds it: unavailable for the whole 1s of failing, all of
	// it a recovery period longer than any lease.
	b := &hb{}
	b.nem(0, history.Invoke, history.FFinalHeal).nem(0, history.OK, history.FFinalHeal)
	for i := int64(0); i < 5; i++ {
		t0 := i * 250 * ms
		b.inv(t0, 1, "acquire", "lock-0", nil).fail(t0+200*ms, 1, "acquire", "lock-0")
	}
	r := check(t, b.ops)
	want(t, r, Invalid, map[string]Verdict{Liveness: Invalid})
	if st := r.Checkers[Liveness].Stats; st["unavailable-ms"] != 1000 || st["unavailable-ms/lock-0"] != 1000 {
		t.Errorf("stats %v", st)
	}
}

// section appends one critical section by p on lock-0: read v, write w
// with the given completion.
func (b *hb) section(t0 int64, p int, v, w, fence int64, done func(b *hb, t int64)) *hb {
	b.inv(t0, p, "read", "lock-0", nil).ok(t0+ms, p, "read", "lock-0", ctr(v))
	b.inv(t0+2*ms, p, "write", "lock-0", wr(w, fence))
	done(b, t0+3*ms)
	return b
}

func accepted(p int, w int64) func(*hb, int64) {
	return func(b *hb, t int64) { b.ok(t, p, "write", "lock-0", ctr(w)) }
}

func TestLostUpdateIsNamed(t *testing.T) {
	b := &hb{}
	b.inv(0, 1, "read", "lock-0", nil).ok(ms, 1, "read", "lock-0", ctr(0))
	b.inv(2*ms, 2, "read", "lock-0", nil).ok(3*ms, 2, "read", "lock-0", ctr(0))
	b.inv(4*ms, 1, "write", "lock-0", wr(1, 0)).ok(5*ms, 1, "write", "lock-0", ctr(1))
	b.inv(6*ms, 2, "write", "lock-0", wr(1, 0)).ok(7*ms, 2, "write", "lock-0", ctr(1))
	b.inv(20*ms, 9, "read", "lock-0", nil).ok(21*ms, 9, "read", "lock-0", ctr(1))
	r := check(t, b.ops)
	want(t, r, Invalid, map[string]Verdict{Resource: Invalid})
	if got := kinds(r.Violations, true); !slices.Equal(got, []string{KindFinalCount, KindLostUpdate}) {
		t.Fatalf("kinds %v", got)
	}
	for _, v := range r.Violations {
		if v.Kind == KindLostUpdate && (!slices.Equal(v.Processes, []int{1, 2}) || !strings.Contains(v.Description, "both read 0")) {
			t.Errorf("%+v", v)
		}
		if v.Kind == KindFinalCount && !strings.Contains(v.Description, "found 1, but storage accepted 2 writes of counter+1") {
			t.Errorf("%+v", v)
		}
	}
	if !slices.Equal(r.NonLinearizableKeys, []string{"lock-0"}) {
		t.Errorf("keys %v", r.NonLinearizableKeys)
	}
}

// pausedHolder is the GC-pause story: process 1 reads under its lease,
// pauses past its expiry, process 2 takes the lock and updates the
// counter, then process 1 writes.
func pausedHolder(stale func(*hb, int64)) []history.Op {
	b := &hb{}
	b.inv(0, 1, "acquire", "lock-0", nil).ok(ms, 1, "acquire", "lock-0", fenced(1*s, 1))
	b.inv(10*ms, 1, "read", "lock-0", nil).ok(11*ms, 1, "read", "lock-0", ctr(0))
	b.inv(12*ms, 1, "pause", "lock-0", &history.Value{Duration: 2 * s})
	b.inv(1100*ms, 2, "acquire", "lock-0", nil).ok(1101*ms, 2, "acquire", "lock-0", fenced(2100*ms, 2))
	b.section(1110*ms, 2, 0, 1, 2, accepted(2, 1))
	b.inv(1200*ms, 2, "release", "lock-0", nil).ok(1201*ms, 2, "release", "lock-0", nil)
	b.ok(2012*ms, 1, "pause", "lock-0", &history.Value{Duration: 2 * s})
	b.inv(2013*ms, 1, "write", "lock-0", wr(1, 1))
	stale(b, 2014*ms)
	b.inv(2100*ms, 1, "release", "lock-0", nil).fail(2101*ms, 1, "release", "lock-0")
	b.inv(3*s, 9, "read", "lock-0", nil).ok(3*s+ms, 9, "read", "lock-0", ctr(1))
	return b.ops
}

func TestFencedStaleWriteIsRejectedAndValid(t *testing.T) {
	r := check(t, pausedHolder(func(b *hb, t int64) { b.ok(t, 1, "write", "lock-0", rejected(1)) }))
	want(t, r, Valid, map[string]Verdict{LockPromise: Valid, Resource: Valid, Liveness: Valid})
	if got := kinds(r.Violations, false); !slices.Equal(got, []string{KindStaleWrite}) {
		t.Fatalf("non-fatal kinds %v", got)
	}
	v := r.Violations[len(r.Violations)-1]
	if !strings.Contains(v.Description, "rejected") || !strings.Contains(v.Description, "after its lease ended at 1.000s") {
		t.Errorf("%+v", v)
	}
	if st := r.Checkers[Resource].Stats; st["rejected-writes"] != 1 || st["accepted-writes"] != 1 || st["stale-writes"] != 1 || st["final-count/lock-0"] != 1 {
		t.Errorf("stats %v", st)
	}
}

func TestUnfencedStaleWriteLosesAnUpdate(t *testing.T) {
	r := check(t, pausedHolder(func(b *hb, t int64) { b.ok(t, 1, "write", "lock-0", ctr(1)) }))
	want(t, r, Invalid, map[string]Verdict{LockPromise: Valid, Resource: Invalid})
	if got := kinds(r.Violations, true); !slices.Equal(got, []string{KindFinalCount, KindLostUpdate}) {
		t.Errorf("kinds %v", got)
	}
	for _, v := range r.Violations {
		if v.Kind == KindStaleWrite && !strings.Contains(v.Description, "storage accepted it") {
			t.Errorf("%+v", v)
		}
	}
}

func TestUnknownWriteMayOrMayNotHaveLanded(t *testing.T) {
	for _, landed := range []bool{false, true} {
		b := &hb{}
		b.section(0, 1, 0, 1, 0, func(b *hb, t int64) { b.info(t, 1, "write", "lock-0") })
		v := int64(0)
		if landed {
			v = 1
		}
		b.section(100*ms, 2, v, v+1, 0, accepted(2, v+1))
		b.inv(200*ms, 9, "read", "lock-0", nil).ok(201*ms, 9, "read", "lock-0", ctr(v+1))
		// Sections without a grant: the resource is valid, but the
		// history granted nothing, so the whole is no evidence (unknown).
		want(t, check(t, b.ops), Unknown, map[string]Verdict{Resource: Valid})
	}
	// But the final count must lie in [accepted, accepted+unknown].
	b := &hb{}
	b.section(0, 1, 0, 1, 0, func(b *hb, t int64) { b.info(t, 1, "write", "lock-0") })
	b.inv(200*ms, 9, "read", "lock-0", nil).ok(201*ms, 9, "read", "lock-0", ctr(2))
	r := check(t, b.ops)
	want(t, r, Invalid, map[string]Verdict{Resource: Invalid})
	if !slices.Contains(kinds(r.Violations, true), KindFinalCount) {
		t.Errorf("kinds %v", kinds(r.Violations, true))
	}
}

func TestReadOfAValueNobodyWroteIsNotLinearizable(t *testing.T) {
	b := &hb{}
	b.section(0, 1, 0, 1, 0, accepted(1, 1))
	b.section(100*ms, 2, 5, 6, 0, accepted(2, 6))
	r := check(t, b.ops)
	want(t, r, Invalid, map[string]Verdict{Resource: Invalid})
	var fatal []Violation
	for _, v := range r.Violations {
		if v.Fatal {
			fatal = append(fatal, v)
		}
	}
	if len(fatal) != 1 || fatal[0].Kind != KindLostUpdate || !slices.Equal(fatal[0].Processes, []int{2}) {
		t.Errorf("%+v", fatal)
	}
}

func TestTimeoutIsUnknownNeverValid(t *testing.T) {
	ops := simValidRun(rand.New(rand.NewPCG(1, 1)), simConfig{procs: 5, keys: 1, events: 20000, ttl: 1e9})
	r := checkOps(ctx, ops, Config{Timeout: time.Nanosecond})
	want(t, r, Unknown, map[string]Verdict{LockPromise: Unknown, Resource: Unknown, Liveness: Valid})
	if !strings.Contains(r.Checkers[LockPromise].Reason, "timed out") {
		t.Errorf("reason %q", r.Checkers[LockPromise].Reason)
	}
}

func TestCancelledContextIsUnknown(t *testing.T) {
	ops := simValidRun(rand.New(rand.NewPCG(1, 1)), simConfig{procs: 5, keys: 1, events: 2000, ttl: 1e9})
	c, cancel := context.WithCancelCause(ctx)
	cancel(errors.New("ctrl-c"))
	r := checkOps(c, ops, Config{})
	want(t, r, Unknown, map[string]Verdict{LockPromise: Unknown, Resource: Unknown, Liveness: Unknown})
	if !strings.Contains(r.Checkers[LockPromise].Reason, "ctrl-c") {
		t.Errorf("reason %q", r.Checkers[LockPromise].Reason)
	}
	// Cancelled mid-check: porcupine unwinds and the result is still unknown.
	c, cancel2 := context.WithCancel(ctx)
	defer cancel2()
	lops := leaseOps(mustPrepare(t, ops), "lock-0", false)
	cancel2()
	if lr := checkLinearizable(c, LeaseMutexModel(), lops, time.Minute); lr.res != "Unknown" {
		t.Errorf("cancelled porcupine: %v", lr.res)
	}
}

func TestInvalidBeatsUnknown(t *testing.T) {
	// The overlap analysis needs no porcupine: a timeout cannot hide it.
	b := &hb{}
	b.inv(0, 1, "acquire", "lock-0", nil).ok(ms, 1, "acquire", "lock-0", lease(0))
	b.inv(2*ms, 2, "acquire", "lock-0", nil).ok(3*ms, 2, "acquire", "lock-0", lease(0))
	r := checkOps(ctx, b.ops, Config{Timeout: time.Nanosecond})
	want(t, r, Invalid, map[string]Verdict{LockPromise: Invalid})
}

func TestUnusableHistories(t *testing.T) {
	cases := map[string]func(b *hb){
		"without a preceding invocation": func(b *hb) { b.ok(ms, 1, "acquire", "lock-0", lease(0)) },
		"without a preceding invocation by that process": func(b *hb) {
			b.inv(0, 1, "acquire", "lock-0", nil).ok(ms, 2, "acquire", "lock-0", lease(0))
		},
		"while its acquire": func(b *hb) {
			b.inv(0, 1, "acquire", "lock-0", nil).inv(ms, 1, "acquire", "lock-0", nil)
		},
		"crashed at": func(b *hb) {
			b.info(0, 1, "crash", "lock-0").inv(ms, 1, "acquire", "lock-0", nil)
		},
		"time goes backwards": func(b *hb) {
			b.inv(ms, 1, "acquire", "lock-0", nil).fail(0, 1, "acquire", "lock-0")
		},
		"completes an invocation on key": func(b *hb) {
			b.inv(0, 1, "acquire", "lock-0", nil).fail(ms, 1, "acquire", "lock-1")
		},
	}
	for want, build := range cases {
		b := &hb{}
		build(b)
		r := checkOps(ctx, b.ops, Config{})
		if r.Verdict != Unknown {
			t.Errorf("%s: verdict %s", want, r.Verdict)
		}
		for name, cr := range r.Checkers {
			if cr.Verdict != Unknown || !strings.Contains(cr.Reason, "unusable history") || !strings.Contains(cr.Reason, want) {
				t.Errorf("%s: %s: %+v", want, name, cr)
			}
		}
	}
}

func TestTruncatedHistoryTreatsOpenOpsAsUnknown(t *testing.T) {
	b := &hb{}
	b.inv(0, 1, "acquire", "lock-0", nil).ok(ms, 1, "acquire", "lock-0", lease(0))
	b.section(2*ms, 1, 0, 1, 0, func(*hb, int64) {}) // write never completes
	b.inv(10*ms, 2, "acquire", "lock-0", nil)        // nor does this
	r := check(t, b.ops)
	want(t, r, Valid, map[string]Verdict{LockPromise: Valid, Resource: Valid})
	if r.Counts["write"]["info"] != 1 || r.Counts["acquire"]["info"] != 1 {
		t.Errorf("counts %v", r.Counts)
	}
	if len(r.Holds) != 1 || r.Holds[0].End != -1 {
		t.Errorf("holds %+v", r.Holds)
	}
}

func TestPanickingCheckerIsUnknown(t *testing.T) {
	cr := guard(func() (CheckResult, error) { panic("boom") })
	if cr.Verdict != Unknown || !strings.Contains(cr.Reason, "boom") {
		t.Errorf("%+v", cr)
	}
}

func TestViolationsAreSortedByStart(t *testing.T) {
	b := &hb{}
	b.inv(0, 1, "acquire", "lock-1", nil).ok(ms, 1, "acquire", "lock-1", lease(0))
	b.inv(2*ms, 2, "acquire", "lock-1", nil).ok(3*ms, 2, "acquire", "lock-1", lease(0))
	b.section(4*ms, 3, 7, 8, 0, accepted(3, 8))
	r := check(t, b.ops)
	if !slices.IsSortedFunc(r.Violations, func(a, b Violation) int { return cmp.Compare(a.Start, b.Start) }) || len(r.Violations) < 2 {
		t.Errorf("%+v", r.Violations)
	}
}

// A check with Views keeps porcupine's view of the key it refuted: the
// lease-mutex model with the failed acquire as a no-op, the counter that
// lost an update, the fault and the overlap.
func TestCheckKeepsTheViewOfARefutedKey(t *testing.T) {
	b := &hb{}
	b.nem(0, history.Invoke, "start-partition").nem(ms, history.OK, "start-partition")
	b.inv(2*ms, 1, "acquire", "lock-0", nil).ok(3*ms, 1, "acquire", "lock-0", lease(0))
	b.inv(4*ms, 2, "acquire", "lock-0", nil).ok(5*ms, 2, "acquire", "lock-0", lease(0))
	b.inv(6*ms, 3, "acquire", "lock-0", nil).fail(7*ms, 3, "acquire", "lock-0")
	b.inv(8*ms, 1, "read", "lock-0", nil).ok(9*ms, 1, "read", "lock-0", ctr(0))
	b.inv(10*ms, 2, "read", "lock-0", nil).ok(11*ms, 2, "read", "lock-0", ctr(0))
	b.inv(12*ms, 1, "write", "lock-0", wr(1, 0)).ok(13*ms, 1, "write", "lock-0", ctr(1))
	b.inv(14*ms, 2, "write", "lock-0", wr(1, 0)).ok(15*ms, 2, "write", "lock-0", ctr(1))
	b.nem(16*ms, history.Invoke, "stop-partition").nem(17*ms, history.OK, "stop-partition")
	if r := checkOps(ctx, b.ops, Config{}); len(r.Seen.views) > 0 {
		t.Errorf("a check without Views kept %d views", len(r.Seen.views))
	}
	r := checkOps(ctx, b.ops, Config{Views: true})
	v, ok := r.View("lock-0")
	if !ok || !slices.Equal(r.NonLinearizableKeys, []string{"lock-0"}) {
		t.Fatalf("no view of lock-0 (refuted: %v)", r.NonLinearizableKeys)
	}
	var buf bytes.Buffer
	if err := v.WriteHTML(&buf); err != nil {
		t.Fatal(err)
	}
	html := buf.String()
	for _, s := range []string{"<html", "start-partition", "p2 acquire ok", "p3 acquire fail", "counter: p2 read 0", "both held lock-0"} {
		if !strings.Contains(html, s) {
			t.Errorf("view lacks %q", s)
		}
	}
	if _, ok := r.View("lock-1"); ok {
		t.Error("a view of a key the check did not refute")
	}
	bad := checkOps(ctx, []history.Op{{Index: 0, Type: history.OK, F: "acquire", Process: 1}}, Config{Views: true})
	if bad.Verdict != Unknown || len(bad.Seen.views) > 0 {
		t.Errorf("an unusable history: verdict %s, %d views", bad.Verdict, len(bad.Seen.views))
	}
}

// A check keeps no view of a history longer than MaxViewEvents: it lets
// go of those it had once the history it has read is longer.
func TestViewsStopPastTheirBound(t *testing.T) {
	a := newAccumulator(ctx, Config{Views: true}, 0)
	a.viewIn = map[string]*viewInput{"lock-0": {key: "lock-0"}}
	a.seen.Events = MaxViewEvents + 1
	a.views(nil, nil, nil, false, []string{"lock-1"})
	if !a.viewsOff || len(a.viewIn) > 0 {
		t.Errorf("views past %d events: off %v, %d kept", MaxViewEvents, a.viewsOff, len(a.viewIn))
	}
}

func TestViewOfALongKeyShowsAWindow(t *testing.T) {
	ops := simValidRun(rand.New(rand.NewPCG(3, 1)), simConfig{procs: 5, keys: 1, events: 40000, ttl: 1e9, heal: true})
	p, err := prepare(ops)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := viewOf(ops, p, buildClaims(p), sections(p), "lock-0", 0).draw(ctx).WriteHTML(&buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "a window around its first violation") {
		t.Error("no window note")
	}
	if buf.Len() > 8<<20 {
		t.Errorf("view is %d bytes", buf.Len())
	}
}

// A watchdog's renewal that races its client's release (invoked before the
// release, answered after it) was overtaken by the release: it must not
// hand the process a new claim that overlaps the next holder's. Seen in a
// real reentrant run before the rule existed.
func TestWatchdogRenewRacingReleaseIsNotAClaim(t *testing.T) {
	b := &hb{}
	b.inv(1*s, 0, "acquire", "lock-0", nil).ok(1*s+ms, 0, "acquire", "lock-0", lease(1*s+900*ms))
	b.inv(1*s+300*ms, 0, "renew", "lock-0", nil)
	b.inv(1*s+301*ms, 0, "release", "lock-0", nil)
	b.ok(1*s+302*ms, 0, "renew", "lock-0", lease(2*s+300*ms))
	b.ok(1*s+303*ms, 0, "release", "lock-0", nil)
	b.inv(1*s+303*ms, 3, "acquire", "lock-0", nil).ok(1*s+304*ms, 3, "acquire", "lock-0", lease(2*s+304*ms))
	b.inv(1*s+600*ms, 3, "release", "lock-0", nil).ok(1*s+601*ms, 3, "release", "lock-0", nil)
	r := check(t, b.ops)
	want(t, r, Valid, map[string]Verdict{LockPromise: Valid})
}
