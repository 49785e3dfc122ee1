package checker

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/lockharness/lockharness/history"
)

type span struct{ a, b int64 } // [a, b)

// union merges spans into disjoint sorted ones.
func union(ss []span) []span {
	slices.SortFunc(ss, func(x, y span) int { return cmp.Compare(x.a, y.a) })
	var out []span
	for _, s := range ss {
		if s.b <= s.a {
			continue
		}
		if n := len(out); n > 0 && s.a <= out[n-1].b {
			out[n-1].b = max(out[n-1].b, s.b)
			continue
		}
		out = append(out, s)
	}
	return out
}

// uncovered is the total length of us (disjoint, sorted) outside cover
// (disjoint, sorted).
func uncovered(us, cover []span) int64 {
	var total int64
	j := 0
	for _, u := range us {
		a := u.a
		for j < len(cover) && cover[j].b <= a {
			j++
		}
		for k := j; k < len(cover) && cover[k].a < u.b && a < u.b; k++ {
			if cover[k].a > a {
				total += cover[k].a - a
			}
			a = max(a, cover[k].b)
		}
		if a < u.b {
			total += u.b - a
		}
	}
	return total
}

// subtract returns us (disjoint, sorted) without cut (disjoint, sorted).
func subtract(us, cut []span) []span {
	var out []span
	j := 0
	for _, u := range us {
		a := u.a
		for j < len(cut) && cut[j].b <= a {
			j++
		}
		for k := j; k < len(cut) && cut[k].a < u.b; k++ {
			if cut[k].a > a {
				out = append(out, span{a, cut[k].a})
			}
			a = max(a, cut[k].b)
		}
		if a < u.b {
			out = append(out, span{a, u.b})
		}
	}
	return out
}

// covered reports whether t lies inside cover (disjoint, sorted).
func covered(cover []span, t int64) bool {
	i, _ := slices.BinarySearchFunc(cover, t, func(s span, t int64) int {
		switch {
		case s.b <= t:
			return -1
		case s.a > t:
			return 1
		}
		return 0
	})
	return i < len(cover) && cover[i].a <= t && t < cover[i].b
}

// checkLiveness measures, per key, how long acquires failed while no live
// client held a valid claim, and judges the recovery period after the
// final heal.
//
// A claim keeps a key legitimately busy until its end, a crashed holder's
// until its deadline (the lease is the designed way out of a crash). A
// crashed holder's claim without a deadline does not: that is naive
// SETNX's deadlock, and the time it blocks others counts as unavailable.
//
// In a window of a longer history (see CheckFile) only the last is
// judged; the windows before add their unavailability, their longest
// lease and, from the final heal on, what they saw of the recovery
// (carry.rec) to w's carry.
func checkLiveness(p *prepared, byKey map[string][]claim, w window) (CheckResult, []Violation) {
	lc := newLivenessCheck(p, byKey, w)
	orphans := findOrphans(p, byKey, w.c.orphans)
	var acq []*call
	for _, wk := range windowKeys(p) {
		// Key by key, in p.keys' order (sorted, "" first), from the
		// key's calls rather than a map of every key's acquires.
		if acq = acquiresOf(p, wk.calls, acq[:0]); len(acq) > 0 {
			lc.measureKey(wk.key, acq, orphans[wk.key])
		}
	}
	if lc.judgesRecovery() {
		lc.holdersAtRecovery()
	}
	vs, undecided := lc.judgeRecovery()
	vs = append(vs, lc.orphanFindings(orphans)...)
	lc.unavailabilityStats()
	return livenessVerdict(lc.stats, vs, undecided, lc.incomplete), vs
}

// livenessCheck is what the steps of checkLiveness share about one window
// of a history: where its recovery period begins, whether it is long
// enough to call a key unavailable, and the stats so far.
type livenessCheck struct {
	p     *prepared
	byKey map[string][]claim
	w     window
	heal  int64 // the final heal's time, in this window or one before; -1 if none
	// recoveryFrom is where the recovery period begins: the final heal,
	// or the start of the history when there is none.
	recoveryFrom int64
	complete     bool   // the recovery is long enough to call a key unavailable
	incomplete   string // if not, why
	stats        map[string]float64
}

