package checker

import (
	"strings"
	"testing"

	"github.com/lockharness/lockharness/history"
)

// orphanHistory: process 0 holds lock-0 from 0 to 400ms with a watchdog
// (thread 1000) and releases it at 400ms; the watchdog renews at 450ms,
// after the release completed, and again every 300ms until 1.95s; process
// 1's acquires are refused from 500ms to 2.1s; the final heal is at 2s
// and process 1 acquires at 3s, once the last renewal's lease ran out.
// withRelease false leaves out the release: process 0 still holds the key,
// and the late renewals are its own.
func orphanHistory(withRelease bool) []history.Op {
	b := &tb{}
	b.call(0, -1, "acquire", "lock-0", 0, 5*ms, history.OK, nil, tokLease("a", 1005*ms))
	if withRelease {
		b.call(0, -1, "release", "lock-0", 400*ms, 405*ms, history.OK, &history.Value{Token: "a"}, nil)
	}
	for t := 450 * ms; t < 2000*ms; t += 300 * ms {
		b.call(1000, 0, "renew", "lock-0", t, t+2*ms, history.OK, nil, tokLease("a", t+1000*ms))
	}
	for t := 500 * ms; t < 2100*ms; t += 200 * ms {
		b.call(1, -1, "acquire", "lock-0", t, t+100*ms, history.Fail, nil, nil)
	}
	b.add(2000*ms, int(history.Nemesis), -1, history.Invoke, "final-heal", "", nil)
	b.add(2001*ms, int(history.Nemesis), -1, history.OK, "final-heal", "", nil)
	b.call(1, -1, "acquire", "lock-0", 2950*ms, 3000*ms, history.OK, nil, tokLease("b", 4000*ms))
	b.call(1, -1, "release", "lock-0", 3100*ms, 3105*ms, history.OK, &history.Value{Token: "b"}, nil)
	return b.history()
}

// A watchdog renewal after its client's release completed keeps the key
// held for nobody: the liveness checker names the orphan, the lock promise
// stays valid (one holder at a time: no overlap, no lost lease).
func TestOrphanLockIsALivenessFinding(t *testing.T) {
	r := check(t, orphanHistory(true))
	want(t, r, Invalid, map[string]Verdict{LockPromise: Valid, Liveness: Invalid})
	var found []Violation
	for _, v := range r.Violations {
		if v.Kind == KindOverlap || v.Kind == KindForeignRelease || v.Kind == KindLostLease {
			t.Errorf("false lock-promise finding: %s", v.Description)
		}
		if v.Kind == KindOrphan {
			found = append(found, v)
		}
	}
	if len(found) != 1 {
		t.Fatalf("orphan findings %d, want 1: %+v", len(found), r.Violations)
	}
	d := found[0].Description
	for _, s := range []string{"orphan lock: process 0 released lock-0 at 0.400s (answered ok)", "watchdog (thread 1000) renewed it at 0.452s",
		"nobody could acquire it", "process 1", "next grant was process 1's at 3.000s"} {
		if !strings.Contains(d, s) {
			t.Errorf("description %q lacks %q", d, s)
		}
	}
	if !found[0].Fatal || found[0].Checker != Liveness {
		t.Errorf("finding %+v: want a fatal liveness finding", found[0])
	}
	if got := r.Checkers[Liveness].Stats["unavailable-ms"]; got < 700 {
		t.Errorf("unavailable-ms %v: the orphan's refusals are unavailability", got)
	}
}

// The same renewals without the release are the holder's own: nothing to
// report, whatever the others are refused.
func TestLateRenewalOfAHeldLockIsNoOrphan(t *testing.T) {
	r := check(t, orphanHistory(false))
	for _, v := range r.Violations {
		if v.Kind == KindOrphan {
			t.Errorf("orphan reported while its process held the key: %s", v.Description)
		}
	}
	if r.Checkers[Liveness].Verdict != Valid {
		t.Errorf("liveness %v, want valid: %+v", r.Checkers[Liveness], r.Violations)
	}
}

