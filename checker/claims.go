package checker

import (
	"cmp"
	"container/heap"
	"fmt"
	"slices"
	"sort"

	"github.com/lockharness/lockharness/history"
)

// A claim is what the lock promised one process: "you hold key from start
// until end". It is the precise definition the lease-mutex model encodes
// (see LeaseMutexModel), so both must change together.
//
// A grant (acquire ok or renew ok) returned at time g with deadline D
// promises [g, D). The promise in force is always the latest one the process
// received: a grant received while the current one is still live (its
// deadline ≥ g) continues the claim, now until D; a grant received after the
// current one lapsed starts a new claim; a grant whose deadline is not after
// its own return (D ≤ g) promises nothing and ends the current claim at g.
// A release invocation (whatever its outcome) ends the process's claim: the
// client has left its critical section. A renew invoked before that release
// invocation but answered after it (a watchdog's renewal racing the
// client's release) was overtaken by the release and promises nothing: the
// lock serialises the two, renewal first. A crash does not: a crashed client's
// claim ends at its deadline, never without one.
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
}

// claimEvent is a grant or a release invocation, in history order.
type claimEvent struct {
	at       instant
	invoked  instant // for grants: when the acquire or renew was invoked
	grant    bool
	renew    bool
	deadline int64
	fence    int64
}

// buildClaims returns every key's claims, sorted by start.
func buildClaims(p *prepared) map[string][]claim {
	type pk struct {
		proc int
		key  string
	}
	events := map[pk][]claimEvent{}
	for i := range p.calls {
		c := &p.calls[i]
		k := pk{c.proc, c.key}
		switch {
		case (c.f == history.FAcquire || c.f == history.FRenew) && c.typ == history.OK:
			d, fence := int64(never), int64(0)
			if c.out != nil {
				if c.out.Deadline != 0 {
					d = c.out.Deadline
				}
				fence = c.out.Fence
			}
			events[k] = append(events[k], claimEvent{at: instant{c.end, c.done}, invoked: instant{c.start, c.inv}, grant: true, renew: c.f == history.FRenew, deadline: d, fence: fence})
		case c.f == history.FRelease:
			events[k] = append(events[k], claimEvent{at: instant{c.start, c.inv}})
		}
	}
	out := map[string][]claim{}
	for k, evs := range events {
		slices.SortFunc(evs, func(a, b claimEvent) int { return cmp.Compare(a.at.i, b.at.i) })
		var cur *claim
		var lastRelease *instant
		closeAt := func(t instant, rel int64) {
			cur.end = minInstant(deadlineAt(cur.deadline), t)
			cur.released = rel
			out[k.key] = append(out[k.key], *cur)
			cur = nil
		}
		for _, e := range evs {
			if !e.grant {
				at := e.at
				lastRelease = &at
				if cur != nil {
					rel := e.at.i
					if !e.at.less(deadlineAt(cur.deadline)) {
						rel = -1 // it had already expired
					}
					closeAt(e.at, rel)
				}
				continue
			}
			if e.renew && cur == nil && lastRelease != nil && e.invoked.less(*lastRelease) {
				continue // overtaken by the release
			}
			g := e.at
			empty := !g.less(deadlineAt(e.deadline))
			if cur != nil {
				if g.less(deadlineAt(cur.deadline)) && !empty {
					// Contiguous: the promise goes on, now until the new deadline.
					cur.deadline = e.deadline
					if e.fence > 0 {
						cur.fence = e.fence
					}
					continue
				}
				closeAt(g, -1)
			}
			if !empty {
				cur = &claim{proc: k.proc, key: k.key, start: g, deadline: e.deadline, fence: e.fence, grant: g.i, byRenew: e.renew, released: -1}
			}
		}
		if cur != nil {
			cur.end = deadlineAt(cur.deadline)
			out[k.key] = append(out[k.key], *cur)
		}
	}
	for _, cs := range out {
		slices.SortFunc(cs, func(a, b claim) int {
			return cmp.Compare(a.grant, b.grant) // index order is start order
		})
	}
	return out
}

// holds converts claims to the exported form, for plots.
func holds(p *prepared, byKey map[string][]claim) []Hold {
	var out []Hold
	for _, k := range sortedKeys(byKey) {
		for _, c := range byKey[k] {
			h := Hold{Process: c.proc, Key: c.key, Start: c.start.t, End: c.end.t, Fence: c.fence, Acquire: c.grant}
			if c.deadline != never {
				h.Deadline = c.deadline
			}
			if c.end.t > p.last {
				h.End = -1
			}
			out = append(out, h)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Start < out[j].Start })
	return out
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
}

// analyseClaims finds overlapping claims and foreign releases in
// O(n log n): a sweep over claims by start with a heap of live claims.
func analyseClaims(p *prepared, byKey map[string][]claim) promiseFindings {
	var f promiseFindings
	releases := map[string][]*call{}
	for i := range p.calls {
		c := &p.calls[i]
		if c.f == history.FRelease && c.typ == history.OK {
			releases[c.key] = append(releases[c.key], c)
		}
	}
	for _, k := range sortedKeys(byKey) {
		cs := byKey[k]
		// Overlaps: claims sorted by start; live ones in a min-heap by end.
		live := &endHeap{}
		reported := 0
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
		// Foreign releases: a release ok whose whole interval lies inside
		// another process's claim. Releases by invoke time; claims that
		// began before the invoke in a max-heap by end.
		rels := releases[k]
		sort.SliceStable(rels, func(i, j int) bool { return rels[i].inv < rels[j].inv })
		open := &endHeap{max: true}
		next := 0
		reported = 0
		for _, r := range rels {
			ri, rr := instant{r.start, r.inv}, instant{r.end, r.done}
			for next < len(cs) && cs[next].start.less(ri) {
				heap.Push(open, &cs[next])
				next++
			}
			for open.Len() > 0 && !ri.less(open.cs[0].end) {
				heap.Pop(open)
			}
			var holder *claim
			if open.Len() > 0 && rr.less(open.cs[0].end) {
				if top := open.cs[0]; top.proc != r.proc {
					holder = top
				} else {
					// r's own claims end at its release invoke, so this
					// does not happen; scan rather than assume.
					for _, a := range open.cs {
						if a.proc != r.proc && rr.less(a.end) && (holder == nil || holder.end.less(a.end)) {
							holder = a
						}
					}
				}
			}
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
					Description: fmt.Sprintf("process %d released %s (from %s to %s) while process %d held it (from %s %s): it removed someone else's lock",
						r.proc, k, secs(r.start), secs(r.end), holder.proc, secs(holder.start.t), untilText(holder)),
				})
			}
		}
	}
	return f
}

func overlapViolation(p *prepared, a, c *claim) Violation {
	end := minInstant(a.end, c.end).t
	shown := min(end, max(p.last, c.start.t))
	v := Violation{
		Checker: "lock-promise", Kind: KindOverlap, Key: c.key,
		Processes: []int{a.proc, c.proc}, Start: c.start.t, End: shown,
		Events: []int64{a.grant, c.grant}, Fatal: true,
	}
	window := fmt.Sprintf("from %s to %s", secs(c.start.t), secs(end))
	if end == never {
		window = fmt.Sprintf("from %s on (neither claim ever ended)", secs(c.start.t))
	}
	if c.byRenew {
		v.Kind = KindForeignRelease
		v.Description = fmt.Sprintf("process %d renewed %s at %s while process %d held it (from %s %s): both held it %s",
			c.proc, c.key, secs(c.start.t), a.proc, secs(a.start.t), untilText(a), window)
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
