package checker

import (
	"fmt"
	"slices"
	"strings"

	"github.com/lockharness/lockharness/history"
)

// KindOrphan: a watchdog renewed a lock for a process that had let go of
// it (its release had completed, or it was never told it held it), so the
// key stayed held for nobody, and acquires were refused meanwhile
// (redisson#7272: a renewal that outlives unlock). One holder at a time
// all along: it is a liveness finding, never an overlap.
const KindOrphan = "orphan-lock"

// orphan is one episode of an orphan lock: process proc's watchdog kept
// key held, from the renewal that began it to the end of the last renewal
// claim of the episode (or the process's next grant of its own).
type orphan struct {
	proc, thread int
	key          string
	start, end   instant // the first orphan claim's start; the episode's end
	renewals     int     // orphan claims in the episode (renewals that began one)
	letGo        *call   // the release that preceded it, nil if the process never held it
	lastAcquire  *call   // the process's latest acquire of key before it, nil if none
}

// findOrphans returns, per key, the orphan episodes among byKey's claims:
// claims begun by a renewer thread's renew (claim.renewer) while the
// process it renews for was not holding the key: its latest release of
// the key was invoked after its latest granted acquire (or it has no
// granted acquire at all). Such a renewal is not absorbed by the release
// (it was invoked after the release completed: see claim), so the lock
// granted the key again, to a process that will not use it or release
// it. An orphan claim ends at the process's next granted acquire, when the
// key is its own again. Consecutive orphan claims of one process (its
// client's unrelated releases chop the claim, and the next renewal starts
// it again) are one episode.
//
// In a window of a longer history (see CheckFile), the process's acquires
// and release of the windows before stand in front of its own (prior):
// a cut may fall between a release and the renewal that orphans it.
func findOrphans(p *prepared, byKey map[string][]claim, prior *orphanCarry) map[string][]orphan {
	if !renewedByWatchdog(byKey) {
		// No claim a watchdog began: no orphan (the common case, a lock
		// without one), and nothing to look up.
		if prior != nil {
			prior.remember(p)
		}
		return map[string][]orphan{}
	}
	type pk = procKey
	acquires, releases := map[pk][]*call{}, map[pk][]*call{}
	grants := map[int64]*call{} // by completion index
	for i := range p.calls {
		c := &p.calls[i]
		k := pk{c.proc, c.key}
		if c.completed() {
			grants[c.done] = c
		}
		if c.f != history.FAcquire && c.f != history.FRelease && c.f != history.FRenew {
			continue
		}
		if _, seen := acquires[k]; !seen {
			// The windows before stand in front, for the processes and
			// keys this window grants or releases only (a claim is
			// either's): the others' carry is not read, so that a
			// window's cost does not grow with the keys before it. A
			// present nil says it was looked up.
			acquires[k] = prior.before(k)
			if rs := prior.releasesOf(k); len(rs) > 0 {
				releases[k] = rs
			}
		}
		switch {
		case c.f == history.FAcquire:
			acquires[k] = append(acquires[k], c)
		case c.f == history.FRelease:
			releases[k] = append(releases[k], c)
		}
	}
	if prior != nil {
		prior.remember(p)
	}
	// before returns the last of cs (in invocation order) invoked before at.
	before := func(cs []*call, at instant) *call {
		var out *call
		for _, c := range cs {
			if !c.invoked().less(at) {
				break
			}
			out = c
		}
		return out
	}
	out := map[string][]orphan{}
	for _, key := range sortedKeys(byKey) {
		var cur *orphan
		flush := func() {
			if cur != nil {
				out[key] = append(out[key], *cur)
				cur = nil
			}
		}
		cs := byKey[key]
		for i := range cs {
			c := &cs[i]
			if c.renewer < 0 || !c.byRenew {
				if cur != nil && c.proc == cur.proc {
					flush()
				}
				continue
			}
			k := pk{c.proc, key}
			var granted *call // latest acquire ok completed before the claim
			for _, a := range acquires[k] {
				if !a.invoked().less(c.start) {
					break
				}
				if a.typ == history.OK && a.completion().less(c.start) {
					granted = a
				}
			}
			rel := before(releases[k], c.start)
			if granted != nil && (rel == nil || rel.inv < granted.done) {
				continue // the process holds it: a late renewal of its own lease
			}
			// The orphan claim ends at the process's next granted acquire.
			end := c.end
			for _, a := range acquires[k] {
				if a.typ == history.OK && c.start.less(a.completion()) && a.completion().less(end) {
					end = a.completion()
					break
				}
			}
			if cur != nil && cur.proc != c.proc {
				flush()
			}
			if cur == nil {
				// The release that let go of the orphan's lease, if the
				// client released it by its token; else its latest.
				if r := grants[c.grant]; r != nil && r.token() != "" {
					for _, x := range releases[k] {
						if !x.invoked().less(c.start) {
							break
						}
						if x.token() == r.token() {
							rel = x
						}
					}
				}
				var acq *call
				if rel != nil {
					acq = before(acquires[k], rel.invoked())
				} else {
					acq = before(acquires[k], c.start)
				}
				cur = &orphan{proc: c.proc, thread: c.renewer, key: key, start: c.start, letGo: rel, lastAcquire: acq}
			}
			cur.end = end
			cur.renewals++
			if end != c.end {
				flush()
			}
		}
		flush()
	}
	return out
}

