package checker

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sort"

	"github.com/anishathalye/porcupine"

	"github.com/lockharness/lockharness/history"
)

// checkResource judges the protected resource: linearizability of the
// critical sections under the counter model (a lost update is not
// linearizable), the final count, and stale writes (listed, not fatal).
//
// w is the window of the history p holds (see CheckFile): the counter's
// value where it begins, what the windows before it accepted and read,
// and whether it is the last, where the final count is judged.
func checkResource(ctx context.Context, p *prepared, byKey map[string][]claim, cfg Config, w window) resourcePart {
	c := w.c
	for i := range p.calls {
		if p.calls[i].f == history.FAcquire {
			c.acquired[p.calls[i].proc] = true
		}
	}
	secsByKey := sectionsFinal(p, c.acquired, w.last)
	// A key porcupine refutes is named once, and only when no lost update
	// (two sections that read the same value, anywhere in the history)
	// names it already: see resourcePart.
	rc := &resourceCheck{p: p, w: w, part: resourcePart{stats: map[string]float64{}, noOrder: map[string]Violation{}, lostKeys: map[string]bool{}}}
	keys := claimKeys(p, secsByKey)
	lrs := eachKey(keys, func(_ int, key string) linResult {
		return checkOwnModel(ctx, counterModel(CounterState{A: c.counter[key], N: 1}), counterOps(secsByKey[key]), cfg.Timeout)
	})
	for ki, key := range keys {
		rc.judgeKey(key, secsByKey[key], lrs[ki])
	}
	if w.last {
		rc.finalReadsBefore(secsByKey)
	}

	r := &rc.part
	backwards := fenceBackwards(p, c.fenceTop)
	r.stats["fence-backwards"] = float64(len(backwards))
	if len(backwards) > 0 {
		r.invalid = true
	}
	stale := staleWrites(p, byKey, c.priorClaim)
	r.stats["stale-writes"] = float64(len(stale))
	r.backwards, r.stale = firstBackwards(nil, backwards), firstStale(nil, stale)
	return *r
}

// resourceCheck is what the steps of checkResource share: the window and
// its carry, and the part of the verdict found so far.
type resourceCheck struct {
	p    *prepared
	w    window
	part resourcePart
}

// judgeKey judges key's critical sections ss in this window, whose
// linearizability porcupine said lr of: the writes' outcomes, the lost
// updates, the order of the sections, and in the last window the final
// count; and carries what the windows after need.
func (rc *resourceCheck) judgeKey(key string, ss []Section, lr linResult) {
	c, stats := rc.w.c, rc.part.stats
	stats["sections"] += float64(len(ss))
	accepted, unknownW := 0, 0
	for _, s := range ss {
		switch s.Write {
		case WriteAccepted:
			accepted++
			stats["accepted-writes"]++
		case WriteRejected:
			stats["rejected-writes"]++
		case WriteFailed:
			stats["failed-writes"]++
		case WriteUnknown:
			unknownW++
			stats["unknown-writes"]++
		}
	}
	lost := rc.lostUpdates(key, ss)
	rc.linearizable(key, lr, lost)

	c.accepted[key] += accepted
	c.unknownW[key] += unknownW
	if j, ok := lastReadOf(ss); ok {
		c.lastRead[key] = ss[j]
	}
	if !rc.w.last {
		return
	}
	// Final count, over the whole history.
	for _, s := range ss {
		if !s.Final {
			continue
		}
		if v, bad := finalCount(key, s, c.accepted[key], c.unknownW[key], stats); bad {
			rc.part.invalid = true
			rc.part.vs = append(rc.part.vs, v)
		}
	}
}

// lostUpdates spells out (up to maxReported per key over the history)
// and counts key's lost updates among ss: direct evidence, two accepted
// sections that read the same v and wrote v+1. Every legal step of the
// model moves the counter by +1 from the value read, so the counter never
// holds v twice around an increment: such a pair is never linearizable.
func (rc *resourceCheck) lostUpdates(key string, ss []Section) int {
	byRead := map[int64][]int{}
	for i, s := range ss {
		if s.Write == WriteAccepted && s.HasRead && s.Wrote == s.Read+1 {
			byRead[s.Read] = append(byRead[s.Read], i)
		}
	}
	var dupReads []int64
	for v, is := range byRead {
		if len(is) > 1 {
			dupReads = append(dupReads, v)
		}
	}
	sort.Slice(dupReads, func(i, j int) bool { return dupReads[i] < dupReads[j] })
	lost := 0
	reported := rc.w.c.reported
	shown := reported[capKey{"lost-update", key}]
	for _, v := range dupReads {
		is := byRead[v]
		for j := 1; j < len(is); j++ {
			lost++
			if shown++; shown > maxReported {
				continue
			}
			rc.part.vs = append(rc.part.vs, lostUpdate(key, v, ss[is[j-1]], ss[is[j]]))
		}
	}
	rc.part.stats["lost-updates"] += float64(lost)
	if lost > 0 {
		rc.part.lostKeys[key] = true
	}
	reported.set(capKey{"lost-update", key}, min(shown, maxReported+1))
	return lost
}