// newLivenessCheck finds where w's recovery begins. The recovery begins
// at the final heal, which may lie in a window before (w.c.heal); a later
// final heal begins it again.
func newLivenessCheck(p *prepared, byKey map[string][]claim, w window) *livenessCheck {
	lc := &livenessCheck{p: p, byKey: byKey, w: w, heal: p.heal, recoveryFrom: p.first, stats: map[string]float64{}}
	if w.c.hasFirst {
		lc.recoveryFrom = w.c.first // a window's first event is not the history's
	}
	if lc.heal < 0 {
		lc.heal = w.c.heal
	} else if lc.heal != w.c.heal {
		clear(w.c.rec)
	}
	if lc.heal >= 0 {
		lc.recoveryFrom = lc.heal
	}
	lc.stats["recovery-ms"] = float64(p.last-lc.recoveryFrom) / 1e6
	lc.complete, lc.incomplete = recoveryComplete(p, lc.heal, w.c)
	return lc
}

// judgesRecovery reports whether the window follows the recovery: it
// lies after the final heal, or is the last, or the windows follow the
// recovery from the start (a history without a final heal is all
// recovery).
func (lc *livenessCheck) judgesRecovery() bool {
	return lc.heal >= 0 || lc.w.last || lc.w.c.fromStart
}

// acquiresOf appends to out the acquires among p's calls at positions
// calls (a key's), in invocation order.
func acquiresOf(p *prepared, calls []int, out []*call) []*call {
	for _, i := range calls {
		if c := &p.calls[i]; c.f == history.FAcquire {
			out = append(out, c)
		}
	}
	return out
}

// measureKey adds to the carry how long key's acquires (acq) definitely
// failed while nobody held the key legitimately, and records in the
// key's recovery what its acquires showed of it.
func (lc *livenessCheck) measureKey(key string, acq []*call, orphans []orphan) {
	var r *recovery
	if lc.judgesRecovery() {
		r = lc.w.c.recoveryOf(key)
	}
	// The busy spans are read of refused acquires alone (unavailability,
	// and the recovery's refusals while nobody held the key): a key
	// without one, most keys of most windows, need not have them.
	if !slices.ContainsFunc(acq, func(c *call) bool { return c.typ == history.Fail }) {
		for _, c := range acq {
			if r != nil {
				r.observe(c, lc.recoveryFrom, nil)
			}
		}
		return
	}
	busy := busySpans(lc.p, lc.byKey[key], orphans)
	failing := make([]span, 0, len(acq))
	for _, c := range acq {
		// Only a definite fail says the lock was unavailable; an info
		// acquire (a timeout, a run cut off mid-call) says nothing.
		if c.typ == history.Fail {
			failing = append(failing, span{c.start, min(c.end, lc.p.last)})
		}
		if r != nil {
			r.observe(c, lc.recoveryFrom, busy)
		}
	}
	if un := uncovered(union(failing), busy); un > 0 {
		// Only keys that were unavailable at all: a history of a
		// million keys carries (and reports) none of the others.
		lc.w.c.unavail[key] += un
	}
}

// busySpans are the spans (disjoint, sorted) in which a key was
// legitimately busy: held by its claims, a crashed holder's claim that
// never ends only until the crash. An orphan lock keeps the key busy for
// nobody: refusals then are unavailability, not a holder's right, so its
// spans are cut out.
func busySpans(p *prepared, claims []claim, orphans []orphan) []span {
	var busy []span
	for _, c := range claims {
		end := c.end.t
		if t, dead := p.crashed(c.proc); dead && c.end == forever {
			end = max(c.start.t, t) // dead, and nothing will ever free it
		}
		busy = append(busy, span{c.start.t, min(end, p.last)})
	}
	var orphaned []span
	for _, o := range orphans {
		orphaned = append(orphaned, span{o.start.t, min(o.end.t, p.last)})
	}
	return subtract(union(busy), union(orphaned))
}

// observe records acquire c in r, the recovery of its key that begins at
// from: whether an acquire was granted in it, and of those invoked in it,
// how many, by whom, how many granted, and the first three refused while
// nobody held the key (busy).
func (r *recovery) observe(c *call, from int64, busy []span) {
	if c.typ == history.OK && c.end >= from {
		r.succeeded = true
	}
	if c.start < from {
		return
	}
	r.attempts++
	if i, found := slices.BinarySearch(r.procs, c.proc); !found {
		r.procs = slices.Insert(r.procs, i, c.proc)
	}
	if c.typ == history.OK {
		r.oks++
	} else if c.typ == history.Fail && !covered(busy, c.start) && len(r.failedFree) < 3 {
		r.failedFree = append(r.failedFree, c.inv)
	}
}

