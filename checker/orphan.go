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
	if !renewedByWatchdog(p, byKey) {
		// No claim a watchdog began: no orphan (the common case, a lock
		// without one), and nothing to look up.
		return map[string][]orphan{}
	}
	ix := indexLettingGo(p, prior)
	out := map[string][]orphan{}
	for _, key := range claimKeys(p, byKey) {
		if eps := ix.episodes(key, byKey[key]); len(eps) > 0 {
			out[key] = eps
		}
	}
	return out
}

// lettingGo is what findOrphans looks up: each process's acquires and
// releases of each key, in invocation order, those of the windows before
// first; and every call by its completion's history index.
type lettingGo struct {
	acquires, releases map[procKey][]*call
	byDone             map[int64]*call
}

// indexLettingGo indexes p's calls, with the carry's of the windows
// before (prior, may be nil).
func indexLettingGo(p *prepared, prior *orphanCarry) *lettingGo {
	ix := &lettingGo{acquires: map[procKey][]*call{}, releases: map[procKey][]*call{}, byDone: map[int64]*call{}}
	for i := range p.calls {
		c := &p.calls[i]
		k := procKey{c.proc, c.key}
		if c.completed() {
			ix.byDone[c.done] = c
		}
		if c.f != history.FAcquire && c.f != history.FRelease && c.f != history.FRenew {
			continue
		}
		if _, seen := ix.acquires[k]; !seen {
			// The windows before stand in front, for the processes and
			// keys this window grants or releases only (a claim is
			// either's): the others' carry is not read, so that a
			// window's cost does not grow with the keys before it. A
			// present nil says it was looked up.
			ix.acquires[k] = prior.before(k)
			if rs := prior.releasesOf(k); len(rs) > 0 {
				ix.releases[k] = rs
			}
		}
		switch {
		case c.f == history.FAcquire:
			ix.acquires[k] = append(ix.acquires[k], c)
		case c.f == history.FRelease:
			ix.releases[k] = append(ix.releases[k], c)
		}
	}
	return ix
}

// lastInvokedBefore is the last of cs (in invocation order) invoked before
// at, or nil.
func lastInvokedBefore(cs []*call, at instant) *call {
	var out *call
	for _, c := range cs {
		if !c.invoked().less(at) {
			break
		}
		out = c
	}
	return out
}

// episodes are the orphan episodes among key's claims cs: consecutive
// orphan claims of one process are one episode, which another process's
// claim or one of its own that is not an orphan ends, and so does its
// next granted acquire.
func (ix *lettingGo) episodes(key string, cs []claim) []orphan {
	var out []orphan
	var cur *orphan
	flush := func() {
		if cur != nil {
			out = append(out, *cur)
			cur = nil
		}
	}
	for i := range cs {
		c := &cs[i]
		if c.renewer < 0 || !c.byRenew {
			if cur != nil && c.proc == cur.proc {
				flush()
			}
			continue
		}
		k := procKey{c.proc, key}
		rel, holds := ix.holding(k, c)
		if holds {
			continue // the process holds it: a late renewal of its own lease
		}
		end := ix.orphanEnd(k, c)
		if cur != nil && cur.proc != c.proc {
			flush()
		}
		if cur == nil {
			cur = ix.newEpisode(k, c, rel)
		}
		cur.end = end
		cur.renewals++
		if end != c.end {
			flush()
		}
	}
	flush()
	return out
}

// holding reports whether process and key k held the key when renewal
// claim c began: its latest granted acquire completed before the claim,
// after its latest release invoked before it (rel, nil if none).
func (ix *lettingGo) holding(k procKey, c *claim) (rel *call, holds bool) {
	var granted *call // latest acquire ok completed before the claim
	for _, a := range ix.acquires[k] {
		if !a.invoked().less(c.start) {
			break
		}
		if a.typ == history.OK && a.completion().less(c.start) {
			granted = a
		}
	}
	rel = lastInvokedBefore(ix.releases[k], c.start)
	return rel, granted != nil && (rel == nil || rel.inv < granted.done)
}

// orphanEnd is where orphan claim c ends: at the process's next granted
// acquire, when the key is its own again, or at the claim's end.
func (ix *lettingGo) orphanEnd(k procKey, c *claim) instant {
	end := c.end
	for _, a := range ix.acquires[k] {
		if a.typ == history.OK && c.start.less(a.completion()) && a.completion().less(end) {
			return a.completion()
		}
	}
	return end
}