// A client whose acquire had an unknown outcome releases it ("not held")
// and goes on with other leases (other tokens: an owner per call); its
// watchdog then renews the first lease, granted late. The "not held"
// answers about the client's own, other leases are no evidence against
// the orphan's lease, and the orphan is reported once, not once per
// renewal the client's releases chop it into.
func TestOrphanOfAnUnknownAcquire(t *testing.T) {
	b := &tb{}
	b.call(1, -1, "acquire", "lock-0", 0, 5*ms, history.OK, nil, tokLease("x", 1005*ms))
	b.call(0, -1, "acquire", "lock-0", 10*ms, 110*ms, history.Info, nil, nil)
	b.call(0, -1, "release", "lock-0", 111*ms, 115*ms, history.Fail, &history.Value{Token: "o1"}, notHeld)
	b.call(1, -1, "release", "lock-0", 300*ms, 305*ms, history.OK, &history.Value{Token: "x"}, nil)
	// o1's wait was granted at 305ms; its watchdog renews from 640ms.
	for t := 640 * ms; t < 2000*ms; t += 333 * ms {
		b.call(1000, 0, "renew", "lock-0", t, t+2*ms, history.OK, nil, tokLease("o1", t+1000*ms))
	}
	// The client's later calls, other owners, each given up and released.
	for i, t := 0, 400*ms; t < 1900*ms; i, t = i+1, t+250*ms {
		tok := "o" + string(rune('2'+i))
		b.call(0, -1, "acquire", "lock-0", t, t+100*ms, history.Info, nil, nil)
		b.call(0, -1, "release", "lock-0", t+101*ms, t+105*ms, history.Fail, &history.Value{Token: tok}, notHeld)
	}
	b.call(1, -1, "acquire", "lock-0", 310*ms, 1900*ms, history.Fail, nil, nil)
	b.add(2000*ms, int(history.Nemesis), -1, history.Invoke, "final-heal", "", nil)
	b.add(2001*ms, int(history.Nemesis), -1, history.OK, "final-heal", "", nil)
	b.call(1, -1, "acquire", "lock-0", 2950*ms, 3000*ms, history.OK, nil, tokLease("y", 4000*ms))
	r := check(t, b.history())
	want(t, r, Invalid, map[string]Verdict{LockPromise: Valid, Liveness: Invalid})
	var n int
	for _, v := range r.Violations {
		if v.Kind == KindOrphan {
			n++
			if !strings.Contains(v.Description, `process 0 released lock-0 at 0.111s (answered "not held"), after its acquire at 0.010s was answered info`) {
				t.Errorf("description %q", v.Description)
			}
		}
	}
	if n != 1 {
		t.Errorf("%d orphan findings, want 1: %+v", n, r.Violations)
	}
}

func TestSubtractSpans(t *testing.T) {
	got := subtract([]span{{0, 10}, {20, 30}}, []span{{5, 8}, {9, 22}, {25, 40}})
	want := []span{{0, 5}, {8, 9}, {22, 25}}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
}

// Reads and writes among an orphan's calls change nothing about it.
func TestOrphanAmongReadsAndWrites(t *testing.T) {
	ops := orphanHistory(true)
	b := &tb{ops: nil}
	for _, op := range ops {
		b.add(op.Time, int(op.Process), -1, op.Type, op.F, op.Key, op.Value)
		if op.Owner != nil {
			b.ops[len(b.ops)-1].Owner = op.Owner
		}
	}
	b.call(0, -1, "read", "lock-0", 100*ms, 101*ms, history.OK, nil, ctr(0))
	b.call(0, -1, "write", "lock-0", 200*ms, 201*ms, history.OK, wr(1, 0), ctr(1))
	b.call(0, -1, "read", "lock-0", 600*ms, 601*ms, history.OK, nil, ctr(1)) // after its release: stale
	plain, mixed := check(t, ops), check(t, b.history())
	var a, c []string
	for _, v := range plain.Violations {
		if v.Kind == KindOrphan {
			a = append(a, v.Description)
		}
	}
	for _, v := range mixed.Violations {
		if v.Kind == KindOrphan {
			c = append(c, v.Description)
		}
	}
	if len(a) != 1 || strings.Join(a, "\n") != strings.Join(c, "\n") {
		t.Errorf("orphans without reads and writes %q, with %q", a, c)
	}
	if mixed.Checkers[Liveness].Verdict != Invalid {
		t.Errorf("liveness %s", mixed.Checkers[Liveness].Verdict)
	}
}
