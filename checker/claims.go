package checker

import (
	"cmp"
	"container/heap"
	"fmt"
	"reflect"
	"slices"
	"sort"

	"github.com/lockharness/lockharness/history"
)

// A claim is what the lock promised one process: "you hold key from start
// until end". It is the precise definition the lease-mutex model encodes
// (see LeaseStep), so both must change together; this comment is the spec.
//
// Grants. A grant (acquire ok or renew ok) returned at time g with deadline
// D promises [g, D). A grant received while the current claim is still live
// (its deadline is after g) continues it, until the later of the two
// deadlines: a renewal extends a promise, it never takes back what an
// earlier grant promised (and so one process's concurrent grants, say a
// watchdog's renew and its client's acquire, mean the same in either
// order). A grant received after the current claim lapsed starts a new
// claim. A grant whose deadline is not after its own return (D ≤ g)
// promises nothing and changes nothing. A renew made by a renewer thread (a
// watchdog, history.Op's Owner) is its owner's: it continues or starts the
// owner's claim.
//
// Releases. A release invocation (whatever its outcome) ends the process's
// claim: the client has left its critical section. A crash does not: a
// crashed client's claim ends at its deadline, never without one.
//
// A renew concurrent with its own process's release on the same key (it
// completes after the release's invocation and was invoked before the
// release's completion, whichever of the two was invoked or answered
// first, whatever their outcomes) is absorbed by the release: it grants
// nothing and is no evidence of anything. The lock serialises the two; the
// history cannot say in which order, and "renewal first, then the release
// removed it" is always possible, so the renewal can never have created a
// claim past that release. A renew invoked after the release completed is
// an ordinary renew: if it succeeds, the lock granted the key again.
//
// Lost leases. A release or renew by p that fails with a definite "not
// held" (history.Value.NotHeld; never info, never a refused command) is the
// lock's answer that p's lease is gone, given at some instant between its
// invocation and its completion. It breaks the promise when p's claim was
// certainly still live at the latest instant the answer can have been
// given, its completion: for a release, the claim it ended at its
// invocation has a deadline after the completion; for a renew, a claim that
// began before the renew's invocation lasts past its completion. (A lease
// whose deadline fell inside the call may have legally expired before the
// answer, so that is no evidence.) An answer about an older lease of p's
// (its token is not that of p's latest acquire) is no evidence either.
type claim struct {
	proc     int
	key      string
	start    instant // the grant that started it
	end      instant // min(release invoke, deadline in force); forever = unbounded
	deadline int64   // the deadline in force at the end; never = no expiry
	fence    int64
	grant    int64 // history index of the grant that started it
	byRenew  bool  // started by a renew after the process's claim had lapsed
	released int64 // history index of the release invoke that ended it, -1
	renewer  int   // the renewer thread whose renew started it, or -1
}

// claimEvent is a grant or a release invocation, in history order.
type claimEvent struct {
	at       instant
	grant    bool
	renew    bool
	thread   int
	deadline int64
	fence    int64
}

// buildClaims returns every key's claims, sorted by start. It goes key by
// key (each key's calls, p.keyCalls), with the key's few processes in a
// list (keyEvents), rather than through a map of every process and key's
// events, which a window of thousands of fresh keys filled at a cost
// greater than building the claims.
func buildClaims(p *prepared) map[string][]claim {
	out := make(map[string][]claim, len(p.keys))
	var ke keyEvents
	// Every key's claims are cut from one array, made at the size of
	// the grants (a claim begins at a grant; were there more, append
	// would move on to a larger array, and the keys before keep theirs):
	// a window of fresh keys made a slice, grown, per key.
	arena := make([]claim, 0, grants(p))
	var keys []string // of out, in windowKeys' order
	wks := windowKeys(p)
	for i := range wks {
		wk := &wks[i]
		ke.reset()
		for _, i := range wk.calls {
			ke.add(&p.calls[i])
		}
		start := len(arena)
		for _, pe := range ke.procs {
			arena = appendClaims(arena, procKey{pe.proc, wk.key}, pe.evs)
		}
		cs := arena[start:len(arena):len(arena)]
		if len(cs) == 0 {
			continue // a key without claims has no entry
		}
		slices.SortFunc(cs, func(a, b claim) int {
			return cmp.Compare(a.grant, b.grant) // index order is start order (and no two claims have one grant)
		})
		out[wk.key], wk.claims = cs, cs
		keys = append(keys, wk.key)
	}
	p.claims, p.claimOrder = out, keys
	return out
}

