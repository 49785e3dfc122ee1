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
// judged: the recovery period lies in it; the windows before add their
// unavailability and their longest lease to w's carry.
func checkLiveness(p *prepared, byKey map[string][]claim, w window) (CheckResult, []Violation) {
	stats := map[string]float64{}
	var vs []Violation
	window := p.first
	if p.heal >= 0 {
		window = p.heal
	}
	stats["recovery-ms"] = float64(p.last-window) / 1e6
	complete, incomplete := recoveryComplete(p, w.c)
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
		permanent := false
		for _, c := range byKey[key] {
			if _, dead := p.crashedAt[c.proc]; dead && c.end == forever && c.deadline == never {
				permanent = true
			}
		}
		failing := make([]span, 0, len(acq))
		attempts, oks, succeeded := 0, 0, false
		var failedFree []*call // failed in the window, invoked while no live claim
		procs := map[int]bool{}
		for _, c := range acq {
			if c.typ == history.OK && c.end >= window {
				succeeded = true
			}
			// Only a definite fail says the lock was unavailable; an info
			// acquire (a timeout, a run cut off mid-call) says nothing.
			if c.typ == history.Fail {
				failing = append(failing, span{c.start, min(c.end, p.last)})
			}
			if c.start < window {
				continue
			}
			attempts++
			procs[c.proc] = true
			if c.typ == history.OK {
				oks++
			} else if c.typ == history.Fail && !covered(busy, c.start) {
				failedFree = append(failedFree, c)
			}
		}
		un := uncovered(union(failing), busy)
		w.c.unavail[key] += un
		recAttempts += attempts
		recOK += oks
		if attempts > 0 {
			stats["recovery-success-rate/"+key] = float64(oks) / float64(attempts)
		}
		if attempts > 0 && !succeeded && p.last > window && len(failedFree) > 0 {
			if !complete && !permanent {
				undecided = append(undecided, key)
				continue
			}
			var ps []int
			for q := range procs {
				ps = append(ps, q)
			}
			slices.Sort(ps)
			since := "the start of the history"
			if p.heal >= 0 {
				since = fmt.Sprintf("the final heal at %s", secs(p.heal))
			}
			v := Violation{Checker: "liveness", Kind: KindUnavailable, Key: key, Processes: ps,
				Start: window, End: p.last, Fatal: true,
				Description: fmt.Sprintf("no acquire of %s succeeded in the %s from %s to the end (%d attempts by %d processes)%s",
					key, dur(p.last-window), since, attempts, len(ps), lastHolderText(p, byKey[key], window))}
			for i, c := range failedFree {
				if i == 3 {
					break
				}
				v.Events = append(v.Events, c.inv)
			}
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
func recoveryComplete(p *prepared, cr *carry) (bool, string) {
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
	if p.heal < 0 {
		return false, "the history has no final heal (a run cut short, or a prefix of one): its recovery period, where liveness is judged, is missing; re-check a complete run's history"
	}
	if got := p.last - p.heal; got < need {
		return false, fmt.Sprintf("the recovery period after the final heal lasts %s, shorter than the %s a lease in it may hold a key for: run with a longer --recovery", dur(got), dur(need))
	}
	return true, ""
}

// lastHolderText names the claim that was in force when the window began,
// if any, to explain a deadlock.
func lastHolderText(p *prepared, cs []claim, window int64) string {
	for i := len(cs) - 1; i >= 0; i-- {
		c := &cs[i]
		if c.start.t > window || c.end.t <= window {
			continue
		}
		s := fmt.Sprintf("; process %d held it from %s", c.proc, secs(c.start.t))
		if t, dead := p.crashedAt[c.proc]; dead {
			s += fmt.Sprintf(" and crashed at %s", secs(t))
		}
		if c.deadline == never {
			s += " with a lease that never expires"
		}
		return s
	}
	return ""
}