// renewedByWatchdog reports whether a renewer thread's renew began one of
// the claims, the only ones findOrphans can find orphaned.
func renewedByWatchdog(byKey map[string][]claim) bool {
	for _, cs := range byKey {
		for i := range cs {
			if cs[i].renewer >= 0 && cs[i].byRenew {
				return true
			}
		}
	}
	return false
}

// orphanCarry is what findOrphans keeps of the windows before the current
// one: each process's latest acquire, latest granted acquire and latest
// releases of each key (slim copies: the window's calls are dropped; the
// releases of its last priorReleases tokens, in invocation order, since an
// orphan names the release of the lease its watchdog renewed), and the
// orphan findings so far, which the liveness verdict counts whichever
// window they were found in. The calls are kept in the carry's entry of
// each process and key (pkCarry), one map for everything the carry keeps
// per process and key.
type orphanCarry struct {
	calls map[procKey]*pkCarry
	found []Violation
}

// priorCalls is what the orphan carry keeps of one process and key.
type priorCalls struct {
	acquire, granted priorAcquire   // its latest acquire and granted acquire
	releases         []priorRelease // its latest releases, of distinct tokens
	acquired, gotOne bool           // whether acquire and granted are set
}

// priorAcquire and priorRelease are calls of an earlier window as the
// orphan carry keeps them: what findOrphans and orphanViolation read of a
// process's acquire or release (its process and key are the carry's key),
// without their values but a release's token and "not held" answer (an
// acquire's values are never read). The values a history's decoder hands
// out share their memory with their neighbours', so one kept would keep a
// window's worth alive after the window; and the carry holds a few calls
// for every process and key of the history, so each is small.
type priorAcquire struct {
	start, end, inv, done int64
	typ                   callType
}

type priorRelease struct {
	start, end, inv, done int64
	token                 string
	typ                   callType
	notHeld               bool
}

// callType is a call's history.Type in a byte.
type callType uint8

var callTypes = [...]history.Type{history.Info, history.OK, history.Fail, history.Invoke}

func typeCode(t history.Type) callType {
	i := slices.Index(callTypes[:], t)
	if i < 0 {
		panic(fmt.Sprintf("event type %q", t)) // Validate refuses it first
	}
	return callType(i)
}

func (t callType) typ() history.Type { return callTypes[t] }

// keepAcquire and keepRelease are c as the carry keeps it.
func keepAcquire(c *call) priorAcquire {
	return priorAcquire{start: c.start, end: c.end, inv: c.inv, done: c.done, typ: typeCode(c.typ)}
}

