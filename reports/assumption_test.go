package reports

import (
	"strings"
	"testing"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/history"
)

// models gives the two sides' views: the lock's own model and
// Kleppmann's.
func models(t *testing.T, a Assumption) (own, async ModelView) {
	t.Helper()
	if len(a.Models) != 2 || !strings.Contains(a.Models[1].Model, "Kleppmann") {
		t.Fatalf("models %+v, want the lock's own and Kleppmann's", a.Models)
	}
	return a.Models[0], a.Models[1]
}

// A GC pause past the TTL: the lock's own model excludes it (the holder
// must finish within the lease), Kleppmann's allows it, and without
// fencing nothing saved the data.
func TestAssumptionPauseLongerThanTTL(t *testing.T) {
	ops := gcPauseHistory(false)
	v := findKind(t, checkOps(ops), checker.KindStaleWrite)
	a := AssumptionOf(v, ops, nil, storyLock{Name: "token", System: "redis", TTL: time.Second})
	if a.Category != brokePause || !strings.Contains(a.Broke, "a pause longer than the TTL: client 1 paused 1.5 s at 0.01 s, 1.5 × TTL (1 s)") {
		t.Errorf("broke %q (%s)", a.Broke, a.Category)
	}
	own, async := models(t, a)
	if own.Allows || !strings.Contains(own.Model, "single-instance") || !strings.Contains(own.Words, "within the lease") {
		t.Errorf("own model %+v", own)
	}
	if !async.Allows || !strings.Contains(async.Words, "this lock has none") {
		t.Errorf("Kleppmann's model %+v", async)
	}
}

// With fencing, the lock's model covers the pause and Kleppmann's side
// sees storage refuse the stale write.
func TestAssumptionPauseFenced(t *testing.T) {
	ops := gcPauseHistory(true)
	v := findKind(t, checkOps(ops), checker.KindStaleWrite)
	a := AssumptionOf(v, ops, nil, storyLock{Name: "fenced", System: "redis", TTL: time.Second, Fenced: true})
	own, async := models(t, a)
	if !own.Allows || !strings.Contains(own.Words, "fencing tokens") {
		t.Errorf("own model %+v", own)
	}
	if !strings.Contains(async.Words, "storage refused the stale write") {
		t.Errorf("Kleppmann's model %+v", async)
	}
}

// A clock jump on a Redlock node, against the drift bound: Redlock's
// model excludes it, Kleppmann's allows it.
func TestAssumptionClockJumpOnRedlock(t *testing.T) {
	b := &builder{ttl: 2000 * ms}
	b.nemesisV(1000*ms, "bump-clock", bump("n3", 10*time.Second, 10*time.Second))
	ops := b.build()
	v := checker.Violation{Kind: checker.KindOverlap, Key: "lock-0", Processes: []int{0, 1}, Start: 1100 * ms, End: 2400 * ms, Fatal: true}
	lk := storyLock{Name: "redlock", System: "redis", TTL: 2 * time.Second, Drift: 22 * time.Millisecond, Nodes: []string{"n1", "n2", "n3"}}
	a := AssumptionOf(v, nil, Faults(Record{}, ops), lk)
	if a.Category != brokeClock || !strings.Contains(a.Broke, "the clock of node 3 jumped +10 s at 1.00 s, 455 × the drift bound of 22 ms") {
		t.Errorf("broke %q", a.Broke)
	}
	own, async := models(t, a)
	if own.Allows || !strings.Contains(own.Model, "antirez") || !strings.Contains(own.Words, "bounded drift") {
		t.Errorf("own model %+v", own)
	}
	if !async.Allows || !strings.Contains(async.Words, "clocks jump") {
		t.Errorf("Kleppmann's model %+v", async)
	}
}

// A node killed and restarted at once without persistence: Redlock's
// model asks for a delayed restart.
func TestAssumptionKillWithoutPersistence(t *testing.T) {
	b := &builder{}
	b.nemesisV(1000*ms, "kill", &history.Value{Targets: []string{"n3"}, Fault: "kill", Detail: "SIGKILL, persistence none"})
	b.nemesisV(1020*ms, "restart", &history.Value{Targets: []string{"n3"}, Ends: []string{"kill"}, Detail: "persistence none"})
	ops := b.build()
	v := checker.Violation{Kind: checker.KindOverlap, Key: "lock-0", Processes: []int{0, 1}, Start: 1100 * ms, End: 2400 * ms, Fatal: true}
	a := AssumptionOf(v, nil, Faults(Record{}, ops), storyLock{Name: "redlock", TTL: 2 * time.Second, Drift: 22 * time.Millisecond})
	if a.Category != brokeKill || !strings.Contains(a.Broke, "persistence none") || !strings.Contains(a.Broke, "sooner than the TTL of 2 s") {
		t.Errorf("broke %q", a.Broke)
	}
	if own, _ := models(t, a); own.Allows || !strings.Contains(own.Words, "delayed restarts") {
		t.Errorf("own model %+v", own)
	}
}

// A failover: the lock's own documentation says it is not safe.
func TestAssumptionFailover(t *testing.T) {
	b := &builder{}
	b.nemesisV(1000*ms, "promote", &history.Value{Targets: []string{"n2"}, Fault: "promote"})
	ops := b.build()
	v := checker.Violation{Kind: checker.KindOverlap, Key: "lock-0", Processes: []int{0, 1}, Start: 1100 * ms, End: 1400 * ms, Fatal: true}
	a := AssumptionOf(v, nil, Faults(Record{}, ops), storyLock{Name: "token", System: "redis", TTL: time.Second})
	if a.Category != brokeFailover || !strings.HasPrefix(a.Broke, "a failover before replication") {
		t.Errorf("broke %q", a.Broke)
	}
	if own, _ := models(t, a); !own.Allows || !strings.Contains(own.Words, "asynchronously") {
		t.Errorf("own model %+v", own)
	}
}

// A violation with no fault around it broke no assumption: a bug.
func TestAssumptionNone(t *testing.T) {
	v := checker.Violation{Kind: checker.KindForeignRelease, Key: "lock-0", Processes: []int{0, 1}, Start: 1100 * ms, End: 1400 * ms, Fatal: true}
	a := AssumptionOf(v, nil, nil, storyLock{Name: "set-nx-ex", System: "redis", TTL: time.Second})
	own, async := models(t, a)
	if a.Category != brokeNone || !strings.Contains(own.Words, "a bug of the lock itself") || !strings.Contains(async.Words, "no fault was needed") {
		t.Errorf("%+v", a)
	}
}