// lostUpdate is the violation of sections a and b of key, which both read
// v and both wrote v+1, storage accepting both.
func lostUpdate(key string, v int64, a, b Section) Violation {
	return Violation{
		Checker: "resource", Kind: KindLostUpdate, Key: key,
		Processes: []int{a.Process, b.Process}, Start: min(a.Start, b.Start), End: max(a.End, b.End),
		Events: []int64{a.ReadIndex, a.WriteIndex, b.ReadIndex, b.WriteIndex}, Fatal: true,
		Description: fmt.Sprintf("process %d (from %s) and process %d (from %s) both read %d from %s's counter and both wrote %d, and storage accepted both: one update was lost",
			a.Process, secs(a.Start), b.Process, secs(b.Start), v, key, v+1),
	}
}

// linearizable takes porcupine's verdict lr on key's sections, which had
// lost updates: refuted, the key is not linearizable (named by the first
// section that cannot be placed, see resourcePart); unknown, a lost update
// still proves it is not; linearizable despite a lost update cannot
// happen, and if it does neither is trusted.
func (rc *resourceCheck) linearizable(key string, lr linResult, lost int) {
	r := &rc.part
	switch lr.res {
	case porcupine.Illegal:
		r.invalid = true
		r.nonlin = append(r.nonlin, key)
		if _, named := r.noOrder[key]; !named {
			r.noOrder[key] = rc.noOrder(key, lr)
		}
	case porcupine.Unknown:
		if lost > 0 {
			r.invalid = true
			r.nonlin = append(r.nonlin, key) // a lost update is a proof (see lostUpdates)
		} else {
			r.unknown = append(r.unknown, fmt.Sprintf("%s: %s", key, lr.reason))
		}
	default:
		if lost > 0 {
			r.unknown = append(r.unknown, fmt.Sprintf("%s: porcupine found a linearization despite a lost update; checker bug", key))
		}
	}
}

// noOrder is the violation of key, whose sections porcupine refuted,
// named by the first section it could not place.
func (rc *resourceCheck) noOrder(key string, lr linResult) Violation {
	v := Violation{Checker: "resource", Kind: KindLostUpdate, Key: key, Fatal: true,
		Description: fmt.Sprintf("no order of the critical sections on %s explains the counter values they read", key)}
	if op, ok := firstUnplaced(lr); ok {
		s := op.Input.(Section)
		v.Processes = []int{s.Process}
		v.Start, v.End = s.Start, min(s.End, rc.p.last)
		v.Events = []int64{s.ReadIndex}
		v.Description += fmt.Sprintf(": the first section that cannot be placed is process %d's (%s, from %s)", s.Process, describeSection(s), secs(s.Start))
	}
	return v
}

// finalReadsBefore judges, in the last window, the final count of keys
// without sections here, whose latest read lies in an earlier window.
// (A verification read opens a section no later event of its process
// closes, which keeps its key from splitting: the last window holds it.
// Those judged here, closed by a write, are never final.)
func (rc *resourceCheck) finalReadsBefore(here map[string][]Section) {
	c := rc.w.c
	for _, key := range sortedKeys(c.lastRead) {
		if _, ok := here[key]; ok {
			continue
		}
		s := c.lastRead[key]
		if c.acquired[s.Process] || s.Write != WriteNone {
			continue
		}
		s.Final = true
		if v, bad := finalCount(key, s, c.accepted[key], c.unknownW[key], rc.part.stats); bad {
			rc.part.invalid = true
			rc.part.vs = append(rc.part.vs, v)
		}
	}
}

// maxBackwards and maxStale bound the fence findings and the stale writes
// spelled out in a history (not per key); the stats count them all.
const (
	maxBackwards = maxReported
	maxStale     = maxReported * 4
)

// firstBackwards joins fence findings to kept and keeps the first
// maxBackwards in a whole history's order: by key, then (fenceBackwards's
// order within a key) by the grant's invocation. A key's findings of a
// later window of a long history come after its earlier ones (see
// CheckFile), so a stable sort by key restores that order.
func firstBackwards(kept, add []Violation) []Violation {
	out := append(kept, add...)
	slices.SortStableFunc(out, func(a, b Violation) int { return cmp.Compare(a.Key, b.Key) })
	return out[:min(len(out), maxBackwards)]
}

// firstStale joins stale writes to kept and keeps the first maxStale in a
// whole history's order: by the write's invocation (Events[0]).
func firstStale(kept, add []Violation) []Violation {
	out := append(kept, add...)
	slices.SortStableFunc(out, func(a, b Violation) int { return cmp.Compare(a.Events[0], b.Events[0]) })
	return out[:min(len(out), maxStale)]
}