func keepRelease(c *call) priorRelease {
	return priorRelease{start: c.start, end: c.end, inv: c.inv, done: c.done, typ: typeCode(c.typ),
		token: c.token(), notHeld: c.out != nil && c.out.NotHeld}
}

// call is k, process and key pk's acquire, as a call again, for a
// window's findOrphans.
func (k priorAcquire) call(pk procKey) *call {
	return &call{proc: pk.proc, thread: pk.proc, f: history.FAcquire, key: pk.key, typ: k.typ.typ(), start: k.start, end: k.end, inv: k.inv, done: k.done}
}

// call is k, process and key pk's release, as a call again.
func (k priorRelease) call(pk procKey) *call {
	c := &call{proc: pk.proc, thread: pk.proc, f: history.FRelease, key: pk.key, typ: k.typ.typ(), start: k.start, end: k.end, inv: k.inv, done: k.done}
	if k.token != "" || k.notHeld {
		c.out = &history.Value{Token: k.token, NotHeld: k.notHeld}
	}
	return c
}

// before is k's latest granted acquire and latest acquire of the windows
// before, in invocation order, each once.
func (o *orphanCarry) before(k procKey) []*call {
	if o == nil {
		return nil
	}
	pc := o.calls[k]
	if pc == nil {
		return nil
	}
	var out []*call
	if pc.gotOne {
		out = append(out, pc.granted.call(k))
	}
	if pc.acquired && (!pc.gotOne || pc.acquire.inv != pc.granted.inv) {
		out = append(out, pc.acquire.call(k))
	}
	return out
}

// releasesOf is k's latest releases of the windows before.
func (o *orphanCarry) releasesOf(k procKey) []*call {
	if o == nil {
		return nil
	}
	pc := o.calls[k]
	if pc == nil {
		return nil
	}
	var out []*call
	for _, r := range pc.releases {
		out = append(out, r.call(k))
	}
	return out
}

// priorReleases bounds the releases carried per process and key: a
// watchdog renews the lease its client released last, or one of the few
// before (a stale renewal), never one from long ago.
const priorReleases = 8

func newOrphanCarry() *orphanCarry {
	return &orphanCarry{calls: map[procKey]*pkCarry{}}
}

// remember keeps p's latest acquire, granted acquire and release of each
// process and key for the next window (p.calls is in invocation order).
func (o *orphanCarry) remember(p *prepared) {
	for i := range p.calls {
		c := &p.calls[i]
		if c.f != history.FAcquire && c.f != history.FRelease {
			continue
		}
		k := procKey{c.proc, c.key}
		pc := o.calls[k]
		if pc == nil {
			pc = &pkCarry{}
			o.calls[k] = pc
		}
		if c.f == history.FAcquire {
			pc.acquire, pc.acquired = keepAcquire(c), true
			if c.typ == history.OK && (!pc.gotOne || pc.granted.done < c.done) {
				pc.granted, pc.gotOne = pc.acquire, true
			}
			continue
		}
		r := keepRelease(c)
		if r.token != "" && r.token == pc.token {
			r.token = pc.token // one copy of the lease's token
		}
		rs := slices.DeleteFunc(pc.releases, func(x priorRelease) bool { return x.token != "" && x.token == r.token })
		if len(rs) == priorReleases {
			rs = slices.Delete(rs, 0, 1)
		}
		if len(rs) == cap(rs) {
			// Grow by little: the carry holds this for every process
			// and key.
			rs = slices.Grow(rs, min(max(cap(rs), 1), priorReleases-len(rs)))
		}
		pc.releases = append(rs, r)
	}
}