// holdersAtRecovery records, for every key with claims here (acquired
// here or not), the claim in force when the recovery began, and whether
// a crashed holder of a lease that never expires blocks the key for good
// (no longer history would show it free again).
//
// The claims the windows before carry as live through this one
// (carry.open: crashed holders' claims that never end, see
// cutter.forgone) are the key's too: each is in force at the recovery's
// start if it began by then, and blocks its key for good.
func (lc *livenessCheck) holdersAtRecovery() {
	for key, cs := range lc.byKey {
		lc.holderAtRecovery(key, cs)
	}
	for key, cs := range lc.w.c.open {
		lc.holderAtRecovery(key, cs)
	}
}

// holderAtRecovery records in key's recovery the latest of its claims cs
// in force when the recovery began, and whether one of them blocks it for
// good.
func (lc *livenessCheck) holderAtRecovery(key string, cs []claim) {
	h := holderAt(cs, lc.recoveryFrom)
	permanent := blockedForGood(lc.p, cs)
	if h == nil && !permanent {
		return
	}
	r := lc.w.c.recoveryOf(key)
	r.permanent = r.permanent || permanent
	if h != nil && (!r.held || h.grant > r.holder.grant) {
		r.holder, r.held = *h, true
	}
}

// blockedForGood reports whether one of cs is a crashed holder's claim
// that never ends.
func blockedForGood(p *prepared, cs []claim) bool {
	for _, c := range cs {
		if _, dead := p.crashed(c.proc); dead && c.end == forever && c.deadline == never {
			return true
		}
	}
	return false
}

// judgeRecovery judges, in the last window, every key's recovery over its
// acquires in every window since the final heal (w.c.rec): a key none of
// whose acquires was granted, some refused while nobody held it, was
// unavailable through the whole recovery, or, in a recovery too short to
// say (and not blocked for good), undecided.
func (lc *livenessCheck) judgeRecovery() (vs []Violation, undecided []string) {
	var attempts, oks int
	if lc.w.last {
		for _, key := range sortedKeys(lc.w.c.rec) {
			r := lc.w.c.rec[key]
			attempts += r.attempts
			oks += r.oks
			if r.attempts > 0 {
				lc.stats["recovery-success-rate/"+key] = float64(r.oks) / float64(r.attempts)
			}
			stuck := r.attempts > 0 && !r.succeeded && lc.p.last > lc.recoveryFrom && len(r.failedFree) > 0
			if !stuck {
				continue
			}
			if !lc.complete && !r.permanent {
				undecided = append(undecided, key)
				continue
			}
			vs = append(vs, lc.unavailable(key, r))
		}
	}
	lc.stats["recovery-acquire-attempts"] = float64(attempts)
	lc.stats["recovery-acquire-ok"] = float64(oks)
	if attempts > 0 {
		lc.stats["recovery-success-rate"] = float64(oks) / float64(attempts)
	}
	return vs, undecided
}

// unavailable is the violation of key, whose recovery r saw no acquire
// granted.
func (lc *livenessCheck) unavailable(key string, r *recovery) Violation {
	p, from := lc.p, lc.recoveryFrom
	since := "the start of the history"
	if lc.heal >= 0 {
		since = fmt.Sprintf("the final heal at %s", secs(lc.heal))
	}
	holder := ""
	if r.held {
		holder = holderText(p, &r.holder)
	}
	v := Violation{Checker: "liveness", Kind: KindUnavailable, Key: key, Processes: slices.Clone(r.procs),
		Start: from, End: p.last, Fatal: true,
		Description: fmt.Sprintf("no acquire of %s succeeded in the %s from %s to the end (%d attempts by %d processes)%s",
			key, dur(p.last-from), since, r.attempts, len(r.procs), holder)}
	v.Events = append(v.Events, r.failedFree...)
	return v
}

// orphanFindings adds the orphan episodes found here to the carry's and
// returns all of them so far. Orphan episodes are judged in the window
// they were found in (their renewals keep a lease live, so no cut falls
// inside one) and count whichever window that was.
func (lc *livenessCheck) orphanFindings(orphans map[string][]orphan) []Violation {
	oc := lc.w.c.orphans
	for _, key := range sortedKeys(orphans) {
		for _, o := range orphans[key] {
			oc.found = append(oc.found, orphanViolation(lc.p, o))
		}
	}
	fatal := 0
	for _, v := range oc.found {
		if v.Fatal {
			fatal++
		}
	}
	lc.stats["orphan-locks"] = float64(fatal)
	return oc.found
}

