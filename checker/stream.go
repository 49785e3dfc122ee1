package checker

import (
	"context"
	"fmt"
	"math"
	"os"
	"sort"

	"github.com/lockharness/lockharness/history"
)

// A long run's history does not fit in memory at once: a minute of fifty
// clients is 2.5 million events, and holding them with what the checkers
// derive from them costs a gigabyte. CheckFile therefore reads the history
// in windows of about windowTarget events and keeps, between windows, only
// what the checkers need of the past (the carry): memory is bounded by the
// longest window, not by the length of the run.
//
// A window may end after event e only where nothing before the cut can
// change the meaning of anything after it (cutter.ok):
//
//  1. no operation is pending: every client and nemesis invocation up to
//     e has completed by e, and the next event is at a later nanosecond,
//     so every operation of the window precedes, in real time, every
//     operation after it;
//  2. no lease can be live: every grant of the window was followed by its
//     process's release invocation on that key, or has a deadline at or
//     before e's time (a conservative superset of claims: absorbed renews
//     and empty grants count too), so no claim spans the cut and the
//     lease-mutex model's state at the cut is free, or held by a lease
//     that has run out by then, which allows exactly what free allows;
//  3. no critical section is open: every read ok of a client on a key was
//     followed by its write (or the same client's next read), so no
//     section spans the cut;
//  4. the counter's value at the cut is the same in every linearization
//     of the history before it: every write that was accepted, or whose
//     outcome is unknown, read the counter first and wrote a larger
//     value, so a legal linearization moves the counter only upwards; and
//     every write of unknown outcome (which may take effect at any later
//     time, and leaves the counter at either value) is followed, before
//     the cut, by a read of a larger value than it read, which every
//     legal linearization places after it (the counter never comes back
//     down to the value it needs). Then every legal linearization of the
//     part before the cut holds every one of its writes and ends at the
//     largest value read or accepted, which is carried as the next
//     window's initial state;
//  5. no client has crashed, no client ran two operations at once, the
//     final heal has not begun (the recovery period and the final reads
//     lie in the last window, where liveness and the final count are
//     judged) and events come in index order.
//
// Why that is exact for porcupine's verdicts: by 1, every operation before
// the cut precedes every operation after it, so every linearization of
// the whole history is a linearization of the part before the cut followed
// by one of the part after it, starting from the state the first left; by
// 2 and 4 that state is the same whichever linearization (up to states that
// allow the same), so the whole is linearizable exactly when each window
// is, from the carried state. The overlap analysis, stale writes and the
// coverage are over claims, none of which spans a cut (2); the rest is
// carried: the tokens of the latest acquires (lost-lease evidence), the
// highest fencing token per key, the writes accepted per key and its
// latest read (the final count), the longest lease and the unavailability
// per key (liveness), the nemesis events and each fault's exposure so far,
// and how many violations of each kind have been spelled out.
//
// What is not the same: porcupine's bounds (CheckTimeout, and the 50,000
// operations it re-checks in one go after a failed chunk) apply per window,
// so a window check can decide where the whole check ran out and said
// unknown; and violations with the same start may be listed in another
// order. Where a cut is never allowed (a crash early in a run, a write of
// unknown outcome that no later read settles, a write that read
// nothing), the window grows to the end: memory is then what the whole
// check costs.

// windowTarget is how many events a window of CheckFile holds at least
// before it is cut at the next point allowed.
const windowTarget = 1 << 16

// CheckFile judges the history at path as Check does, reading it in
// windows so that its memory does not grow with the length of the history
// (see above). truncated reports a last line cut off by a killed run (and
// dropped, as history.ReadFile does). When ctx is done the reading stops
// and the checkers that had not finished are unknown, as with Check; err
// is for a history that cannot be read. A history the windows cannot judge
// exactly (its events out of index order after a cut, or no final heal in
// its last window after a cut) is read again and checked whole.
func CheckFile(ctx context.Context, path string, cfg Config) (res Result, truncated bool, err error) {
	return checkFile(ctx, path, cfg, windowTarget)
}

