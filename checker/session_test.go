package checker

import (
	"slices"
	"strings"
	"testing"

	"github.com/lockharness/lockharness/history"
)

// A session lease (a row held FOR UPDATE, GET_LOCK: no deadline, it lasts
// as long as the holder's connection) ends when its holder crashes: the
// server frees it as the connection closes, and the next holder breaks no
// promise, nor is the key dead for good. Without Session the same history
// is naive SETNX's: the crashed holder's claim never ends, and the next
// grant overlaps it.
func TestSessionLeaseEndsWithItsHoldersCrash(t *testing.T) {
	for _, session := range []bool{true, false} {
		b := &tb{}
		b.call(0, -1, history.FAcquire, "lock-0", 1*s, 1*s+ms, history.OK, nil, &history.Value{Token: "a", Session: session})
		b.add(1100*ms, 0, -1, history.Info, history.FCrash, "lock-0", nil)
		b.call(1, -1, history.FAcquire, "lock-0", 1200*ms, 1201*ms, history.OK, nil, &history.Value{Token: "b", Session: session})
		b.call(1, -1, history.FRelease, "lock-0", 1500*ms, 1501*ms, history.OK, &history.Value{Token: "b"}, nil)
		ops := b.history()
		r := check(t, ops)
		got := kinds(r.Violations, true)
		if session && (len(got) != 0 || r.Checkers[LockPromise].Verdict != Valid) {
			t.Fatalf("session lease: %s %v %+v\n%s", r.Checkers[LockPromise].Verdict, got, r.Violations, dump(ops))
		}
		if !session && !slices.Contains(got, KindOverlap) {
			t.Fatalf("lease without expiry: violations %v, want an overlap\n%s", got, dump(ops))
		}
	}
}

// A session lease the server ended while its holder lived (KILL
// CONNECTION) is a broken promise: the holder learns it only at its
// release ("not held"), and another client held the key meanwhile.
func TestSessionLeaseKilledUnderItsHolderIsABrokenPromise(t *testing.T) {
	b := &tb{}
	b.call(0, -1, history.FAcquire, "lock-0", 1*s, 1*s+ms, history.OK, nil, &history.Value{Token: "a", Session: true})
	b.call(1, -1, history.FAcquire, "lock-0", 1*s+2*ms, 1200*ms, history.OK, nil, &history.Value{Token: "b", Session: true})
	b.call(0, -1, history.FRelease, "lock-0", 1500*ms, 1501*ms, history.Fail, &history.Value{Token: "a"}, &history.Value{NotHeld: true})
	b.call(1, -1, history.FRelease, "lock-0", 1600*ms, 1601*ms, history.OK, &history.Value{Token: "b"}, nil)
	ops := b.history()
	r := check(t, ops)
	got := kinds(r.Violations, true)
	if !slices.Contains(got, KindOverlap) || !slices.Contains(got, KindLostLease) {
		t.Fatalf("violations %v, want an overlap and a lost lease\n%s", got, dump(ops))
	}
	// B released while A's claim was live, and B held too: the words say
	// both held, not that B removed someone else's lock.
	for _, v := range r.Violations {
		if v.Kind == KindForeignRelease && !strings.Contains(v.Description, "while process 0 also held it") {
			t.Fatalf("B's release of its own claim inside A's: %q", v.Description)
		}
	}
}