// unavailabilityStats are the history's unavailability, in total and per
// key. Only the last window's stats are the history's (every window
// before adds to w.c.unavail): a window's cost does not grow with the
// keys before it.
func (lc *livenessCheck) unavailabilityStats() {
	var total int64
	if lc.w.last {
		for key, un := range lc.w.c.unavail {
			total += un
			lc.stats["unavailable-ms/"+key] = float64(un) / 1e6
		}
	}
	lc.stats["unavailable-ms"] = float64(total) / 1e6
}

// livenessVerdict is the verdict on the liveness findings vs: invalid
// when a key was unavailable through the whole recovery or an orphan lock
// refused acquires; unknown when keys looked unavailable in a recovery
// too short to say (undecided; incomplete says why); valid otherwise.
func livenessVerdict(stats map[string]float64, vs []Violation, undecided []string, incomplete string) CheckResult {
	res := CheckResult{Verdict: Valid, Stats: stats}
	var unavailable, orphaned []string
	for _, v := range vs {
		switch {
		case v.Kind == KindUnavailable:
			unavailable = append(unavailable, v.Key)
		case v.Kind == KindOrphan && v.Fatal && !slices.Contains(orphaned, v.Key):
			orphaned = append(orphaned, v.Key)
		}
	}
	if len(unavailable) > 0 || len(orphaned) > 0 {
		res.Verdict = Invalid
		var why []string
		if len(unavailable) > 0 {
			why = append(why, "unavailable through the whole recovery period: "+strings.Join(unavailable, ", "))
		}
		if len(orphaned) > 0 {
			why = append(why, "an orphan lock (renewed after its holder let go) refused acquires: "+strings.Join(orphaned, ", "))
		}
		res.Reason = strings.Join(why, "; ")
	} else if len(undecided) > 0 {
		res.Verdict = Unknown
		res.Reason = fmt.Sprintf("no acquire of %s succeeded, but %s", strings.Join(undecided, ", "), incomplete)
	}
	return res
}

// minRecovery is the shortest recovery period judged when no lease in the
// history says how long one lasts (locks without expiry).
const minRecovery = int64(1e9)

// recoveryComplete reports whether the history holds a recovery period long
// enough to call a key unavailable, and if not, why. Liveness is judged
// after the final heal; a history without one (a killed run, a prefix) or
// whose recovery is shorter than the longest lease in it (an interrupted
// run) can look unavailable for a reason the history does not show: the
// holder's grant lost with the last unflushed events, or an acquire whose
// outcome is unknown holding the key until its lease ends. Such a history
// is unknown, never invalid, unless the deadlock is one no longer history
// could undo (a crashed holder of a lease that never expires, decided by
// the caller). A success, on the other hand, shows liveness however short
// the window: valid stands.
//
// cr carries the longest lease of the windows before p's.
func recoveryComplete(p *prepared, heal int64, cr *carry) (bool, string) {
	longest := cr.longest
	for i := range p.calls {
		c := &p.calls[i]
		if c.typ != history.OK || c.out == nil || c.out.Deadline <= 0 || c.out.Deadline == never {
			continue
		}
		longest = max(longest, c.out.Deadline-c.start)
	}
	cr.longest = longest
	need := max(longest, minRecovery)
	if heal < 0 {
		return false, "the history has no final heal (a run cut short, or a prefix of one): its recovery period, where liveness is judged, is missing; re-check a complete run's history"
	}
	if got := p.last - heal; got < need {
		return false, fmt.Sprintf("the recovery period after the final heal lasts %s, shorter than the %s a lease in it may hold a key for: run with a longer --recovery", dur(got), dur(need))
	}
	return true, ""
}

// holderAt is the claim of cs in force at t (the latest, if several),
// or nil.
func holderAt(cs []claim, t int64) *claim {
	for i := len(cs) - 1; i >= 0; i-- {
		if c := &cs[i]; c.start.t <= t && t < c.end.t {
			return c
		}
	}
	return nil
}

// holderText names c, the claim that was in force when the recovery
// began, to explain a deadlock. Every crash is in the last window's p
// or the windows' log of crashes before it (p.crashed).
func holderText(p *prepared, c *claim) string {
	s := fmt.Sprintf("; process %d held it from %s", c.proc, secs(c.start.t))
	if t, dead := p.crashed(c.proc); dead {
		s += fmt.Sprintf(" and crashed at %s", secs(t))
	}
	if c.deadline == never {
		s += " with a lease that never expires"
	}
	return s
}