// grants is how many of p's calls are grants (keyEvents.add): a bound on
// the claims they make.
func grants(p *prepared) int {
	n := 0
	for i := range p.calls {
		c := &p.calls[i]
		if (c.f == history.FAcquire || c.f == history.FRenew) && c.typ == history.OK && !c.absorbed {
			n++
		}
	}
	return n
}

// keyEvents are one key's claim events, per process: its grants (acquires
// and renews ok, not absorbed) and release invocations. The lists are
// kept from one key to the next (reset).
type keyEvents struct{ procs []procEvents }

type procEvents struct {
	proc int
	evs  []claimEvent
}

func (ke *keyEvents) reset() {
	for i := range ke.procs {
		ke.procs[i].evs = ke.procs[i].evs[:0]
	}
	ke.procs = ke.procs[:0]
}

// add adds call c's event, if it is one.
func (ke *keyEvents) add(c *call) {
	var e claimEvent
	switch {
	case (c.f == history.FAcquire || c.f == history.FRenew) && c.typ == history.OK && !c.absorbed:
		d, fence := int64(never), int64(0)
		if c.out != nil {
			if c.out.Deadline != 0 {
				d = c.out.Deadline
			}
			fence = c.out.Fence
		}
		e = claimEvent{at: instant{c.end, c.done}, grant: true, renew: c.f == history.FRenew, thread: c.thread, deadline: d, fence: fence}
	case c.f == history.FRelease:
		e = claimEvent{at: instant{c.start, c.inv}}
	default:
		return
	}
	pe := ke.of(c.proc)
	pe.evs = append(pe.evs, e)
}

// of is proc's list, made if need be (reusing a list of a key before).
func (ke *keyEvents) of(proc int) *procEvents {
	for i := range ke.procs {
		if ke.procs[i].proc == proc {
			return &ke.procs[i]
		}
	}
	if n := len(ke.procs); n < cap(ke.procs) {
		ke.procs = ke.procs[:n+1]
		ke.procs[n].proc = proc
	} else {
		ke.procs = append(ke.procs, procEvents{proc: proc})
	}
	return &ke.procs[len(ke.procs)-1]
}

// appendClaims appends to out the claims process and key k's events make
// (see claim), in history order: a release ends the claim in force, a
// grant continues a live claim or starts a new one. (Appending to the
// key's claims, not making the process's first, saves a copy of every
// claim.)
func appendClaims(out []claim, k procKey, evs []claimEvent) []claim {
	slices.SortFunc(evs, func(a, b claimEvent) int { return cmp.Compare(a.at.i, b.at.i) })
	var cur claim // in force while live (a value: a claim made on the heap for every claim was most of a window's claims' memory)
	live := false
	closeAt := func(t instant, rel int64) {
		cur.end = minInstant(deadlineAt(cur.deadline), t)
		cur.released = rel
		out = append(out, cur)
		live = false
	}
	for _, e := range evs {
		if !e.grant {
			if live {
				rel := e.at.i
				if !e.at.less(deadlineAt(cur.deadline)) {
					rel = -1 // it had already expired
				}
				closeAt(e.at, rel)
			}
			continue
		}
		g := e.at
		empty := !g.less(deadlineAt(e.deadline))
		if live && g.less(deadlineAt(cur.deadline)) {
			// Live: the promise goes on, until the later deadline.
			if !empty {
				cur.deadline = max(cur.deadline, e.deadline)
				if e.fence > 0 {
					cur.fence = e.fence
				}
			}
			continue
		}
		if live {
			closeAt(g, -1) // it lapsed at its deadline
		}
		if !empty {
			cur = claim{proc: k.proc, key: k.key, start: g, deadline: e.deadline, fence: e.fence, grant: g.i, byRenew: e.renew, released: -1, renewer: -1}
			live = true
			if e.renew && e.thread != k.proc {
				cur.renewer = e.thread
			}
		}
	}
	if live {
		cur.end = deadlineAt(cur.deadline)
		out = append(out, cur)
	}
	return out
}