func checkFile(ctx context.Context, path string, cfg Config, target int) (Result, bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return Result{}, false, fmt.Errorf("open history: %w", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.IsDir() {
		return Result{}, false, fmt.Errorf("history %s is a directory: give the history.jsonl inside it", path)
	}
	sc := history.NewScanner(f)
	next := func() (history.Op, bool) {
		if !sc.Scan(ctx) {
			return history.Op{}, false
		}
		return sc.Op(), true
	}
	res, exact := checkWindows(ctx, next, cfg, target)
	if ctx.Err() != nil {
		// Stopped: the checkers that had not finished are unknown, as
		// Check's are when ctx is done.
		if res.Checkers == nil {
			res = Check(ctx, nil, cfg)
		}
		return res, sc.Truncated(), nil
	}
	if err := sc.Err(); err != nil {
		return res, sc.Truncated(), fmt.Errorf("%s: %w", path, err)
	}
	if exact {
		return res, sc.Truncated(), nil
	}
	h, err := history.ReadFileContext(ctx, path)
	if err != nil {
		return Result{}, h.Truncated, err
	}
	return Check(ctx, h.Ops, cfg), h.Truncated, nil
}

// checkWindows checks the events next yields in windows of at least
// target events; false when the windows cannot be exact and the history
// must be checked whole.
func checkWindows(ctx context.Context, next func() (history.Op, bool), cfg Config, target int) (Result, bool) {
	a := newAccumulator(ctx, cfg)
	cut := newCutter()
	var win []history.Op
	cuts := 0
	for {
		op, ok := next()
		if !ok {
			break
		}
		if len(win) >= target && cut.ok(op) {
			a.window(win, false)
			cut.commit(a.c)
			cuts++
			clear(win) // drop the values' references
			win = win[:0]
		}
		cut.observe(op)
		if cut.disorder && cuts > 0 {
			return Result{}, false
		}
		win = append(win, op)
	}
	a.window(win, true)
	// Liveness is judged over the recovery after the final heal, which
	// the cuts keep in the last window; without one the whole history is
	// the window, which the cuts did not keep.
	return a.result(), cuts == 0 || a.healed
}

// carry is what the checkers keep of the windows before the current one.
type carry struct {
	acquireToken map[procKey]string // token of (proc, key)'s latest grant
	lastClaim    map[procKey]claim  // (proc, key)'s latest claim
	reported     caps               // violations spelled out per kind and key
	counter      map[string]int64   // each key's counter at the cut (0 if never written)
	fenceTop     map[string]fenceGrant
	accepted     map[string]int // writes storage accepted, per key
	unknownW     map[string]int // writes of unknown outcome, per key
	lastRead     map[string]Section
	acquired     map[int]bool // processes that acquired
	longest      int64        // the longest lease granted
	unavail      map[string]int64
	nem          []nemesisEvent  // the nemesis events so far
	faults       []faultExposure // of each of nem
	orphans      *orphanCarry    // liveness: orphan locks across cuts

	backwardsShown, staleShown int
}

func newCarry() *carry {
	return &carry{acquireToken: map[procKey]string{}, lastClaim: map[procKey]claim{}, reported: caps{}, counter: map[string]int64{},
		fenceTop: map[string]fenceGrant{}, accepted: map[string]int{}, unknownW: map[string]int{},
		lastRead: map[string]Section{}, acquired: map[int]bool{}, unavail: map[string]int64{}, orphans: newOrphanCarry()}
}

func (c *carry) priorToken(proc int, key string) (string, bool) {
	t, ok := c.acquireToken[procKey{proc, key}]
	return t, ok
}

// window is one window of a history, as the checkers see it.
type window struct {
	c    *carry
	last bool // the last window: recovery, final reads and the end
}

type procKey struct {
	proc int
	key  string
}

// caps counts the violations of one kind spelled out per key.
type caps map[capKey]int

type capKey struct{ what, key string }

func (c caps) set(k capKey, n int) {
	if n > 0 {
		c[k] = n
	}
}

// accumulator checks a history window by window and composes the
// windows' findings into the history's Result.
type accumulator struct {
	ctx context.Context
	cfg Config
	c   *carry

	counts   map[string]map[string]int
	shared   *CheckResult // the history is unusable
	failed   map[string]CheckResult
	holds    []Hold
	promise  promisePart
	resource resourcePart
	live     CheckResult // the last window's
	liveVs   []Violation
	cov      Coverage
	covErr   string
	healed   bool // the last window has a final heal
}

func newAccumulator(ctx context.Context, cfg Config) *accumulator {
	return &accumulator{ctx: ctx, cfg: cfg.withDefaults(), c: newCarry(), counts: map[string]map[string]int{}, failed: map[string]CheckResult{}}
}

// window checks the next window of the history.
func (a *accumulator) window(ops []history.Op, last bool) {
	w := window{c: a.c, last: last}
	if a.shared != nil {
		a.addCounts(guardCounts(ops, nil))
		return
	}
	var p *prepared
	var byKey map[string][]claim
	var hs []Hold
	shared := guard(func() (CheckResult, error) {
		var err error
		p, err = prepareWith(ops, a.c.priorToken)
		if err != nil {
			return CheckResult{}, err
		}
		byKey = buildClaims(p)
		hs = holds(p, byKey)
		return CheckResult{}, nil
	})
	a.addCounts(guardCounts(ops, p))
	if shared.Verdict == Unknown {
		a.shared = &shared
		return
	}
	a.holds = append(a.holds, hs...)
	a.healed = p.heal >= 0

	run := func(name string, f func()) {
		if _, done := a.failed[name]; done {
			return
		}
		cr := guard(func() (CheckResult, error) {
			if err := a.ctx.Err(); err != nil {
				return CheckResult{}, fmt.Errorf("cancelled before it ran: %w", context.Cause(a.ctx))
			}
			f()
			return CheckResult{}, nil
		})
		if cr.Verdict == Unknown {
			a.failed[name] = cr
		}
	}
	run(LockPromise, func() { a.promise.add(checkPromise(a.ctx, p, byKey, a.cfg, w)) })
	run(Resource, func() { a.resource.add(checkResource(a.ctx, p, byKey, a.cfg, w)) })
	run(Liveness, func() {
		cr, vs := checkLiveness(p, byKey, w)
		if last {
			a.live, a.liveVs = cr, vs
		}
	})
	if a.covErr == "" {
		g := guard(func() (CheckResult, error) {
			a.cov.add(coverage(p, byKey, w))
			return CheckResult{}, nil
		})
		if g.Verdict == Unknown {
			a.covErr = g.Reason
		}
	}
	// The latest claim of each process and key, for the next window's
	// stale writes.
	for _, cs := range byKey {
		for _, cl := range cs {
			a.c.lastClaim[procKey{cl.proc, cl.key}] = cl
		}
	}
	// The latest grant of each process and key (an acquire ok, or a renew
	// ok not absorbed: markRenewals' rule), for the next window's
	// lost-lease evidence.
	latest := map[procKey]int64{}
	for i := range p.calls {
		c := &p.calls[i]
		grant := c.typ == history.OK && (c.f == history.FAcquire || (c.f == history.FRenew && !c.absorbed && c.token() != ""))
		if k := (procKey{c.proc, c.key}); grant {
			if d, seen := latest[k]; !seen || c.done > d {
				latest[k] = c.done
				a.c.acquireToken[k] = c.token()
			}
		}
	}
}

func (a *accumulator) addCounts(m map[string]map[string]int) {
	for f, byType := range m {
		if a.counts[f] == nil {
			a.counts[f] = map[string]int{}
		}
		for t, n := range byType {
			a.counts[f][t] += n
		}
	}
}

// add sums the coverage of a later window into c (faults aside: see
// faultCoverage).
func (c *Coverage) add(d Coverage) {
	c.Grants += d.Grants
	c.Renewals += d.Renewals
	c.Claims += d.Claims
	c.Pauses.Total += d.Pauses.Total
	c.Pauses.StruckHolder += d.Pauses.StruckHolder
	c.Pauses.OutlivedLease += d.Pauses.OutlivedLease
	c.Crashes.Total += d.Crashes.Total
	c.Crashes.WhileHolding += d.Crashes.WhileHolding
}

// result composes the windows' findings.
func (a *accumulator) result() Result {
	res := Result{Checkers: map[string]CheckResult{}, Violations: []Violation{}, Counts: a.counts}
	if a.shared != nil {
		for _, name := range []string{LockPromise, Resource, Liveness} {
			res.Checkers[name] = *a.shared
		}
		res.Verdict = Unknown
		return res
	}
	res.Holds = a.holds
	pick := func(name string, ok func() (CheckResult, []Violation, []string)) {
		if cr, bad := a.failed[name]; bad {
			res.Checkers[name] = cr
			return
		}
		cr, vs, nonlin := ok()
		res.Checkers[name] = cr
		res.Violations = append(res.Violations, vs...)
		res.NonLinearizableKeys = appendNew(res.NonLinearizableKeys, nonlin...)
	}
	pick(LockPromise, func() (CheckResult, []Violation, []string) {
		return a.promise.result(), a.promise.vs, a.promise.nonlin
	})
	pick(Resource, func() (CheckResult, []Violation, []string) {
		return a.resource.result(), a.resource.violations(), a.resource.nonlin
	})
	pick(Liveness, func() (CheckResult, []Violation, []string) { return a.live, a.liveVs, nil })
	sort.SliceStable(res.Violations, func(i, j int) bool { return res.Violations[i].Start < res.Violations[j].Start })
	sort.Strings(res.NonLinearizableKeys)
	res.Verdict = Combine(res.Checkers[LockPromise].Verdict, res.Checkers[Resource].Verdict, res.Checkers[Liveness].Verdict)
	cov := a.cov
	if a.covErr == "" {
		g := guard(func() (CheckResult, error) {
			cov.Faults = faultCoverage(a.c.nem, a.c.faults)
			return CheckResult{}, nil
		})
		if g.Verdict == Unknown {
			a.covErr = g.Reason
		}
	}
	judgeExposure(&res, cov, a.covErr, a.cfg)
	return res
}

// cutter follows a history event by event and says where a window may end
// (see the conditions above). It keeps what is pending or open, never what
// is done.
type cutter struct {
	pending   map[pendKey]*history.Value // invocations not yet completed
	busy      map[history.Process]bool   // client processes with an operation outstanding
	leases    map[procKey]int64          // grants not yet released: the latest deadline
	open      map[procKey]int64          // reads not yet followed by their write
	top       map[string]int64           // each key's largest counter value in the window
	unsettled map[string]int64           // per key, the largest value read by a write of unknown outcome no read has settled
	held      map[procKey]bool           // the process's latest acquire ok came after its latest release
	relDone   map[procKey]int64          // index of the completion of the process's latest release (max while in flight)
	renewInv  map[history.Process]int64  // index of a renewer's renew in flight
	never     bool                       // no cut for the rest of the history
	disorder  bool
	n         int
	last      history.Op
}

type pendKey struct {
	p history.Process
	f string
}

func newCutter() *cutter {
	return &cutter{pending: map[pendKey]*history.Value{}, busy: map[history.Process]bool{},
		leases: map[procKey]int64{}, open: map[procKey]int64{}, top: map[string]int64{}, unsettled: map[string]int64{},
		held: map[procKey]bool{}, relDone: map[procKey]int64{}, renewInv: map[history.Process]int64{}}
}

// ok reports whether the window may end before next.
func (c *cutter) ok(next history.Op) bool {
	if c.never || c.n == 0 || len(c.pending) > 0 || len(c.open) > 0 || len(c.unsettled) > 0 ||
		next.Time <= c.last.Time || next.Index <= c.last.Index {
		return false
	}
	for k, d := range c.leases {
		if d > c.last.Time {
			return false
		}
		delete(c.leases, k) // run out: it stays so
	}
	return true
}

// commit carries the window's counter values into cr.
func (c *cutter) commit(cr *carry) {
	for k, v := range c.top {
		cr.counter[k] = max(cr.counter[k], v)
	}
	clear(c.top)
}

// observe follows op.
func (c *cutter) observe(op history.Op) {
	if c.n > 0 && (op.Index <= c.last.Index || op.Time < c.last.Time) {
		c.disorder, c.never = true, true
	}
	c.n++
	c.last = op
	pk := pendKey{op.Process, op.F}
	if op.Process.IsNemesis() {
		if op.F == history.FFinalHeal {
			c.never = true
		}
		if op.Type == history.Invoke {
			c.pending[pk] = op.Value
		} else {
			delete(c.pending, pk)
		}
		return
	}
	if op.F == history.FCrash {
		c.never = true
		return
	}
	owner := int(op.Process)
	if op.Owner != nil {
		owner = int(*op.Owner)
	}
	k := procKey{owner, op.Key}
	if op.Type == history.Invoke {
		if c.busy[op.Process] {
			c.never = true // two operations of one client at once
		}
		c.busy[op.Process] = true
		c.pending[pk] = op.Value
		switch op.F {
		case history.FRelease:
			delete(c.leases, k)
			delete(c.held, k)
			c.relDone[k] = math.MaxInt64
		case history.FRenew:
			c.renewInv[op.Process] = op.Index
		}
		return
	}
	if op.F == history.FRelease {
		c.relDone[k] = op.Index
	}
	in := c.pending[pk]
	delete(c.pending, pk)
	delete(c.busy, op.Process)
	switch op.F {
	case history.FAcquire, history.FRenew:
		if op.Type != history.OK {
			return
		}
		// A renewer's renewal invoked after its process let go (its
		// release had completed, or it never held) is an orphan lock (see
		// findOrphans), a bug: its episodes merge across claims in ways
		// windows cannot follow, so no more cuts (memory is then what the
		// whole check costs). A renewal concurrent with the release is
		// absorbed by it and no orphan.
		switch {
		case op.F == history.FAcquire:
			c.held[k] = true
		case op.Owner != nil && !c.held[k]:
			if d, released := c.relDone[k]; !released || c.renewInv[op.Process] > d {
				c.never = true
			}
		}
		d := int64(never)
		if op.Value != nil && op.Value.Deadline != 0 {
			d = op.Value.Deadline
		}
		if cur, ok := c.leases[k]; ok {
			d = max(d, cur)
		}
		c.leases[k] = d
	case history.FRead:
		if op.Type == history.OK && op.Value != nil && op.Value.Counter != nil {
			v := *op.Value.Counter
			c.open[k] = v
			c.top[op.Key] = max(c.top[op.Key], v)
			if u, ok := c.unsettled[op.Key]; ok && v > u {
				delete(c.unsettled, op.Key) // every unknown write on the key took effect or never will
			}
		}
	case history.FWrite:
		read, hasRead := c.open[k]
		delete(c.open, k)
		if op.Type == history.Fail || op.Type == history.OK && op.Value != nil && op.Value.Rejected {
			return // the counter is as the read left it
		}
		wrote := read + 1
		if in != nil && in.Counter != nil {
			wrote = *in.Counter
		} else if op.Value != nil && op.Value.Counter != nil {
			wrote = *op.Value.Counter
		}
		if !hasRead || wrote <= read {
			c.never = true // the counter's value at a cut could be ambiguous
			return
		}
		if op.Type == history.OK {
			c.top[op.Key] = max(c.top[op.Key], wrote)
			return
		}
		// Unknown: it may take effect later, until a read shows the
		// counter past the value it needs.
		if u, ok := c.unsettled[op.Key]; !ok || read > u {
			c.unsettled[op.Key] = read
		}
	}
}
