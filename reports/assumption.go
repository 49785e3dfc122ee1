package reports

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/history"
)

// Which assumption broke: a lease-based lock is safe only while some
// timing assumption holds (a holder finishes within its lease, clocks
// advance at about the same rate, a restarted node remembers or waits, a
// failover waits for replication, a message arrives within the lease).
// Each violation needed one broken. The two sides of the Redlock debate
// disagree on whether breaking it is fair: antirez's model (the redis.io
// distlock page, "Is Redlock safe?") bounds pauses and clock drift and
// asks operators to restart nodes late; Kleppmann's asynchronous model
// ("How to do distributed locking") bounds nothing, and asks for fencing
// tokens instead. AssumptionOf says which assumption the run broke and
// what each model says of it, so that one run shows both sides.

// Assumption categories.
const (
	brokeClock    = "clock"
	brokeKill     = "kill"
	brokeFailover = "failover"
	brokeDataLoss = "data-loss"
	brokePause    = "pause"
	brokeDelay    = "delay"
	brokeNone     = "none"
)

// Assumption is which timing assumption a violation needed broken, and
// what the lock's own documented model and the asynchronous model say
// of it.
type Assumption struct {
	// Category is one of the broke* constants.
	Category string
	// Broke says, with the run's numbers, what was broken: "a client
	// pause longer than the TTL: client 1 paused 1.5 s, 1.5 × TTL (1 s)".
	Broke  string
	Models []ModelView
}

// ModelView is what one side of the debate says of the broken assumption.
type ModelView struct {
	Model string // "the lock's own model (antirez, Redlock)", "Kleppmann's asynchronous model"
	// Allows is true when the model admits the fault as something that
	// happens and the lock must survive (or, for the lock's own model,
	// that its documentation says it does not survive).
	Allows bool
	Words  string
}

// AssumptionOf says which assumption violation v needed broken, from the
// client events evs around it (its story's), the run's faults and the
// lock: the fault that struck the lock or its holder, the most direct
// first (a clock change, a node's restart, a failover, lost data, a
// client's pause, then a slow or cut network).
func AssumptionOf(v checker.Violation, evs []history.Op, faults []Fault, lk storyLock) Assumption {
	a := brokenBy(v, evs, faults, lk)
	a.Models = []ModelView{ownModel(a.Category, lk, v), asyncModel(a.Category, lk, v, evs)}
	return a
}

// brokenBy finds the broken assumption and says it with numbers.
func brokenBy(v checker.Violation, evs []history.Op, faults []Fault, lk storyLock) Assumption {
	near := faultsAround(faults, v.Start-leaseOr(lk, time.Second), max(v.End, v.Start))
	pick := func(fams ...string) *Fault {
		for i := range near {
			if slices.Contains(fams, near[i].Family) {
				return &near[i]
			}
		}
		return nil
	}
	if f := pick("clock"); f != nil {
		return Assumption{Category: brokeClock, Broke: clockBroke(*f, lk)}
	}
	if f := pick("kill", history.FaultExit); f != nil {
		return Assumption{Category: brokeKill, Broke: killBroke(*f, lk)}
	}
	if f := pick("promote", "failover", "replication cut", "master paused", "master isolated", "cluster-failover", "stale replica"); f != nil {
		return Assumption{Category: brokeFailover, Broke: fmt.Sprintf("a failover before replication: %s, so the new master may not have the lock's key", f.Sentence(v.Start))}
	}
	if f := pick("flush", "delete-keys", "data-loss"); f != nil {
		return Assumption{Category: brokeDataLoss, Broke: "a node keeps its keys: " + f.Sentence(v.Start)}
	}
	if s := pauseBroke(v, evs, lk); s != "" {
		return Assumption{Category: brokePause, Broke: s}
	}
	if f := pick("partition", "latency", "delay", "lost replies", "pause", "memory pressure", "renewer stall", "kill-connection"); f != nil {
		return Assumption{Category: brokeDelay, Broke: "a message arrives within the lease's validity: " + f.Sentence(v.Start)}
	}
	return Assumption{Category: brokeNone, Broke: "none: no fault struck the lock or its holders around this finding, so it needed no timing assumption broken"}
}

