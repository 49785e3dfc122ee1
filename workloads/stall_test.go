package workloads_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/workloads"
)

// The measured effect of StallRenewers (the renewer-stall nemesis): one
// client holds the reentrant lock for 1.2s with a 150ms TTL (a renewal
// every 50ms); a 400ms stall leaves a gap of about 400ms between its
// renewals, so the holder's lease runs out while it works and the other
// client takes the lock: its claim starts inside the first holder's hold,
// and no renewal is even asked for during the stall.
func TestStallRenewersLetsTheLeaseRunOut(t *testing.T) {
	m, rec, stop := startLock(t, "reentrant", workloads.Config{Clients: 2, TTL: 150 * time.Millisecond, Hold: 1200 * time.Millisecond, AcquireTimeout: time.Second})
	time.Sleep(300 * time.Millisecond)
	from := rec.Clock().Now()
	m.StallRenewers(400 * time.Millisecond)
	time.Sleep(1500 * time.Millisecond)
	stop()
	ops := rec.Ops()
	for _, op := range ops {
		if op.F == history.FRenew && op.Type == history.Invoke && op.Time > from+int64(20*time.Millisecond) && op.Time < from+int64(380*time.Millisecond) {
			t.Fatalf("a renewal was asked for during the stall, at %v after it began", time.Duration(op.Time-from))
		}
	}
	r, _ := checker.Check(context.Background(), history.Events(ops), checker.Config{})
	var first, second *checker.Hold
	for i := range r.Holds {
		h := &r.Holds[i]
		if h.Start < from && (first == nil || h.Start > first.Start) {
			first = h
		}
		if h.Start > from && second == nil {
			second = h
		}
	}
	if first == nil || second == nil {
		t.Fatalf("holds %+v: want one before the stall and one after", r.Holds)
	}
	if first.End > from+int64(400*time.Millisecond) || second.Process == first.Process {
		t.Errorf("the holder's claim %+v outlived the stall, or the next holder %+v is the same client", *first, *second)
	}
	if r.Checkers[checker.LockPromise].Verdict != checker.Valid {
		t.Errorf("lock promise %v: the stall must end a lease, not break the lock: %+v", r.Checkers[checker.LockPromise].Verdict, r.Violations)
	}
}