// holds converts claims to the exported form, for plots.
func holds(p *prepared, byKey map[string][]claim) []Hold {
	n := 0
	for _, cs := range byKey {
		n += len(cs)
	}
	out := make([]Hold, 0, n) // at its size: a window of many keys grew it a dozen times
	eachClaims(p, byKey, func(cs []claim) {
		for _, c := range cs {
			h := Hold{Process: c.proc, Key: c.key, Start: c.start.t, End: c.end.t, Fence: c.fence, Acquire: c.grant}
			if c.deadline != never {
				h.Deadline = c.deadline
			}
			if c.end.t > p.last {
				h.End = -1
			}
			out = append(out, h)
		}
	})
	slices.SortStableFunc(out, func(a, b Hold) int { return cmp.Compare(a.Start, b.Start) })
	return out
}

// eachClaims calls f with the claims of each key of byKey that has some,
// in claimKeys' order. For the map buildClaims made of p they are taken
// from windowKeys, beside each key, rather than looked up by key again (a
// window of fresh keys hashed thousands of them for each step that goes
// through its claims).
func eachClaims(p *prepared, byKey map[string][]claim, f func(cs []claim)) {
	if claimsOf(p, byKey) {
		for _, wk := range windowKeys(p) {
			if len(wk.claims) > 0 {
				f(wk.claims)
			}
		}
		return
	}
	for _, k := range claimKeys(p, byKey) {
		f(byKey[k])
	}
}