// resourcePart is what checkResource found in one window of a history;
// the windows' parts add up to the history's (see result).
type resourcePart struct {
	stats           map[string]float64
	vs              []Violation
	nonlin, unknown []string
	invalid         bool
	// noOrder is, per key porcupine refuted, the first section it could
	// not place; lostKeys the keys with a lost update. Only keys without
	// one are named by noOrder (see violations).
	noOrder  map[string]Violation
	lostKeys map[string]bool
	// The first fence findings and stale writes of the history (see
	// firstBackwards, firstStale).
	backwards, stale []Violation
}

// violations is every violation of the part.
func (p resourcePart) violations() []Violation {
	vs := slices.Concat(p.vs, p.backwards, p.stale)
	for _, key := range sortedKeys(p.noOrder) {
		if !p.lostKeys[key] {
			vs = append(vs, p.noOrder[key])
		}
	}
	return vs
}

// add joins a later window's part to p.
func (p *resourcePart) add(q resourcePart) {
	if p.stats == nil {
		p.stats = map[string]float64{}
	}
	for k, v := range q.stats {
		p.stats[k] += v
	}
	p.vs = append(p.vs, q.vs...)
	p.nonlin = sortedUnion(p.nonlin, q.nonlin)
	p.unknown = keyReasons(p.unknown, q.unknown)
	p.invalid = p.invalid || q.invalid
	p.backwards = firstBackwards(p.backwards, q.backwards)
	p.stale = firstStale(p.stale, q.stale)
	if p.noOrder == nil {
		p.noOrder, p.lostKeys = map[string]Violation{}, map[string]bool{}
	}
	for k, v := range q.noOrder {
		if _, ok := p.noOrder[k]; !ok {
			p.noOrder[k] = v
		}
	}
	for k := range q.lostKeys {
		p.lostKeys[k] = true
	}
}

// result is the resource verdict of the part.
func (p resourcePart) result() CheckResult {
	res := CheckResult{Verdict: Valid, Stats: p.stats}
	switch {
	case p.invalid:
		res.Verdict = Invalid
		res.Reason = resourceInvalid
	case len(p.unknown) > 0:
		res.Verdict = Unknown
		res.Reason = joinReasons(p.unknown)
	case p.stats["sections"] == 0:
		res.Reason = noSections
	}
	return res
}

// The resource checker's reasons, which the windows of a history compose.
const (
	resourceInvalid = "critical sections on the protected resource are not linearizable, the final count is wrong, or a fencing token went backwards"
	noSections      = "no critical sections recorded"
)

// lastReadOf is the position of the latest section with a read ok in ss
// (sections are in invocation order).
func lastReadOf(ss []Section) (int, bool) {
	for j := len(ss) - 1; j >= 0; j-- {
		if ss[j].HasRead {
			return j, true
		}
	}
	return 0, false
}

// finalCount judges the final read s of key against the writes storage
// accepted (and those of unknown outcome) over the whole history.
func finalCount(key string, s Section, accepted, unknownW int, stats map[string]float64) (Violation, bool) {
	stats["final-count/"+key] = float64(s.Read)
	lo, hi := int64(accepted), int64(accepted+unknownW)
	if s.Read >= lo && s.Read <= hi {
		return Violation{}, false
	}
	want := fmt.Sprintf("%d writes of counter+1", accepted)
	if unknownW > 0 {
		want += fmt.Sprintf(" (and %d more of unknown outcome, so %d to %d)", unknownW, lo, hi)
	}
	return Violation{
		Checker: "resource", Kind: KindFinalCount, Key: key, Processes: []int{s.Process},
		Start: s.Start, End: s.End, Events: []int64{s.ReadIndex}, Fatal: true,
		Description: fmt.Sprintf("the final read of %s's counter found %d, but storage accepted %s: updates were lost", key, s.Read, want),
	}, true
}