// leaseOr is the lock's TTL, or def when the run did not record one.
func leaseOr(lk storyLock, def time.Duration) int64 {
	if lk.TTL > 0 {
		return int64(lk.TTL)
	}
	return int64(def)
}

// clockBroke says how large a clock change was against the drift the lock
// allows for (its TTL when it allows for none).
func clockBroke(f Fault, lk storyLock) string {
	var size string
	switch {
	case f.HasDelta || f.HasOffset:
		d := f.Delta
		if !f.HasDelta {
			d = f.Offset
		}
		size = fmt.Sprintf("jumped %s at %s", fmtOffset(d), fmtTime(f.Start))
		if lk.Drift > 0 {
			size += fmt.Sprintf(", %s × the drift bound of %s", ratio(float64(d.Abs())/float64(lk.Drift)), fmtLength(lk.Drift))
		} else if lk.TTL > 0 {
			size += ", " + Scale{TTL: lk.TTL}.Times(d.Abs())
		}
	case f.Rate > 0:
		size = fmt.Sprintf("ran at rate ×%g from %s", f.Rate, fmtTime(f.Start))
	default:
		size = fmt.Sprintf("changed (%s) at %s", f.Detail, fmtTime(f.Start))
	}
	what := "a clock jump larger than the drift bound"
	if f.Rate > 0 && !f.HasDelta && !f.HasOffset {
		what = "a clock drifting faster than the drift bound"
	}
	return fmt.Sprintf("%s: the clock of %s %s", what, orSome(targetsWords(f.Targets), "a node"), size)
}

// killBroke says how a node came back from a kill: at once, or after a
// delay against the TTL, and with which persistence.
func killBroke(f Fault, lk storyLock) string {
	s := fmt.Sprintf("a kill without persistence: %s was killed at %s", orSome(targetsWords(f.Targets), "a node"), fmtTime(f.Start))
	if f.Detail != "" {
		s += " (" + f.Detail + ")"
	}
	if f.Stopped {
		d := time.Duration(f.End - f.Start)
		s += " and restarted " + fmtLength(d) + " later"
		if lk.TTL > 0 {
			s += fmt.Sprintf(", %s the TTL of %s", map[bool]string{true: "longer than", false: "sooner than"}[d >= lk.TTL], fmtLength(lk.TTL))
		}
	}
	return s + ": it came back without the holder's key"
}

// pauseBroke says the longest pause of a client v involves that began
// before v's end, against the TTL; "" when none did.
func pauseBroke(v checker.Violation, evs []history.Op, lk storyLock) string {
	var best *history.Op
	for i := range evs {
		op := &evs[i]
		if op.F != history.FPause || op.Type != history.Invoke || op.Time > max(v.End, v.Start) || !slices.Contains(v.Processes, int(op.Process)) {
			continue
		}
		if best == nil || dur(op) > dur(best) {
			best = op
		}
	}
	if best == nil {
		return ""
	}
	d := time.Duration(dur(best))
	who := clientName(int(best.Process))
	switch {
	case lk.TTL > 0 && d > lk.TTL:
		return fmt.Sprintf("a pause longer than the TTL: %s paused %s at %s, %s, while it held the lock", who, fmtLength(d), fmtTime(best.Time), Scale{TTL: lk.TTL}.Times(d))
	case lk.TTL > 0:
		return fmt.Sprintf("a pause longer than what was left of the lease: %s paused %s at %s (%s)", who, fmtLength(d), fmtTime(best.Time), Scale{TTL: lk.TTL}.Times(d))
	}
	return fmt.Sprintf("a pause while holding: %s paused %s at %s", who, fmtLength(d), fmtTime(best.Time))
}

func dur(op *history.Op) int64 {
	if op.Value == nil {
		return 0
	}
	return op.Value.Duration
}

