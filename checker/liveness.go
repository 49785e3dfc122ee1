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
	stats := map[string]float64{}
	var vs []Violation
	// The recovery begins at the final heal, which may lie in a window
	// before (w.c.heal); a later final heal begins it again.
	heal := p.heal
	if heal < 0 {
		heal = w.c.heal
	} else if heal != w.c.heal {
		clear(w.c.rec)
	}
	window := p.first
	if heal >= 0 {
		window = heal
	}
	stats["recovery-ms"] = float64(p.last-window) / 1e6
	complete, incomplete := recoveryComplete(p, heal, w.c)
	var undecided []string // keys that look unavailable in a window too short to say

	type keyCalls struct{ acquires []*call }
	perKey := map[string]*keyCalls{}
	for i := range p.calls {
		c := &p.calls[i]
		if c.f != history.FAcquire {
			continue
		}
		kc := perKey[c.key]
		if kc == nil {
			kc = &keyCalls{}
			perKey[c.key] = kc
		}
		kc.acquires = append(kc.acquires, c)
	}

	orphans := findOrphans(p, byKey, w.c.orphans)
	var totalUnavail int64
	var recAttempts, recOK int
	for _, key := range sortedKeys(perKey) {
		acq := perKey[key].acquires
		var busy []span
		for _, c := range byKey[key] {
			end := c.end.t
			if t, dead := p.crashedAt[c.proc]; dead && c.end == forever {
				end = max(c.start.t, t) // dead, and nothing will ever free it
			}
			busy = append(busy, span{c.start.t, min(end, p.last)})
		}
		busy = union(busy)
		// An orphan lock keeps the key busy for nobody: refusals then are
		// unavailability, not a holder's right.
		var orphaned []span
		for _, o := range orphans[key] {
			orphaned = append(orphaned, span{o.start.t, min(o.end.t, p.last)})
		}
		busy = subtract(busy, union(orphaned))
		// A crashed holder of a lease that never expires blocks the key
		// for good: no longer history would show it free again.
		failing := make([]span, 0, len(acq))
		var r *recovery
		if heal >= 0 || w.last {
			r = w.c.recoveryOf(key)
		}
		for _, c := range acq {
			if c.typ == history.OK && c.end >= window && r != nil {
				r.succeeded = true
			}
			// Only a definite fail says the lock was unavailable; an info
			// acquire (a timeout, a run cut off mid-call) says nothing.
			if c.typ == history.Fail {
				failing = append(failing, span{c.start, min(c.end, p.last)})
			}
			if c.start < window || r == nil {
				continue
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
		un := uncovered(union(failing), busy)
		w.c.unavail[key] += un
	}
	if heal >= 0 || w.last {
		// The claim in force when the recovery began, and whether a
		// crashed holder of a lease that never expires blocks the key for
		// good (no longer history would show it free again), of every key
		// with claims here, acquired here or not.
		for key, cs := range byKey {
			h := holderAt(cs, window)
			permanent := false
			for _, c := range cs {
				if _, dead := p.crashedAt[c.proc]; dead && c.end == forever && c.deadline == never {
					permanent = true
				}
			}
			if h == nil && !permanent {
				continue
			}
			r := w.c.recoveryOf(key)
			r.permanent = r.permanent || permanent
			if h != nil && (!r.held || h.grant > r.holder.grant) {
				r.holder, r.held = *h, true
			}
		}
	}
	// The recovery is judged in the last window, over its acquires in
	// every window since the final heal (w.c.rec).
	for _, key := range sortedKeys(w.c.rec) {
		if !w.last {
			break
		}
		r := w.c.rec[key]
		recAttempts += r.attempts
		recOK += r.oks
		if r.attempts > 0 {
			stats["recovery-success-rate/"+key] = float64(r.oks) / float64(r.attempts)
		}
		if r.attempts > 0 && !r.succeeded && p.last > window && len(r.failedFree) > 0 {
			if !complete && !r.permanent {
				undecided = append(undecided, key)
				continue
			}
			since := "the start of the history"
			if heal >= 0 {
				since = fmt.Sprintf("the final heal at %s", secs(heal))
			}
			holder := ""
			if r.held {
				holder = holderText(p, &r.holder)
			}
			v := Violation{Checker: "liveness", Kind: KindUnavailable, Key: key, Processes: slices.Clone(r.procs),
				Start: window, End: p.last, Fatal: true,
				Description: fmt.Sprintf("no acquire of %s succeeded in the %s from %s to the end (%d attempts by %d processes)%s",
					key, dur(p.last-window), since, r.attempts, len(r.procs), holder)}
			v.Events = append(v.Events, r.failedFree...)
			vs = append(vs, v)
		}
	}
	// Orphan episodes are judged in the window they were found in (their
	// renewals keep a lease live, so no cut falls inside one) and count
	// whichever window that was.
	oc := w.c.orphans
	for _, key := range sortedKeys(orphans) {
		for _, o := range orphans[key] {
			oc.found = append(oc.found, orphanViolation(p, o))
		}
	}
	orphanFatal := 0
	for _, v := range oc.found {
		if v.Fatal {
			orphanFatal++
		}
	}
	vs = append(vs, oc.found...)
	stats["orphan-locks"] = float64(orphanFatal)
	if w.last {
		// Only the last window's stats are the history's (every window
		// before adds to w.c.unavail): a window's cost does not grow with
		// the keys before it.
		for key, un := range w.c.unavail {
			totalUnavail += un
			stats["unavailable-ms/"+key] = float64(un) / 1e6
		}
	}
	stats["unavailable-ms"] = float64(totalUnavail) / 1e6
	stats["recovery-acquire-attempts"] = float64(recAttempts)
	stats["recovery-acquire-ok"] = float64(recOK)
	if recAttempts > 0 {
		stats["recovery-success-rate"] = float64(recOK) / float64(recAttempts)
	}
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
	return res, vs
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
// began, to explain a deadlock. A crash ends the cuts, so every crash is
// in the last window's p.
func holderText(p *prepared, c *claim) string {
	s := fmt.Sprintf("; process %d held it from %s", c.proc, secs(c.start.t))
	if t, dead := p.crashedAt[c.proc]; dead {
		s += fmt.Sprintf(" and crashed at %s", secs(t))
	}
	if c.deadline == never {
		s += " with a lease that never expires"
	}
	return s
}