// orphanViolation describes episode o: who let go and when, which renewal
// kept the key, what it cost the others, and the grant that followed it.
// In a window of a longer history the episode and all of its key after it
// lie in the last window (the key splits no more after an orphan renewal),
// so that grant and the acquires it refused are in p if there are any.
func orphanViolation(p *prepared, o orphan) Violation {
	v := Violation{Checker: Liveness, Kind: KindOrphan, Key: o.key, Processes: []int{o.proc},
		Start: o.start.t, End: min(o.end.t, max(p.last, o.start.t))}
	var why string
	switch {
	case o.letGo != nil:
		answer := "ok"
		switch {
		case !o.letGo.completed():
			answer = "no answer"
		case o.letGo.out != nil && o.letGo.out.NotHeld:
			answer = `"not held"`
		case o.letGo.typ != history.OK:
			answer = string(o.letGo.typ)
		}
		why = fmt.Sprintf("process %d released %s at %s (answered %s)", o.proc, o.key, secs(o.letGo.start), answer)
		v.Events = append(v.Events, o.letGo.inv)
		if o.lastAcquire != nil && o.lastAcquire.typ != history.OK {
			why += fmt.Sprintf(", after its acquire at %s was answered %s", secs(o.lastAcquire.start), o.lastAcquire.typ)
		}
	case o.lastAcquire != nil:
		why = fmt.Sprintf("process %d's acquire of %s at %s was answered %s", o.proc, o.key, secs(o.lastAcquire.start), o.lastAcquire.typ)
		v.Events = append(v.Events, o.lastAcquire.inv)
	default:
		why = fmt.Sprintf("process %d never held %s", o.proc, o.key)
	}
	// What it cost: acquires in progress during the episode that were
	// not granted, and the first grant after it.
	var refused, unknown int
	procs := map[int]bool{}
	var next *call
	for i := range p.calls {
		c := &p.calls[i]
		if c.f != history.FAcquire || c.key != o.key {
			continue
		}
		if c.typ == history.OK {
			if !c.completion().less(o.end) && (next == nil || c.completion().less(next.completion())) {
				next = c
			}
			continue
		}
		if !c.invoked().less(o.end) || !o.start.less(c.completion()) {
			continue
		}
		if c.typ == history.Fail {
			refused++
		} else {
			unknown++
		}
		procs[c.proc] = true
		if len(v.Events) < 6 {
			v.Events = append(v.Events, c.inv)
		}
	}
	var ps []int
	for q := range procs {
		ps = append(ps, q)
	}
	slices.Sort(ps)
	for _, q := range ps {
		if q != o.proc {
			v.Processes = append(v.Processes, q)
		}
	}
	who := fmt.Sprintf("its watchdog (thread %d)", o.thread)
	renewed := fmt.Sprintf("renewed it at %s", secs(o.start.t))
	if o.renewals > 1 {
		renewed += fmt.Sprintf(" (and began %d orphan claims in all)", o.renewals)
	}
	cost := "no acquire was attempted meanwhile"
	if n := refused + unknown; n > 0 {
		v.Fatal = true
		var parts []string
		if refused > 0 {
			parts = append(parts, fmt.Sprintf("%d refused", refused))
		}
		if unknown > 0 {
			parts = append(parts, fmt.Sprintf("%d with no definite answer", unknown))
		}
		cost = fmt.Sprintf("nobody could acquire it: %d acquires by %s were not granted (%s)", n, procText(ps), strings.Join(parts, ", "))
	}
	until := "past the end of the history"
	switch {
	case o.end.t <= p.last && next != nil:
		until = fmt.Sprintf("until %s, and the next grant was process %d's at %s", secs(o.end.t), next.proc, secs(next.end))
	case o.end.t <= p.last:
		until = fmt.Sprintf("until %s", secs(o.end.t))
	}
	v.Description = fmt.Sprintf("orphan lock: %s and %s %s; the lock held %s for nobody %s; %s",
		why, who, renewed, o.key, until, cost)
	return v
}

// procText names processes: "process 1" or "processes 0, 1".
func procText(ps []int) string {
	if len(ps) == 1 {
		return fmt.Sprintf("process %d", ps[0])
	}
	s := make([]string, len(ps))
	for i, q := range ps {
		s[i] = fmt.Sprint(q)
	}
	return "processes " + strings.Join(s, ", ")
}