// redlockLike is a lock over independent masters, with a drift
// allowance: Redlock and its libraries.
func redlockLike(lk storyLock) bool {
	return lk.Drift > 0 || strings.Contains(lk.Name, "redlock") || strings.Contains(lk.Name, "redsync")
}

// ownModel is what the lock's own documentation promises about the
// broken assumption: antirez's model for Redlock, the redis.io
// single-instance pattern for the other Redis locks, the session or lease
// of etcd, ZooKeeper and the databases.
func ownModel(cat string, lk storyLock, v checker.Violation) ModelView {
	m := ModelView{Model: ownModelName(lk)}
	switch cat {
	case brokeClock:
		m.Words = "excluded: it assumes clocks that advance at about the same rate, within a bounded drift; antirez: step no clock (slew with ntpd, no manual changes)"
		if !redlockLike(lk) {
			m.Words = "excluded: the server's clock times the lease, and it assumes that clock does not jump"
		}
	case brokeKill:
		m.Words = "excluded: a node restarted without fsync-always persistence must stay down at least one TTL (delayed restarts, the distlock page's own fix)"
		if !redlockLike(lk) {
			m.Words = "excluded: it assumes the server keeps its keys across a restart (persistence)"
		}
	case brokeFailover:
		m.Allows = true
		m.Words = "allowed, and not survived: Redis replicates asynchronously, and the distlock page says a failover can hand the lock to two clients; that is why Redlock uses independent masters"
	case brokeDataLoss:
		m.Words = "excluded: it assumes a node keeps the keys it acknowledged"
	case brokePause, brokeDelay:
		m.Words = "excluded: the holder must finish its work within the lease's validity; antirez: a pause or a delay after the check is a problem of every lease, which only the lock's unique value (check-and-set) or fencing guards"
		if lk.Fenced {
			m.Allows = true
			m.Words = "allowed: the lock hands out fencing tokens, and storage that checks them refuses the late client"
		}
	default:
		m.Words = "nothing was broken that its model excludes: a bug of the lock itself"
		if v.Kind == checker.KindUnavailable {
			m.Words = "nothing was broken that its model excludes: the lock stopped being available"
		}
	}
	return m
}

func ownModelName(lk storyLock) string {
	switch {
	case redlockLike(lk):
		return "Redlock's own model (antirez, redis.io distlock)"
	case lk.System == "" || lk.System == "redis":
		return "the lock's own model (redis.io single-instance lock)"
	}
	return fmt.Sprintf("the lock's own model (%s's lease or session)", lk.System)
}

// asyncModel is what Kleppmann's asynchronous model says: timing faults
// of any size happen, and only a fencing token checked by storage makes
// a late holder harmless.
func asyncModel(cat string, lk storyLock, v checker.Violation, evs []history.Op) ModelView {
	m := ModelView{Model: "Kleppmann's asynchronous model", Allows: true}
	switch cat {
	case brokeNone:
		m.Words = "nothing to allow: no fault was needed"
		return m
	case brokeClock:
		m.Words = "allowed: clocks jump (NTP steps, operators); a lock whose safety depends on clocks is unsafe"
	case brokeKill, brokeFailover, brokeDataLoss:
		m.Words = "allowed: nodes crash and lose what they did not persist; a lock must not depend on them remembering"
	default:
		m.Words = "allowed: processes pause (GC, page faults, SIGSTOP) and networks delay messages for any length of time"
	}
	switch {
	case storageRejected(v, evs):
		m.Words += "; here the fencing token made it harmless: storage refused the stale write"
	case lk.Fenced:
		m.Words += "; the lock has fencing tokens, which make a late client harmless only if storage checks them"
	default:
		m.Words += "; only a fencing token checked by storage makes a late client harmless, and this lock has none"
	}
	return m
}

// storageRejected reports whether storage refused a write v names.
func storageRejected(v checker.Violation, evs []history.Op) bool {
	for _, op := range evs {
		if op.F == history.FWrite && op.Type == history.OK && op.Value != nil && op.Value.Rejected && slices.Contains(v.Events, op.Index) {
			return true
		}
	}
	return false
}