// staleWrites lists every write invoked when its process held no claim on
// the key: after its lease ran out (or without ever holding it).
//
// prior, when not nil, gives each process's latest claim on each key in
// the windows before this one (all ended before it; its end and grant),
// which a write without a claim here follows.
func staleWrites(p *prepared, byKey map[string][]claim, prior func(proc int, key string) (claim, bool)) []Violation {
	if !p.has(history.FWrite) {
		return nil // no write, no stale one (and no claims to sort out)
	}
	// Claims by (key, process), sorted by start.
	type pk struct {
		proc int
		key  string
	}
	mine := map[pk][]*claim{}
	for k, cs := range byKey {
		for i := range cs {
			c := &cs[i]
			mine[pk{c.proc, k}] = append(mine[pk{c.proc, k}], c)
		}
	}
	var out []Violation
	for i := range p.calls {
		c := &p.calls[i]
		if c.f != history.FWrite {
			continue
		}
		cs := mine[pk{c.proc, c.key}]
		at := instant{c.start, c.inv}
		j := sort.Search(len(cs), func(j int) bool { return at.less(cs[j].start) }) - 1
		if j >= 0 && at.less(cs[j].end) {
			continue // written under a live claim
		}
		if j < 0 && prior != nil {
			if cl, ok := prior(c.proc, c.key); ok {
				cs, j = []*claim{&cl}, 0
			}
		}
		what := "wrote"
		if c.in != nil && c.in.Counter != nil {
			what = fmt.Sprintf("wrote %d to", *c.in.Counter)
		}
		fate := "its outcome is unknown"
		switch {
		case c.typ == history.OK && c.out != nil && c.out.Rejected:
			fate = "storage rejected it (stale fencing token): harmless"
		case c.typ == history.OK:
			fate = "storage accepted it"
		case c.typ == history.Fail:
			fate = "it failed"
		}
		v := Violation{Checker: "resource", Kind: KindStaleWrite, Key: c.key, Processes: []int{c.proc},
			Start: c.start, End: min(c.end, p.last), Events: []int64{c.inv}}
		if c.completed() {
			v.Events = append(v.Events, c.done)
		}
		if j < 0 {
			v.Description = fmt.Sprintf("process %d %s %s's counter at %s without holding %s; %s", c.proc, what, c.key, secs(c.start), c.key, fate)
		} else {
			v.Description = fmt.Sprintf("process %d %s %s's counter at %s, %s after its lease ended at %s; %s",
				c.proc, what, c.key, secs(c.start), dur(c.start-cs[j].end.t), secs(cs[j].end.t), fate)
			v.Events = append(v.Events, cs[j].grant)
		}
		out = append(out, v)
	}
	return out
}

// fenceBackwards lists every grant whose fencing token is not greater than
// that of a grant on the same key that completed before it was invoked. A
// fencing token must grow with every grant in real-time order (grants
// whose calls overlap may take their numbers in either order); one that
// does not was drawn from a counter that lost its state, on a flush or a
// failover, and storage that checks fencing then refuses the new holder,
// or, on a repeated token, accepts two holders' writes.
//
// tops, when not nil, holds each key's highest token among the grants of
// the windows before this one (all completed before any grant here was
// asked for) and is advanced to this window's.
func fenceBackwards(p *prepared, tops map[string]fenceGrant) []Violation {
	type grant = fenceGrant
	byKey := map[string][]grant{}
	for i := range p.calls {
		c := &p.calls[i]
		if c.f != history.FAcquire || c.typ != history.OK || c.out == nil || c.out.Fence <= 0 {
			continue
		}
		byKey[c.key] = append(byKey[c.key], grant{c.proc, c.start, c.end, c.inv, c.done, c.out.Fence})
	}
	var out []Violation
	for _, key := range claimKeys(p, byKey) {
		gs := byKey[key]
		// By completion: the grants that precede an invocation are a prefix.
		byEnd := append([]grant(nil), gs...)
		sort.Slice(byEnd, func(i, j int) bool { return byEnd[i].done < byEnd[j].done })
		sort.Slice(gs, func(i, j int) bool { return gs[i].inv < gs[j].inv })
		var top *grant // the highest token among grants completed so far
		if t, ok := tops[key]; ok {
			top = &t
		}
		j := 0
		for i := range gs {
			g := &gs[i]
			for ; j < len(byEnd) && byEnd[j].done < g.inv; j++ {
				if top == nil || byEnd[j].fence > top.fence {
					top = &byEnd[j]
				}
			}
			if top == nil || g.fence > top.fence {
				continue
			}
			what := "went backwards"
			if g.fence == top.fence {
				what = "was handed out twice"
			}
			out = append(out, Violation{
				Checker: "resource", Kind: KindFenceBackwards, Key: key, Processes: []int{top.proc, g.proc},
				Start: top.end, End: g.end, Events: []int64{top.done, g.done}, Fatal: true,
				Description: fmt.Sprintf("process %d was granted %s with fencing token %d at %s, after process %d had been granted it with token %d at %s: the fencing token %s, so storage that checks tokens refuses the later holder or takes a stale one's writes",
					g.proc, key, g.fence, secs(g.end), top.proc, top.fence, secs(top.end), what),
			})
		}
		for ; j < len(byEnd); j++ {
			if top == nil || byEnd[j].fence > top.fence {
				top = &byEnd[j]
			}
		}
		if tops != nil && top != nil {
			tops[key] = *top
		}
	}
	return out
}

// fenceGrant is a grant with a fencing token.
type fenceGrant struct {
	proc             int
	start, end       int64
	inv, done, fence int64
}