// claimKeys is sortedKeys(byKey) for a map by key of what p's calls
// give (claims, acquires): the keys of p's calls (p.keys, sorted once by
// prepare) that byKey holds, in p.keys' order, which saves sorting a
// window's keys again for each of the window's uses (a window of a fresh
// key per cycle has thousands). A claim's or a call's key is its call's,
// so every key of byKey is in p.keys; were one not (a keyless call), the
// count would differ and byKey is sorted as before: the same keys in the
// same order either way.
//
// For the map buildClaims made of p's claims it is the keys buildClaims
// noted, in windowKeys' order, which is claimKeys' ("" first, then p.keys,
// sorted), made once for the window's several uses (its cap is its
// length: a caller that appends gets a copy).
func claimKeys[V any](p *prepared, byKey map[string]V) []string {
	if p == nil {
		return sortedKeys(byKey)
	}
	if p.claims != nil && reflect.ValueOf(byKey).UnsafePointer() == reflect.ValueOf(p.claims).UnsafePointer() {
		return p.claimOrder[:len(p.claimOrder):len(p.claimOrder)]
	}
	ks := make([]string, 0, len(byKey))
	for _, k := range p.keys {
		if _, ok := byKey[k]; ok {
			ks = append(ks, k)
		}
	}
	if len(ks) != len(byKey) {
		return sortedKeys(byKey)
	}
	return ks
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// endHeap is a heap of claims ordered by end; less decides min or max.
type endHeap struct {
	cs  []*claim
	max bool
}

func (h *endHeap) Len() int { return len(h.cs) }
func (h *endHeap) Less(i, j int) bool {
	if h.max {
		return h.cs[j].end.less(h.cs[i].end)
	}
	return h.cs[i].end.less(h.cs[j].end)
}
func (h *endHeap) Swap(i, j int) { h.cs[i], h.cs[j] = h.cs[j], h.cs[i] }
func (h *endHeap) Push(x any)    { h.cs = append(h.cs, x.(*claim)) }
func (h *endHeap) Pop() any {
	x := h.cs[len(h.cs)-1]
	h.cs = h.cs[:len(h.cs)-1]
	return x
}

// maxReported bounds how many violations of one kind are spelled out per
// key; the stats still count them all.
const maxReported = 200

// promiseFindings is what the overlap analysis found.
type promiseFindings struct {
	violations      []Violation
	overlapping     int // claims that began while another process's claim was live
	foreignReleases int
	lostLeases      int
}

// analyseClaims finds overlapping claims, foreign releases and lost leases
// in O(n log n): a sweep over claims by start with a heap of live claims,
// and a binary search among the claims of the process of each "not held".
func analyseClaims(p *prepared, byKey map[string][]claim) promiseFindings {
	return analyseClaimsCapped(p, byKey, caps{}, nil)
}

// analyseClaimsCapped is analyseClaims that spells out no more findings
// per key and kind than maxReported, counting those spelled out in rep
// (which carries the counts from one window of a history to the next).
// open is, per key, the claims of the windows before that are live
// through this one (carry.open): they overlap its claims and hold the key
// through its releases.
func analyseClaimsCapped(p *prepared, byKey map[string][]claim, rep caps, open map[string][]claim) promiseFindings {
	var f promiseFindings
	lost := map[string][]*call{}
	for i := range p.calls {
		if c := &p.calls[i]; c.lost {
			lost[c.key] = append(lost[c.key], c)
		}
	}
	keys := claimKeys(p, byKey)
	added := false
	for k := range open {
		if _, claims := byKey[k]; !claims && len(releasesOK(nil, p, k)) > 0 {
			keys = append(keys, k) // releases inside a carried claim
			added = true
		}
	}
	if !added && claimsOf(p, byKey) {
		// keys are the window's keys with claims, in windowKeys' order,
		// which is sorted ("" first, then p.keys): each key's claims
		// and calls are beside it there, where looking them up by key
		// (twice a key), and asking whether keys are sorted, cost a
		// window of fresh keys more than the analysis.
		var rels []*call
		for _, wk := range windowKeys(p) {
			if len(wk.claims) > 0 {
				rels = releasesIn(rels[:0], p, wk.key, wk.calls)
				f.analyseKey(p, wk.key, wk.claims, open[wk.key], rels, lost[wk.key], rep)
			}
		}
		return f
	}
	if added || !slices.IsSorted(keys) {
		keys = slices.Clone(keys) // not claimKeys' own
		slices.Sort(keys)
	}
	var rels []*call // each key's releases ok, in one array
	for _, k := range keys {
		rels = releasesOK(rels[:0], p, k)
		f.analyseKey(p, k, byKey[k], open[k], rels, lost[k], rep)
	}
	return f
}

// analyseKey is analyseClaimsCapped's findings of key k: cs are its
// claims, carried those of the windows before live through this one,
// rels its releases ok and lost its lost-lease evidence.
func (f *promiseFindings) analyseKey(p *prepared, k string, cs, carried []claim, rels, lost []*call, rep caps) {
	f.findOverlaps(p, k, cs, carried, rep)
	f.findForeignReleases(k, cs, carried, rels, rep)
	f.findLostLeases(k, cs, lost, rep)
}

// claimsOf reports whether byKey is the map of claims buildClaims made
// of p (whose keys' claims windowKeys holds too).
func claimsOf(p *prepared, byKey map[string][]claim) bool {
	return p != nil && p.claims != nil && reflect.ValueOf(byKey).UnsafePointer() == reflect.ValueOf(p.claims).UnsafePointer()
}

// releasesOK is dst with key k's releases ok in p appended, in p.calls'
// order: from the key's calls (p.keyCalls), not a map of every key's
// releases, which a window of thousands of keys filled at a cost greater
// than the analysis (a keyless call has no list there: its key's are
// looked for in all). A caller going key by key passes the same array
// for each (a window of fresh keys made a slice for each key).
func releasesOK(dst []*call, p *prepared, k string) []*call {
	if is := p.callsOf(k); is != nil || k != "" {
		return releasesIn(dst, p, k, is)
	}
	for i := range p.calls {
		if c := &p.calls[i]; c.f == history.FRelease && c.typ == history.OK && c.key == k {
			dst = append(dst, c)
		}
	}
	return dst
}

// releasesIn is dst with key k's releases ok among calls (positions in
// p.calls, in order) appended.
func releasesIn(dst []*call, p *prepared, k string, calls []int) []*call {
	for _, i := range calls {
		if c := &p.calls[i]; c.f == history.FRelease && c.typ == history.OK && c.key == k {
			dst = append(dst, c)
		}
	}
	return dst
}

// findOverlaps finds key k's claims (cs, sorted by start) that began
// while another process's claim was live: a sweep with the live claims in
// a min-heap by end, which holds from the start the claims live through
// the window (carried, which never end).
func (f *promiseFindings) findOverlaps(p *prepared, k string, cs, carried []claim, rep caps) {
	if len(cs)+len(carried) < 2 {
		return // no two claims, no overlap (nor anything to count)
	}
	live := &endHeap{}
	for i := range carried {
		heap.Push(live, &carried[i])
	}
	reported := rep[capKey{"overlap", k}]
	for i := range cs {
		c := &cs[i]
		for live.Len() > 0 && !c.start.less(live.cs[0].end) {
			heap.Pop(live)
		}
		if live.Len() > 0 {
			f.overlapping++
			for _, a := range live.cs {
				if a.proc == c.proc || reported >= maxReported {
					continue
				}
				reported++
				f.violations = append(f.violations, overlapViolation(p, a, c))
			}
		}
		heap.Push(live, c)
	}
	rep.set(capKey{"overlap", k}, reported)
}

// findForeignReleases finds the releases ok of key k (rels) whose whole
// interval lies inside another process's claim: the releases by
// invocation, swept with the claims that began before each in a max-heap
// by end, which holds from the start the claims live through the window
// (carried, which never end).
func (f *promiseFindings) findForeignReleases(k string, cs, carried []claim, rels []*call, rep caps) {
	if len(rels) == 0 || len(carried) == 0 && oneProcess(cs, rels) {
		return // nothing to find (a holder is another process's), nor to count
	}
	byInv := func(a, b *call) int { return cmp.Compare(a.inv, b.inv) }
	if !slices.IsSortedFunc(rels, byInv) {
		slices.SortStableFunc(rels, byInv)
	}
	open := &endHeap{max: true}
	for i := range carried {
		heap.Push(open, &carried[i])
	}
	next := 0
	reported := rep[capKey{"foreign", k}]
	for _, r := range rels {
		ri := instant{r.start, r.inv}
		for next < len(cs) && cs[next].start.less(ri) {
			heap.Push(open, &cs[next])
			next++
		}
		for open.Len() > 0 && !ri.less(open.cs[0].end) {
			heap.Pop(open)
		}
		holder := foreignHolder(open, r)
		if holder == nil {
			continue
		}
		f.foreignReleases++
		if reported < maxReported {
			reported++
			f.violations = append(f.violations, Violation{
				Checker: "lock-promise", Kind: KindForeignRelease, Key: k,
				Processes: []int{r.proc, holder.proc}, Start: r.start, End: r.end,
				Events: []int64{r.inv, r.done, holder.grant}, Fatal: true,
				Description: foreignReleaseText(r, k, holder, endsOwn(cs, r)),
			})
		}
	}
	rep.set(capKey{"foreign", k}, reported)
}

// oneProcess reports whether the claims cs and the releases rels (not
// both empty) are all one process's.
func oneProcess(cs []claim, rels []*call) bool {
	var p int
	if len(cs) > 0 {
		p = cs[0].proc
	} else {
		p = rels[0].proc
	}
	return !slices.ContainsFunc(cs, func(c claim) bool { return c.proc != p }) &&
		!slices.ContainsFunc(rels, func(r *call) bool { return r.proc != p })
}

// endsOwn reports whether release r ended a claim of its own process
// among cs. Such a release, while another held the key too, is still a
// release inside the other's claim, but whose lock it removed the history
// cannot say (a DEL without a token removed the other's key; a server
// that had dropped the releaser's lock, a killed session, freed the
// releaser's own): the words say both held.
func endsOwn(cs []claim, r *call) bool {
	return slices.ContainsFunc(cs, func(c claim) bool { return c.released >= 0 && c.released == r.inv })
}

// foreignHolder is the claim of another process than release r's, among
// the open claims (begun before r's invocation, live at it), that lasts
// past r's completion, or nil: the latest-ending, when there are several.
func foreignHolder(open *endHeap, r *call) *claim {
	rr := instant{r.end, r.done}
	if open.Len() == 0 || !rr.less(open.cs[0].end) {
		return nil
	}
	if top := open.cs[0]; top.proc != r.proc {
		return top
	}
	// r's own claims end at its release invoke, so this does not happen;
	// scan rather than assume.
	var holder *claim
	for _, a := range open.cs {
		if a.proc != r.proc && rr.less(a.end) && (holder == nil || holder.end.less(a.end)) {
			holder = a
		}
	}
	return holder
}

// findLostLeases judges each "not held" answer about key k (lost) against
// its process's claim that began last before it was invoked: a lost
// lease when that claim was certainly live at the answer (see claim).
func (f *promiseFindings) findLostLeases(k string, cs []claim, lost []*call, rep caps) {
	if len(lost) == 0 {
		return // nothing to judge, nor to count
	}
	byProc := map[int][]*claim{}
	for i := range cs {
		byProc[cs[i].proc] = append(byProc[cs[i].proc], &cs[i])
	}
	reported := rep[capKey{"lost", k}]
	for _, c := range lost {
		mine := byProc[c.proc]
		j := sort.Search(len(mine), func(j int) bool { return !mine[j].start.less(c.invoked()) }) - 1
		if j < 0 {
			continue
		}
		cl := mine[j]
		var live bool
		if c.f == history.FRelease {
			live = cl.released == c.inv && c.completion().less(deadlineAt(cl.deadline))
		} else {
			live = c.completion().less(cl.end)
		}
		if !live {
			continue
		}
		f.lostLeases++
		if reported < maxReported {
			reported++
			f.violations = append(f.violations, lostLeaseViolation(c, cl))
		}
	}
	rep.set(capKey{"lost", k}, reported)
}

// lostLeaseViolation says that the lock answered c with "not held" while
// cl, c's process's claim, was certainly live.
func lostLeaseViolation(c *call, cl *claim) Violation {
	v := Violation{
		Checker: "lock-promise", Kind: KindLostLease, Key: c.key,
		Processes: []int{c.proc}, Start: c.start, End: c.end,
		Events: []int64{c.inv, c.done, cl.grant}, Fatal: true,
	}
	who := fmt.Sprintf("its %s", c.f)
	if c.thread != c.proc {
		who = fmt.Sprintf("its watchdog's renew (thread %d)", c.thread)
	}
	early := "a lease without expiry"
	switch {
	case c.f == history.FRenew && cl.end != forever:
		// The claim was live through its end; the deadline in force at
		// the answer is later than the answer, whatever came after.
		v.End = cl.end.t
		early = fmt.Sprintf("while its claim was live until at least %s (%s later)", secs(cl.end.t), dur(cl.end.t-c.end))
	case cl.deadline != never:
		v.End = cl.deadline
		early = fmt.Sprintf("%s before its deadline at %s", dur(cl.deadline-c.end), secs(cl.deadline))
	}
	v.Description = fmt.Sprintf("process %d's lease on %s (granted at %s) was gone at %s, %s: %s, invoked at %s, was answered \"not held\"",
		c.proc, c.key, secs(cl.start.t), secs(c.end), early, who, secs(c.start))
	return v
}

func overlapViolation(p *prepared, a, c *claim) Violation {
	end := minInstant(a.end, c.end).t
	shown := min(end, max(p.last, c.start.t))
	v := Violation{
		Checker: "lock-promise", Kind: KindOverlap, Key: c.key,
		Processes: []int{a.proc, c.proc}, Start: c.start.t, End: shown,
		Events: []int64{a.grant, c.grant}, Fatal: true,
	}
	if shown < end {
		v.clippedFrom = end // a window's end; compose shows it to the history's
	}
	window := fmt.Sprintf("from %s to %s", secs(c.start.t), secs(end))
	if end == never {
		window = fmt.Sprintf("from %s on (neither claim ever ended)", secs(c.start.t))
	}
	if c.byRenew {
		v.Kind = KindForeignRelease
		who := fmt.Sprintf("process %d", c.proc)
		if c.renewer >= 0 {
			who = fmt.Sprintf("process %d's watchdog (thread %d)", c.proc, c.renewer)
		}
		v.Description = fmt.Sprintf("%s renewed %s at %s, after process %d's own claim had ended, while process %d held it (from %s %s): it extended someone else's lock, and both held it %s",
			who, c.key, secs(c.start.t), c.proc, a.proc, secs(a.start.t), untilText(a), window)
		return v
	}
	v.Description = fmt.Sprintf("process %d and process %d both held %s %s (process %d held it from %s %s; process %d acquired it at %s)",
		a.proc, c.proc, c.key, window, a.proc, secs(a.start.t), untilText(a), c.proc, secs(c.start.t))
	return v
}

// untilText says how a claim ends, for sentences.
func untilText(c *claim) string {
	switch {
	case c.end == forever:
		return "with no expiry, never released"
	case c.released >= 0:
		return fmt.Sprintf("until its release at %s", secs(c.end.t))
	default:
		return fmt.Sprintf("until its lease ran out at %s", secs(c.end.t))
	}
}

// foreignReleaseText describes r, a release of k inside holder's claim;
// own when r also ended a claim of its own process.
func foreignReleaseText(r *call, k string, holder *claim, own bool) string {
	if own {
		return fmt.Sprintf("process %d released %s (from %s to %s) while process %d also held it (from %s %s): with both holding, the release took the lock from under one of them",
			r.proc, k, secs(r.start), secs(r.end), holder.proc, secs(holder.start.t), untilText(holder))
	}
	return fmt.Sprintf("process %d released %s (from %s to %s) while process %d held it (from %s %s): it removed someone else's lock",
		r.proc, k, secs(r.start), secs(r.end), holder.proc, secs(holder.start.t), untilText(holder))
}