// newEpisode begins an orphan episode at claim c of process and key k,
// whose latest release before it was rel: the release that let go of the
// orphan's lease is the one of its token, if the client released it by
// its token, else rel; and the process's latest acquire before that.
func (ix *lettingGo) newEpisode(k procKey, c *claim, rel *call) *orphan {
	if r := ix.byDone[c.grant]; r != nil && r.token() != "" {
		for _, x := range ix.releases[k] {
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
		acq = lastInvokedBefore(ix.acquires[k], rel.invoked())
	} else {
		acq = lastInvokedBefore(ix.acquires[k], c.start)
	}
	return &orphan{proc: c.proc, thread: c.renewer, key: k.key, start: c.start, letGo: rel, lastAcquire: acq}
}

// renewedByWatchdog reports whether a renewer thread's renew began one of
// the claims, the only ones findOrphans can find orphaned.
func renewedByWatchdog(p *prepared, byKey map[string][]claim) bool {
	found := false
	eachClaims(p, byKey, func(cs []claim) {
		for i := range cs {
			found = found || cs[i].renewer >= 0 && cs[i].byRenew
		}
	})
	return found
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
	calls *pkStore
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
	pc := o.calls.get(k)
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
	pc := o.calls.get(k)
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

func newOrphanCarry(dir string) *orphanCarry {
	return &orphanCarry{calls: newPKStore(dir)}
}

// keep keeps in pc, the entry of c's process and key, what the orphan
// carry needs of c, an acquire or a release of the window (see
// carryClaims): pc's latest acquire, granted acquire and releases, for
// the windows after. c comes after the calls of its process and key kept
// before it (in invocation order).
func (pc *pkCarry) keep(c *call) {
	if c.f == history.FAcquire {
		pc.acquire, pc.acquired = keepAcquire(c), true
		if c.typ == history.OK && (!pc.gotOne || pc.granted.done < c.done) {
			pc.granted, pc.gotOne = pc.acquire, true
		}
		return
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

// orphanViolation describes episode o: who let go and when, which renewal
// kept the key, what it cost the others, and the grant that followed it.
// In a window of a longer history the episode and all of its key after it
// lie in the last window (the key splits no more after an orphan renewal),
// so that grant and the acquires it refused are in p if there are any.
func orphanViolation(p *prepared, o orphan) Violation {
	v := Violation{Checker: Liveness, Kind: KindOrphan, Key: o.key, Processes: []int{o.proc},
		Start: o.start.t, End: min(o.end.t, max(p.last, o.start.t))}
	why, ev := o.letGoText()
	v.Events = append(v.Events, ev...)
	cost := orphanCostOf(p, o, 6-len(v.Events))
	v.Events = append(v.Events, cost.events...)
	for _, q := range cost.procs {
		if q != o.proc {
			v.Processes = append(v.Processes, q)
		}
	}
	v.Fatal = cost.refused+cost.unknown > 0
	renewed := fmt.Sprintf("renewed it at %s", secs(o.start.t))
	if o.renewals > 1 {
		renewed += fmt.Sprintf(" (and began %d orphan claims in all)", o.renewals)
	}
	until := "past the end of the history"
	switch {
	case o.end.t <= p.last && cost.next != nil:
		until = fmt.Sprintf("until %s, and the next grant was process %d's at %s", secs(o.end.t), cost.next.proc, secs(cost.next.end))
	case o.end.t <= p.last:
		until = fmt.Sprintf("until %s", secs(o.end.t))
	}
	v.Description = fmt.Sprintf("orphan lock: %s and its watchdog (thread %d) %s; the lock held %s for nobody %s; %s",
		why, o.thread, renewed, o.key, until, cost.text())
	return v
}

// letGoText says how o's process let go of the key: its release and how
// it was answered, or its acquire that was not granted, or that it never
// held it; and the event that shows it, if any.
func (o orphan) letGoText() (string, []int64) {
	switch {
	case o.letGo != nil:
		answer := "ok"
		switch {
		case !o.letGo.completed():
			answer = "no answer" // never so: a renewal after a release that never completed is absorbed by it (see claim)
		case o.letGo.out != nil && o.letGo.out.NotHeld:
			answer = `"not held"`
		case o.letGo.typ != history.OK:
			answer = string(o.letGo.typ)
		}
		why := fmt.Sprintf("process %d released %s at %s (answered %s)", o.proc, o.key, secs(o.letGo.start), answer)
		if o.lastAcquire != nil && o.lastAcquire.typ != history.OK {
			why += fmt.Sprintf(", after its acquire at %s was answered %s", secs(o.lastAcquire.start), o.lastAcquire.typ)
		}
		return why, []int64{o.letGo.inv}
	case o.lastAcquire != nil:
		return fmt.Sprintf("process %d's acquire of %s at %s was answered %s", o.proc, o.key, secs(o.lastAcquire.start), o.lastAcquire.typ),
			[]int64{o.lastAcquire.inv}
	}
	return fmt.Sprintf("process %d never held %s", o.proc, o.key), nil
}

// orphanCost is what an orphan episode cost the others: the acquires in
// progress during it that were not granted (refused, or with no definite
// answer), their processes, the first few's invocations, and the first
// grant after it.
type orphanCost struct {
	refused, unknown int
	procs            []int // sorted
	events           []int64
	next             *call
}

// orphanCostOf finds what episode o cost, keeping at most room of the
// refused acquires' invocations.
func orphanCostOf(p *prepared, o orphan, room int) orphanCost {
	var cost orphanCost
	procs := map[int]bool{}
	for i := range p.calls {
		c := &p.calls[i]
		if c.f != history.FAcquire || c.key != o.key {
			continue
		}
		if c.typ == history.OK {
			if !c.completion().less(o.end) && (cost.next == nil || c.completion().less(cost.next.completion())) {
				cost.next = c
			}
			continue
		}
		if !c.invoked().less(o.end) || !o.start.less(c.completion()) {
			continue
		}
		if c.typ == history.Fail {
			cost.refused++
		} else {
			cost.unknown++
		}
		procs[c.proc] = true
		if len(cost.events) < room {
			cost.events = append(cost.events, c.inv)
		}
	}
	for q := range procs {
		cost.procs = append(cost.procs, q)
	}
	slices.Sort(cost.procs)
	return cost
}

// text says what the episode cost, for its description.
func (c orphanCost) text() string {
	n := c.refused + c.unknown
	if n == 0 {
		return "no acquire was attempted meanwhile"
	}
	var parts []string
	if c.refused > 0 {
		parts = append(parts, fmt.Sprintf("%d refused", c.refused))
	}
	if c.unknown > 0 {
		parts = append(parts, fmt.Sprintf("%d with no definite answer", c.unknown))
	}
	return fmt.Sprintf("nobody could acquire it: %d acquires by %s were not granted (%s)", n, procText(c.procs), strings.Join(parts, ", "))
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
