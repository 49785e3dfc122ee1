package checker

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/lockharness/lockharness/history"
)

// A long run's history does not fit in memory at once: a minute of fifty
// clients is 2.5 million events, and holding them with what the checkers
// derive from them costs a gigabyte. Check therefore reads a history file
// in windows of about windowTarget events and keeps, between windows, only
// what the checkers need of the past (the carry): memory is bounded by the
// longest window, not by the length of the run.
//
// Every checker but the coverage's faults and pauses works per key (and
// per process and key): porcupine partitions by key, claims, sections and
// fences are a key's. So a window is cut per key. A key k splits after
// its event e (keyState.split) where nothing of k before the split can
// change the meaning of anything of k after it, at a time t_k with e's
// time ≤ t_k < the time of k's next event:
//
//  1. no operation on k is pending: every client invocation on k up to e
//     has completed by e, so every operation on k before the split
//     precedes, in real time, every operation on k after it;
//  2. no lease on k can be live: every grant of k before the split was
//     followed by its process's release invocation on k, or has a
//     deadline at or before t_k (a conservative superset of claims:
//     absorbed renews and empty grants count too), so no claim spans the
//     split and the lease-mutex model's state there is free, or held by
//     a lease that has run out by then, which allows exactly what free
//     allows;
//  3. no critical section on k is open: every read ok of a client on k
//     was followed by its write, the same client's next read or its
//     release invocation on k (sections end there, see sections), or
//     its crash, so no section spans the split;
//  4. k's counter value at the split is the same in every linearization
//     of k's history before it: every write that was accepted, or whose
//     outcome is unknown, read the counter first and wrote a larger
//     value, so a legal linearization moves the counter only upwards; and
//     every write of unknown outcome (which may take effect at any later
//     time, and leaves the counter at either value) is followed, before
//     the split, by a read of a larger value than it read, which every
//     legal linearization places after it (the counter never comes back
//     down to the value it needs). Then every legal linearization of the
//     part before the split holds every one of its writes and ends at the
//     largest value read or accepted, which is carried as the initial
//     state of k's next part.
//
// A key whose counter could be ambiguous at any later split (a write that
// read nothing, or wrote no more than it read) or that an orphan lock
// holds (a renewal after its process let go, whose episode findOrphans
// follows across claims) splits no more: its events wait for the last
// window.
//
// A window ends after event e (cutter.ok, cutter.take) only where the
// global conditions hold: no nemesis operation, client pause or keyless
// client operation is pending, the next event is at a later nanosecond,
// no client ran two operations at once, no event prepare would refuse has
// been seen (among them an event of a crashed process: the whole check's
// first refusal is then in the last window) and events come in index
// order. The window
// takes every global event up to e; of each key quiet at e (1 to 4 with
// t_k = e's time) all its events, of every other key its events up to its
// latest split (t_k < e's time), and leaves the rest of that key's events
// for the next window, in front of what comes after e. A key that never
// splits (held by a renewing lock all run) is thus held back, alone,
// while the other keys' windows come and go.
//
// Why that is exact for porcupine's verdicts: by 1, every operation of a
// key before its split precedes every operation of the key after it, so
// every linearization of the key's history is a linearization of the part
// before the split followed by one of the part after, starting from the
// state the first left; by 2 and 4 that state is the same whichever
// linearization (up to states that allow the same), so the whole is
// linearizable exactly when each part is, from the carried state. The
// overlap analysis, stale writes, fences and liveness's unavailability are
// over a key's claims and calls, none of which spans its split (1, 2);
// what crosses a split is carried per key or per process and key: the
// tokens of the latest grants (lost-lease evidence), the latest claims
// (stale writes), the highest fencing token, the writes accepted and the
// latest read (the final count), the unavailability, the orphan evidence,
// and how many violations of each kind have been spelled out; and per
// history the longest lease. A window's end (p.last) is its cut: every
// claim it holds ended by then (t_k ≤ the cut's time).
//
// The recovery after the final heal is cut too (it is as long as the run
// makes it, and a history of many keys is busy through it): the final
// heal's time is carried (carry.heal), and per key what liveness judges
// of the recovery: its acquires invoked since the heal, their processes,
// the first three refused while nobody held the key, whether one was
// granted, the claim in force at the heal (the latest, by grant) and
// whether a crashed holder blocks the key for good (a claim without end,
// which keeps its key from splitting, so it lies in the last window, whose
// prepare knows every crash: see below). The last window judges the recovery of every
// key it carries. A later final heal begins the recovery again: every
// event of the windows before it is earlier. The final reads are judged
// in the last window whichever window read them (carry.lastRead).
//
// The coverage crosses keys. Faults: the nemesis events are never held
// back, so a window's claims end by its cut, before every nemesis event
// of a later window begins (the next event is strictly later): no claim
// can be exposed to a later window's fault. A claim held back may be
// exposed to an earlier window's fault: every window therefore checks its
// claims and acquires against every nemesis event so far (carry.nem), and
// a fault not healed by a window's end is healed after all that window
// holds. Client pauses are global too, so a claim live when a pause began
// is in the pause's window or a later one: the pause's probe
// (carry.pauses) takes, from every window from its own on, its process's
// claim live at its start on the first key, as the whole check's match.
//
// A client crash (cutter.crash) does not end the cuts: the rule needs of
// it only what the crashed process leaves behind, and that is carried.
// Its process records nothing after it (else prepare refuses the history,
// and so do the windows: the cutter cuts no more, and the carried crash
// makes the last window's prepare refuse the event as the whole check's
// does). Its operations in flight never complete: each is an unknown
// outcome until the end of the history, which keeps nothing of its key
// pending in the sense of 1 for the rules: an unknown acquire, renew or
// read grants or shows nothing (the model leaves them out, claims begin
// at an acquire's ok); an unknown release ended the claim at its
// invocation, and the model may place its giving up anywhere after it, so
// at its invocation, which leaves a free key, allowing all a held one
// does; an unknown write is followed as any write of unknown outcome (4).
// Its reads are followed by no write (3). Its claims run until their
// deadlines, and keep their keys from splitting meanwhile (2): that is
// the crashed process's open claim, carried as any lease is. A session
// lease (a database row lock) ends at the crash, by a release invoked
// there that never completes (endSessions). What the windows after need
// of a crash is in carry.crashes, one entry per crash: which process
// crashed when, so that a window that holds its process's events from
// before it (a key held back past the crash's window) ends its session
// leases at the crash (preparer.endPriorSessions), judges liveness as the
// whole check (prepared.crashed), and counts whether it struck a holder
// (strikeCrashes: a claim live at a crash is in the crash's window or a
// later one, as for pauses). A release that never completes absorbs every
// renew of its process's that completes after its invocation (see
// markRenewals), in whatever window: it is carried per process and key
// (carry.priorForever).
//
// The per-process state of prepare (pairing an
// invocation with its completion by process and f) holds within a window
// since a pending operation keeps its key (or, global, the cut) from
// splitting; a process's operations on other keys may lie in other
// windows, out of time order, which nothing relies on. The holds and the
// violations are sorted at the end (CompareHolds, sortViolations), so their
// order is the whole check's; the fence findings and stale writes spelled
// out under a history-wide cap are the whole check's first ones
// (firstBackwards, firstStale), whichever window found them.
//
// What is not the same: porcupine's bounds (CheckTimeout, and the 50,000
// operations it re-checks in one go after a failed chunk) apply per window,
// so a window check can decide where the whole check ran out and said
// unknown. Memory is a window's, plus the events of keys that do not
// split (a key held all run, a write of unknown outcome that no later read
// settles, a write that read nothing, a key held by a crashed holder of
// a lease that never expires), and of the carried crashes: where a cut is
// never allowed (a client running two operations at once, an event
// prepare refuses), the window grows to the end and memory is what the
// whole check costs.

// windowTarget is how many events a window of the check of a history
// file holds at least before it is cut at the next point allowed. What a
// window derives from its events (calls, claims, holds, maps by key and
// by process and key) is garbage at the next cut, and the collector marks
// the live part of it at every cycle: a window of 16,384 events keeps the
// check's live heap near 12 MB where 65,536 kept it near 31 MB, which
// cost the 1M-event shapes about a tenth of their CPU (collection and the
// page faults of a larger heap) and a history of a fresh key per cycle
// (where the carry's index also lives under the memory limit) about
// half (issue 27). At 8,192 a window's events (850 KB), the copies the
// cutter makes of them and what the window derives of them fit in a
// core's cache (2 MB here) far better: measured ABBA against 16,384 (8
// rounds, on a shared machine), the check of a million keys took 0.88
// of its CPU, the crash shapes 0.81 and 0.88, unmatched 0.92, valid 0.97,
// and every shape less memory; long holds (keys held back across cuts,
// gone through again at each) took 1.02 to 1.09, which the wait for the
// events held back makes up (see checkWindows); 4,096 was no better on a
// million keys and cost long holds 1.08. The windows' fixed costs do not
// show at this size.
const windowTarget = 1 << 13

// checkSource is Check of a history file, read in windows of at least
// target events (see above). A history the windows cannot judge exactly
// (its events out of index order after a cut) is read again and checked
// whole.
func checkSource(ctx context.Context, src history.Source, cfg Config, target int) (Result, error) {
	w := checkWindows(ctx, src, cfg, target, false)
	cfg.Observe = nil // it saw every event once
	if w.noHeal && ctx.Err() == nil {
		// Without a final heal the whole history is the recovery: read it
		// again, following the recovery from its first event (which a
		// history with one does not pay for).
		w = checkWindows(ctx, src, cfg, target, true)
	}
	if ctx.Err() != nil {
		// Stopped: the checkers that had not finished are unknown, as
		// they are when ctx is done during a whole check.
		if w.res.Checkers == nil {
			w.res = checkWhole(ctx, nil, false, cfg)
			w.res.Seen.Complete = false
		}
		w.res.Seen.Truncated = w.truncated
		return w.res, nil
	}
	if w.err != nil || w.exact {
		return w.res, w.err
	}
	h, err := src.ReadAll(ctx)
	if err != nil {
		return Result{Seen: Seen{Truncated: h.Truncated}}, err
	}
	return checkWhole(ctx, h.Ops, h.Truncated, cfg), nil
}

// windowStats says how a history was cut: the windows before the last,
// and how many times a key kept events back at a cut.
type windowStats struct {
	cuts, deferred int
	recovery       int // cuts after the final heal
	maxHeld        int // the most events held back at a cut
}

// windowRun is what checking a history in windows gave: its result, and
// whether it is exact (else the history must be checked whole); whether
// the last line was cut off; the error that stopped the reading; how the
// history was cut.
type windowRun struct {
	res       Result
	exact     bool
	noHeal    bool // cut, and no final heal: the recovery was not followed
	truncated bool
	err       error
	st        windowStats
}

// checkWindows checks the events of src in windows of at least target
// events. fromStart follows liveness's recovery from the first event, as
// a history without a final heal needs; else it is followed from the
// final heal.
//
// A window waits for target fresh events and twice as many again as the
// last cut held back, up to three targets more: every cut goes through
// the events held back again (it copies and merges them, its prepare
// pairs them), so a history whose keys are held back across cuts (long
// holds: 4,000 events at a cut of 8,192 on average, up to 8,190) is cut
// less often, where at 8,192 it took 1.09 of the CPU of 16,384 (0.91 to
// 1.0 so, for 113 MB rather than 76 at its peak; waiting for at most
// 16,384 took 1.09 again); one of fresh keys (a dozen held back) is cut
// at 8,192 (see windowTarget). The bound keeps the windows of a history
// whose held back events grow all run (a key that never splits) within
// four targets, not a multiple of those events.
func checkWindows(ctx context.Context, src history.Source, cfg Config, target int, fromStart bool) windowRun {
	a := newAccumulator(ctx, cfg, cfg.holdLimit())
	a.c.fromStart = fromStart
	cut := newCutter(a.c.pk)
	_, inMemory := src.InMemory()
	cut.validated = !inMemory
	a.c.validated = cut.validated
	var w windowRun
	wait := target // fresh events before the next cut
	w.truncated, w.err = src.Each(ctx, func(op *history.Op) bool {
		if cut.n == 0 {
			a.c.first, a.c.hasFirst = op.Time, true
		}
		a.seen.Add(op)
		if cfg.Observe != nil {
			cfg.Observe(op)
		}
		if cut.since >= wait && cut.ok(op) {
			a.cut(cut, &w.st)
			if !cfg.cutAtTarget {
				wait = target + min(2*cut.heldBack, 3*target)
			}
		}
		cut.observe(op)
		return !cut.disorder || w.st.cuts == 0
	})
	if cut.disorder && w.st.cuts > 0 {
		return w // read again and checked whole
	}
	a.seen.Complete = w.err == nil && ctx.Err() == nil
	a.seen.Truncated = w.truncated
	a.window(cut.rest(), true, 0)
	w.res = a.result()
	// Liveness is judged over the recovery after the final heal, or the
	// whole history without one, which the windows carry (carry.rec) from
	// the final heal, or with fromStart from the first event. An unusable
	// history is judged by its first refusal, which is the whole check's:
	// the cutter cuts no more once it has seen an event prepare refuses.
	w.noHeal = w.st.cuts > 0 && a.c.heal < 0 && a.shared == nil && !fromStart
	w.exact = true
	return w
}

// cut checks the window the cutter may end now, if it holds any event.
func (a *accumulator) cut(cut *cutter, st *windowStats) {
	win, counters, deferred := cut.take()
	if len(win) == 0 {
		return
	}
	a.c.winKeys, a.c.winNames, a.c.winSorted = cut.winKeys, cut.winNames, cut.winSorted
	a.window(win, false, cut.lastTime)
	a.c.winKeys, a.c.winNames, a.c.winSorted = nil, nil, false
	commit(a.c, counters)
	// What the carry keeps of keys at rest (neither held back nor
	// followed by the cutter) may go to its file.
	a.c.pk.evict(func(key string) bool { return cut.keys[key] != nil })
	st.cuts++
	st.deferred += deferred
	st.maxHeld = max(st.maxHeld, cut.heldBack)
	if a.c.heal >= 0 {
		st.recovery++
	}
}

// carry is what the checkers keep of the windows before the current one.
type carry struct {
	pk        *pkStore         // per process and key (see pkCarry)
	reported  caps             // violations spelled out per kind and key
	counter   map[string]int64 // each key's counter at the cut (0 if never written)
	fenceTop  map[string]fenceGrant
	accepted  map[string]int // writes storage accepted, per key
	unknownW  map[string]int // writes of unknown outcome, per key
	lastRead  map[string]Section
	acquired  map[int]bool // processes that acquired
	longest   int64        // the longest lease granted
	unavail   map[string]int64
	heal      int64 // the final heal's time, once a window had it (-1 before)
	first     int64 // the history's first event's time (the recovery's start without a final heal), if hasFirst
	hasFirst  bool
	fromStart bool                 // follow the recovery from the first event (rec), not the final heal
	rec       map[string]*recovery // per key, its acquires since the final heal
	nem       []nemesisEvent       // the nemesis events so far
	faults    []faultExposure      // of each of nem
	pauses    []pauseProbe         // the client pauses so far and whom they struck
	crashes   *crashLog            // the client crashes so far and whom they struck
	orphans   *orphanCarry         // liveness: orphan locks across cuts
	// open is, per key, the claims of crashed holders of leases that never
	// expire, from the windows before: live to the end of the history,
	// which the rules of the windows after read (see cutter.forgone).
	open map[string][]claim
	// keyIDs is prepare's numbering of a window's keys (see indexKeys),
	// empty between windows: kept so that its table is not grown again
	// for every window.
	keyIDs map[string]int32
	// winKeys and winNames are the cutter's numbering of the window's
	// keys (see cutter.winKeys), set while a.window checks the window
	// take made (nil for the last, and for a whole check).
	winKeys  []int32
	winNames []string
	// winSorted: the cutter found the window in index order (see
	// cutter.winSorted).
	winSorted bool
	// validated: the windows' events satisfy Validate (see
	// preparer.validated).
	validated bool
}

// pkCarry is what the carry keeps of one process and key, in one map
// entry: a history has up to clients × keys of them (200,000 for 10
// clients on 20,000 keys), so each is small, and holds no value of the
// history (see priorAcquire): the token of its latest grant (lost-lease
// evidence), the end and grant of its latest claim (stale writes), and
// the orphan carry's calls; and what the cutter follows of it, ahead of
// the windows.
type pkCarry struct {
	priorCalls
	token                string // of the latest grant, if hasToken
	claimEnd, claimGrant int64  // of the latest claim, if hasClaim
	// The cutter's, for the orphan renewals: the index of the completion
	// of the process's latest release (max while in flight; released says
	// there was one), and whether its latest acquire ok came after it.
	relDone int64
	// A release of the windows before that never completes (see
	// prepared.priorForever): its invocation.
	foreverT, foreverI int64
	// spilled is the offset plus one of the record the store read it
	// back from (see pkStore.load), 0 for an entry never in the file.
	spilled int64
	// k is whose entry it is, and h its hash, in the store's memory
	// (see pkStore.m).
	k                  procKey
	h                  uint64
	hasToken, hasClaim bool
	hasForever         bool
	released, held     bool // the cutter's
}

func newCarry(spillDir string, hot int) *carry {
	oc := newOrphanCarry(spillDir)
	if hot > 0 {
		oc.calls.hot, oc.calls.base, oc.calls.top = hot, hot, hot
	}
	return &carry{pk: oc.calls, reported: caps{}, counter: map[string]int64{},
		fenceTop: map[string]fenceGrant{}, accepted: map[string]int{}, unknownW: map[string]int{},
		lastRead: map[string]Section{}, acquired: map[int]bool{}, unavail: map[string]int64{}, orphans: oc,
		heal: -1, rec: map[string]*recovery{}, crashes: newCrashLog(), open: map[string][]claim{}, keyIDs: map[string]int32{}}
}

// recovery is what liveness keeps of one key's recovery period, from the
// final heal on, over the windows it spans: the acquires invoked in it
// (their processes, the first three refused while nobody held the key),
// whether one was granted, and the claim in force at its start.
type recovery struct {
	attempts, oks        int
	procs                []int   // sorted
	failedFree           []int64 // the first three's invocations
	succeeded, permanent bool
	held                 bool
	holder               claim
}

// recoveryOf is key's recovery, made if need be.
func (c *carry) recoveryOf(key string) *recovery { return entry(c.rec, key) }

// entry is m[k], a new zero value put there first if there is none.
func entry[K comparable, V any](m map[K]*V, k K) *V {
	v := m[k]
	if v == nil {
		v = new(V)
		m[k] = v
	}
	return v
}

// priorToken is the token of (proc, key)'s latest grant in the windows
// before.
func (c *carry) priorToken(proc int, key string) (string, bool) {
	if pc := c.pk.get(procKey{proc, key}); pc != nil && pc.hasToken {
		return pc.token, true
	}
	return "", false
}

// priorForever is the invocation of (proc, key)'s release in the windows
// before that never completes.
func (c *carry) priorForever(proc int, key string) (instant, bool) {
	if pc := c.pk.get(procKey{proc, key}); pc != nil && pc.hasForever {
		return instant{pc.foreverT, pc.foreverI}, true
	}
	return instant{}, false
}

// priorClaim is (proc, key)'s latest claim in the windows before, as far
// as staleWrites reads it: its end and grant.
func (c *carry) priorClaim(proc int, key string) (claim, bool) {
	if pc := c.pk.get(procKey{proc, key}); pc != nil && pc.hasClaim {
		return claim{proc: proc, key: key, end: instant{t: pc.claimEnd}, grant: pc.claimGrant}, true
	}
	return claim{}, false
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
	ctx  context.Context
	cfg  Config
	c    *carry
	seen Seen

	counts   map[string]map[string]int
	shared   *CheckResult // the history is unusable
	failed   map[string]CheckResult
	holds    *holdFile
	promise  promisePart
	resource resourcePart
	live     CheckResult // the last window's
	liveVs   []Violation
	cov      Coverage
	covErr   string
	viewIn   map[string]*viewInput // what each refuted key's view is drawn from (Config.Views)
	viewsOff bool                  // the history is too long for views
	// last is the time of the last event of the windows so far: the
	// history's, once the last is checked (see Violation.clippedFrom).
	last int64
}

// newAccumulator starts a check. A windowed one keeps at most holdLimit
// holds in memory (the rest go to a file); a whole one, whose history is
// in memory anyway, keeps them all (holdLimit 0).
func newAccumulator(ctx context.Context, cfg Config, holdLimit int) *accumulator {
	if holdLimit <= 0 {
		holdLimit = math.MaxInt
	}
	return &accumulator{ctx: ctx, cfg: cfg.withDefaults(), c: newCarry(cfg.SpillDir, cfg.carryInMemory), holds: newHoldFile(cfg.SpillDir, holdLimit), counts: map[string]map[string]int{}, failed: map[string]CheckResult{}}
}

// window checks the next window of the history, ops in index order. A
// window before the last reaches until, the time of its cut: the events
// of keys it left for later may end it before then, yet its claims may
// run until then, and the checkers clip at the window's end (p.last).
func (a *accumulator) window(ops []history.Op, last bool, until int64) {
	if a.shared != nil {
		a.addCounts(guardCounts(ops, nil))
		return
	}
	p, byKey, ok := a.prepare(ops, until)
	if !ok {
		return
	}
	a.last = max(a.last, p.last)
	w := window{c: a.c, last: last}
	a.judge(ops, p, byKey, w)
	if a.covErr == "" {
		g := guard(func() (CheckResult, error) {
			a.cov.add(coverage(p, byKey, w))
			return CheckResult{}, nil
		})
		if g.Verdict == Unknown {
			a.covErr = g.Reason
		}
	}
	if p.heal >= 0 {
		// The recovery began here: the windows after this one go on
		// with it (liveness, coverage).
		a.c.heal = p.heal
	}
	a.carryClaims(p)
}

// prepare pairs the window's calls, builds its claims and keeps its holds,
// and counts its completions; false when the history is unusable (every
// checker is then unknown, with the reason).
func (a *accumulator) prepare(ops []history.Op, until int64) (*prepared, map[string][]claim, bool) {
	var p *prepared
	var byKey map[string][]claim
	var hs []Hold
	shared := guard(func() (CheckResult, error) {
		var err error
		p, err = prepareWith(ops, a.c)
		if err != nil {
			return CheckResult{}, err
		}
		a.c.crashes.add(p.crashes)
		p.last = max(p.last, until)
		byKey = buildClaims(p)
		hs = holds(p, byKey)
		return CheckResult{}, nil
	})
	a.addCounts(guardCounts(ops, p))
	if shared.Verdict == Unknown {
		a.shared = &shared
		return nil, nil, false
	}
	a.holds.add(hs...)
	return p, byKey, true
}

// judge runs the three checkers on the window, each guarded (one that
// failed in an earlier window runs no more), and keeps what whoever shows
// the verdict needs of it: the events its violations name, what the views
// of the keys it refuted are drawn from.
func (a *accumulator) judge(ops []history.Op, p *prepared, byKey map[string][]claim, w window) {
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
	var pp promisePart
	var rp resourcePart
	var lvs []Violation
	run(LockPromise, func() { pp = checkPromise(a.ctx, p, byKey, a.cfg, w); a.promise.add(pp) })
	run(Resource, func() { rp = checkResource(a.ctx, p, byKey, a.cfg, w); a.resource.add(rp) })
	run(Liveness, func() {
		cr, vs := checkLiveness(p, byKey, w)
		if w.last {
			a.live, a.liveVs, lvs = cr, vs, vs
		}
	})
	// What the report draws of the window: a failure here costs the
	// picture, never the verdict.
	guard(func() (CheckResult, error) {
		a.seen.name(ops, pp.vs, rp.violations(), lvs)
		a.views(ops, p, byKey, w.last, pp.nonlin, rp.nonlin)
		return CheckResult{}, nil
	})
}

// carryClaims carries what the next windows need of this one's claims and
// calls: the latest claim of each process and key (for stale writes), its
// latest grant's token (an acquire ok, or a renew ok not absorbed:
// markRenewals' rule; for lost-lease evidence), its release that never
// completes, and what the orphan carry keeps of its acquires and releases
// (see orphanCarry). It goes key by key, so that each process and key's
// entry is looked up once a window (pkEntries): a window of a fresh key
// per cycle looked each up five times, in a store too large for the
// cache, which cost more than checking the key.
//
// Why the orphan carry is kept here, after the checkers, rather than by
// findOrphans: it is read by findOrphans alone, which reads the windows
// before this one's, before this call; and once liveness has failed (it
// runs no more) it is never read again, so keeping it then too changes
// nothing.
func (a *accumulator) carryClaims(p *prepared) {
	var ents pkEntries
	for _, wk := range windowKeys(p) {
		ents.reset(a.c.pk, wk.key)
		for _, cl := range wk.claims {
			pc := ents.of(cl.proc).pc
			pc.claimEnd, pc.claimGrant, pc.hasClaim = cl.end.t, cl.grant, true
			if _, dead := p.crashed(cl.proc); dead && cl.end == forever && cl.deadline == never {
				// Live to the end of the history: the windows after
				// read it (see cutter.forgone).
				a.c.open[cl.key] = append(a.c.open[cl.key], cl)
			}
		}
		for _, i := range wk.calls {
			a.carryCall(&p.calls[i], &ents)
		}
	}
	a.c.pk.forgetMade()
}

// carryCall carries what the windows after need of call c (see
// carryClaims); ents are its key's entries.
func (a *accumulator) carryCall(c *call, ents *pkEntries) {
	if c.f == history.FAcquire || c.f == history.FRelease {
		ents.of(c.proc).pc.keep(c)
	}
	if c.f == history.FRelease && !c.completed() {
		// A window before the last holds none that will complete (a
		// pending release keeps its key from splitting, unless its
		// process crashed), and the last has no window after it.
		pc := ents.of(c.proc).pc
		if !pc.hasForever {
			pc.foreverT, pc.foreverI, pc.hasForever = c.start, c.inv, true
		}
	}
	grant := c.typ == history.OK && (c.f == history.FAcquire || (c.f == history.FRenew && !c.absorbed && c.token() != ""))
	if !grant {
		return
	}
	e := ents.of(c.proc)
	if e.granted && c.done <= e.done {
		return // not the latest grant
	}
	e.granted, e.done = true, c.done
	t := c.token()
	if n := len(e.pc.releases); n > 0 && t != "" && e.pc.releases[n-1].token == t {
		t = e.pc.releases[n-1].token // one copy of the lease's token
	}
	e.pc.token, e.pc.hasToken = t, true
}

// pkEntries are one key's entries in the carry, each looked up once
// (made if need be) for a window: a key has one or a few processes.
type pkEntries struct {
	store *pkStore
	key   string
	list  []pkEntry
}

// pkEntry is a process's entry of the key, and the completion of its
// latest grant in the window (if granted).
type pkEntry struct {
	proc    int
	pc      *pkCarry
	done    int64
	granted bool
}

// reset makes e key's, with no entry looked up yet. The list's array is
// kept as it is: the entries it points to are the store's (clearing it
// for every key, with the collector's write barriers, cost a fifth of
// carrying a window of fresh keys), and e lasts one carryClaims.
func (e *pkEntries) reset(store *pkStore, key string) {
	e.store, e.key, e.list = store, key, e.list[:0]
}

// of is proc's entry of the key, made if need be.
func (e *pkEntries) of(proc int) *pkEntry {
	for i := range e.list {
		if e.list[i].proc == proc {
			return &e.list[i]
		}
	}
	e.list = append(e.list, pkEntry{proc: proc, pc: e.store.lately(procKey{proc, e.key})})
	return &e.list[len(e.list)-1]
}

// windowKey is a key of a window, the positions in p.calls of its calls,
// in order, and its claims (buildClaims': byKey's, without looking the
// key up in it again).
type windowKey struct {
	key    string
	calls  []int
	claims []claim
}

// windowKeys is every key p's calls name, in p.keys' order, "" first when
// a call names none (its calls are in no list of p.keyCalls): made once a
// window, so that the steps that go key by key look each key's calls up
// once between them.
func windowKeys(p *prepared) []windowKey {
	if p.wkeys != nil || len(p.calls) == 0 {
		return p.wkeys
	}
	p.wkeys = make([]windowKey, 0, len(p.keys)+1)
	if p.keyless {
		var calls []int
		for i := range p.calls {
			if p.calls[i].key == "" {
				calls = append(calls, i)
			}
		}
		p.wkeys = append(p.wkeys, windowKey{key: "", calls: calls})
	}
	for i, k := range p.keys {
		p.wkeys = append(p.wkeys, windowKey{key: k, calls: p.keyLists[i]})
	}
	return p.wkeys
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
}

// result composes the windows' findings, with what the check saw.
func (a *accumulator) result() Result {
	defer a.c.pk.close()
	res := Result{Checkers: map[string]CheckResult{}, Violations: []Violation{}, Counts: a.counts, Seen: a.seen}
	if a.shared != nil {
		for _, name := range []string{LockPromise, Resource, Liveness} {
			res.Checkers[name] = *a.shared
		}
		res.Verdict = Unknown
		res.Seen.prune(nil, nil)
		return res
	}
	if a.holds.finish() {
		res.Holds = a.holds.mem
	} else {
		res.spilled = a.holds
	}
	a.compose(&res)
	cov := a.cov
	if a.covErr == "" {
		g := guard(func() (CheckResult, error) {
			cov.Faults = faultCoverage(a.c.nem, a.c.faults)
			pauseCoverage(a.c.pauses, &cov.Pauses)
			crashCoverage(a.c.crashes, &cov.Crashes)
			return CheckResult{}, nil
		})
		if g.Verdict == Unknown {
			a.covErr = g.Reason
		}
	}
	judgeExposure(&res, cov, a.covErr, a.cfg)
	judgeDisturbance(&res, res.Seen.Nemesis)
	res.Seen.prune(res.Violations, res.NonLinearizableKeys)
	guard(func() (CheckResult, error) { a.drawViews(&res); return CheckResult{}, nil })
	return res
}

// compose puts each checker's verdict, violations and refuted keys into
// res: the windows' findings, or the failure of a checker that could not
// finish.
func (a *accumulator) compose(res *Result) {
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
	for i := range res.Violations {
		if v := &res.Violations[i]; v.clippedFrom != 0 {
			v.End, v.clippedFrom = min(v.clippedFrom, max(a.last, v.Start)), 0
		}
	}
	sortViolations(res.Violations)
	sort.Strings(res.NonLinearizableKeys)
	res.Verdict = Combine(res.Checkers[LockPromise].Verdict, res.Checkers[Resource].Verdict, res.Checkers[Liveness].Verdict)
}

// checkerRank orders the checkers' violations among equal starts.
var checkerRank = map[string]int{LockPromise: 0, Resource: 1, Liveness: 2}

// sortViolations puts violations in one order whatever windows found
// them in which order: by start, then checker, key, kind, end, events,
// processes and words.
func sortViolations(vs []Violation) {
	slices.SortStableFunc(vs, func(a, b Violation) int {
		return cmp.Or(cmp.Compare(a.Start, b.Start), cmp.Compare(checkerRank[a.Checker], checkerRank[b.Checker]),
			cmp.Compare(a.Key, b.Key), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.End, b.End),
			slices.Compare(a.Events, b.Events), slices.Compare(a.Processes, b.Processes), cmp.Compare(a.Description, b.Description))
	})
}

// cutter follows a history event by event, holds each event back until a
// window may take it, and says where a window may end (see the conditions
// above). Nemesis events, client pauses and client events without a key
// are global: a window takes all of them up to its cut. A key's events are
// the key's: a window takes them up to the key's latest split point (where
// the key alone satisfied conditions 1 to 4), and leaves the rest for a
// later window. It keeps what is pending, open or held back, never what a
// window took.
type cutter struct {
	fresh []history.Op // the events since the last cut, in order
	// freshUsed is how many events of fresh's array the last take left
	// there (they are overwritten by the next ones, not cleared).
	freshUsed int
	// freshKeys is the state of each of fresh's keys, nil for a global
	// event: take finds them there rather than by key again (a window
	// of fresh keys looked a map up for every key).
	freshKeys []*keyState
	win       []history.Op // the last window's events (reused)
	// winKeys is, for each of win's events, its key's number in the
	// window (keyState.id: its place in winNames, which names them), -1
	// for a global event: prepare indexes the window's calls by it (see
	// callKeyIDs) instead of by their keys' strings again.
	winKeys  []int32
	winNames []string
	// winSorted: take found win in index order (see there).
	winSorted bool
	gpending  map[pendKey]bool // global invocations not yet completed
	procs     map[history.Process]*procState
	keys      map[string]*keyState // keys with events held back or state open
	rel       *pkStore             // each process and key's latest acquire and release (relDone, held, released)
	never     bool                 // no cut for the rest of the history
	disorder  bool
	// carried: keys split past a crashed holder's lease that never
	// expires (see forgone): a renewer thread's event on one (its renewals
	// and orphans follow its owner across claims, which the windows after
	// no longer hold) makes the history checked whole.
	carried map[string]bool
	// recentKeys and recentProcs are the entries of keys and procs looked
	// up lately, by slot (a run's few keys and clients recur; hashing them
	// on every event cost more than following them): cleared whenever an
	// entry leaves its map.
	recentKeys  [recentSlots]*keyState
	recentProcs [recentSlots]*procState
	// spare is entries of keys a cut let go (take), for keys to come: a
	// history of a fresh key per cycle made an entry, and a slice of its
	// leases, for every key.
	spare []*keyState
	stay  []*keyState // take's, kept from one cut to the next
	runs  []keyRun
	// validated: every event satisfies Validate (a file's reader refuses
	// one that does not), so observe need not ask again.
	validated bool
	n         int // events observed
	since     int // events observed since the last cut
	heldBack  int // events the last cut held back
	// The last event's time and index.
	lastTime, lastIndex int64
}

// procState is what the cutter follows of one client process, in one map
// entry looked up once per event (a map keyed by process and function,
// and one per process and key, cost a fifth of the check): its invocation
// in flight (a client runs one operation at a time: a second one at once
// ends the cuts), whether it crashed, a renewer's renew in flight, and,
// for an owner, the keys on which it has a read not yet followed by its
// write or a session lease (what its crash closes). An entry that holds
// none of these is dropped at the next cut (sweep), so that processes
// that came and went cost nothing.
type procState struct {
	p        history.Process
	pend     pendOp
	busy     bool
	dead     bool
	renewInv int64 // index of a renewer's renew in flight, 0 for none
	keys     []string
}

// idle reports whether the entry holds nothing the cutter needs.
func (ps *procState) idle() bool {
	return !ps.busy && !ps.dead && ps.renewInv == 0 && len(ps.keys) == 0
}

// pendOp is an invocation in flight: what its completion must match.
type pendOp struct {
	f     string
	key   string
	owner int
	in    *history.Value
}

type pendKey struct {
	p history.Process
	f string
}

// keyState is what the cutter follows of one key: the events held back
// since the key's last split, and what decides where it may split next.
type keyState struct {
	name          string       // the key
	held          []history.Op // the key's events before the last cut a window left
	split         int64        // its events of lower index may be taken: the key was quiet before this one
	splitTop      int64        // the counter's largest value up to the split
	bound         int64        // at a cut, its events of lower index are taken
	seen          bool         // an event of it came since its state was made
	top           int64        // the counter's largest value so far
	pending       int          // invocations on the key not yet completed
	leases        ownerVals    // per owner, the latest deadline of a grant not released
	sessions      map[int]bool // owners whose lease is a session's (history.Value.Session)
	open          ownerVals    // per owner, the value a read returned that no write followed yet
	unsettled     bool         // a write of unknown outcome no read has settled yet
	unsettledRead int64        // the largest value such a write read
	never         bool         // no split for the rest of the history (the counter could be ambiguous, an orphan lock)
	lastTime      int64        // time of the key's latest event
	watched       bool         // a renewer thread (history.Op's Owner) recorded on it
	id            int32        // its number in the latest window take made (see cutter.winKeys)
}

// newCutter is a cutter that keeps what it follows of each process and
// key in pk's entries (the carry's: one map entry per process and key for
// both, as a history has up to clients × keys of them); nil: its own.
func newCutter(pk *pkStore) *cutter {
	if pk == nil {
		pk = newPKStore("")
	}
	return &cutter{gpending: map[pendKey]bool{}, procs: map[history.Process]*procState{},
		keys: map[string]*keyState{}, rel: pk, carried: map[string]bool{}}
}

// recentSlots is the size of the cutter's caches of keys and processes.
const recentSlots = 64

// proc is p's entry, made if need be.
func (c *cutter) proc(p history.Process) *procState {
	slot := int(p) & (recentSlots - 1)
	if ps := c.recentProcs[slot]; ps != nil && ps.p == p {
		return ps
	}
	ps := c.procs[p]
	if ps == nil {
		ps = &procState{p: p}
		c.procs[p] = ps
	}
	c.recentProcs[slot] = ps
	return ps
}

// key is key's state, made if need be.
func (c *cutter) key(key string) *keyState {
	k := c.lookup(key)
	if k == nil {
		k = c.newKey(key)
		c.keys[key] = k
		c.recentKeys[keySlot(key)] = k
	}
	return k
}

// newKey is a new state of key: a spare one, emptied (its leases' and
// open reads' arrays kept), or a new one.
func (c *cutter) newKey(key string) *keyState {
	n := len(c.spare)
	if n == 0 {
		return &keyState{name: key}
	}
	k := c.spare[n-1]
	c.spare[n-1] = nil
	c.spare = c.spare[:n-1]
	*k = keyState{name: key, leases: k.leases[:0], open: k.open[:0]}
	return k
}

// spareKeys bounds cutter.spare: about a window's keys.
const spareKeys = 1 << 13

// lookup is key's state, nil if it has none.
func (c *cutter) lookup(key string) *keyState {
	slot := keySlot(key)
	if k := c.recentKeys[slot]; k != nil && k.name == key {
		return k
	}
	k := c.keys[key]
	if k != nil {
		c.recentKeys[slot] = k
	}
	return k
}

// keySlot is key's place in recentKeys: from its length and last byte,
// which tell a run's keys apart.
func keySlot(key string) int {
	n := len(key)
	if n == 0 {
		return 0
	}
	return (n*31 + int(key[n-1])) & (recentSlots - 1)
}

// sweep drops the entries of processes that hold nothing.
func (c *cutter) sweep() {
	clear(c.recentProcs[:])
	for p, ps := range c.procs {
		if ps.idle() {
			delete(c.procs, p)
		}
	}
}

// relOf is k's entry, made if need be.
func (c *cutter) relOf(k procKey) *pkCarry { return c.rel.at(k) }

// quiet reports whether key k satisfies conditions 1 to 4 at time t:
// nothing pending or open, the counter settled, every lease run out by t
// but those of crashed holders that never expire (forgone).
func (c *cutter) quiet(k *keyState, t int64) bool {
	if k.never || k.pending > 0 || len(k.open) > 0 || k.unsettled {
		return false
	}
	forgone := false
	for _, l := range k.leases {
		if l.v <= t {
			continue
		}
		if !c.forgone(k, l) {
			return false
		}
		forgone = true
	}
	if forgone {
		c.carried[k.name] = true
	}
	return true
}

// forgone reports whether lease l of key k is a crashed holder's that
// never expires, on a key no renewer thread recorded on: its claim never
// ends, and its holder records nothing more, so the key may split past it
// with the claim carried (carry.open) instead of the key's events.
//
// Why that is exact. Its claim C (process P, no deadline, not released:
// a release invocation would have ended the lease here) is live from its
// grant to the end of the history, and P records nothing after its crash
// (else prepare refuses the history, and the cutter cuts no more); its
// renewer threads record nothing on the key either (watched: the history
// is checked whole if one does after the split). So, after the split,
// what the rules read of the key's past beyond what is already carried
// (conditions 1, 3, 4 hold) is C alone:
//   - the lease-mutex model's state at the split is "held by P, never
//     runs out" in every legal linearization of the part before it (C's
//     grant is in it; after it, no other grant, no release ok of another
//     is legal, a give-up or "not held" of another changes nothing, and
//     P has no other operation after its grant: it was alive holding C
//     until its crash), so the part after is checked from that state;
//   - the overlap analysis sees C live through the part after: a later
//     claim of another process overlaps it, a release ok of another lies
//     inside it (findOverlaps and findForeignReleases start with it); P's
//     own findings (lost leases, stale writes) need calls of P, and there
//     are none;
//   - liveness: the time C keeps its key legitimately busy ends at the
//     crash (busySpans), before the split, so nothing after needs it for
//     unavailability; the recovery's holder and "blocked for good" read
//     C in every window that follows the recovery (holdersAtRecovery);
//   - coverage: a fault in force after the split struck C (exposeFaults
//     checks the carried claims too; "struck" is a flag, so a fault that
//     C's own window marked stays marked once); P's pauses and crash all
//     lie in C's window or before it (global events are never held back,
//     and P's crash precedes the split), where C struck them;
//   - what counts C (claims, holds, grants) counts it in its own window
//     only, as every event lies in one window.
//
// Memory is then one claim per crashed holder, not the key's history.
func (c *cutter) forgone(k *keyState, l ownerVal) bool {
	if l.v != never || k.watched {
		return false
	}
	ps := c.procs[history.Process(l.owner)]
	return ps != nil && ps.dead
}

// ok reports whether a window may end before next: the global conditions
// hold (nothing global pending, no crash, next strictly later). Which keys' events the window takes is take's business.
func (c *cutter) ok(next *history.Op) bool {
	return !c.never && c.n > 0 && len(c.gpending) == 0 &&
		next.Time > c.lastTime && next.Index > c.lastIndex
}

// take removes from the cutter the events of a window ending now (after
// c.last; ok said it may), in index order, and the counter values the
// taken keys reach (for commit, once the window is checked). Of each key
// it takes every event when the key is quiet now, and otherwise those
// before its latest split; deferred counts the keys that kept events
// back. The events are valid until the next take.
func (c *cutter) take() (ops []history.Op, counters map[string]int64, deferred int) {
	counters = map[string]int64{}
	clear(c.winNames)
	// The last window's events let go before this one's come: left to be
	// overwritten, they stayed alive through the copying below, and the
	// check's peak memory was a tenth larger.
	clear(c.win)
	win, ids, names := c.win[:0], c.winKeys[:0], c.winNames[:0]
	stay, runs := c.stay[:0], c.runs[:0]
	for key, k := range c.keys {
		k.id = int32(len(names))
		names = append(names, key)
		if c.quiet(k, c.lastTime) {
			k.bound = math.MaxInt64
			if k.top > 0 {
				counters[key] = k.top
			}
		} else {
			deferred++
			k.bound = k.split
			if k.split > 0 && k.splitTop > 0 {
				counters[key] = k.splitTop
			}
			stay = append(stay, k)
		}
		// What earlier cuts left, first: it precedes every fresh event.
		n, _ := slices.BinarySearchFunc(k.held, k.bound, func(op history.Op, b int64) int { return cmp.Compare(op.Index, b) })
		if n == 0 {
			continue
		}
		runs = append(runs, keyRun{k.held[:n], k.id})
		// A fresh slice, so that the taken events' memory goes.
		k.held = append([]history.Op(nil), k.held[n:]...)
	}
	win, ids = mergeKeyRuns(win, ids, runs)
	clear(runs)
	c.runs = runs[:0]
	// Whether win is in index order is asked here, of the events held
	// back (few, but for long holds), and of the fresh ones as they go by
	// below, instead of by prepare of the whole window again (each
	// event's index read once more, a hundred bytes apart: a twentieth
	// of checking a window of fresh keys).
	sorted := slices.IsSortedFunc(win, func(a, b history.Op) int { return cmp.Compare(a.Index, b.Index) })
	last := int64(math.MinInt64)
	if len(win) > 0 {
		last = win[len(win)-1].Index
	}
	// The taken events (global, or of a key before its bound) go in
	// runs, each copied at once: one by one, each event was a copy of a
	// hundred bytes with the collector's barriers.
	from := 0 // the first fresh event not yet in win nor held
	for i := range c.fresh {
		sorted = sorted && c.fresh[i].Index > last
		last = c.fresh[i].Index
		if k := c.freshKeys[i]; k == nil {
			ids = append(ids, -1) // global
		} else if c.fresh[i].Index < k.bound {
			ids = append(ids, k.id) // taken
		} else {
			win = append(win, c.fresh[from:i]...)
			k.held = append(k.held, c.fresh[i])
			from = i + 1
		}
	}
	win = append(win, c.fresh[from:]...)
	// What fresh's array holds past the events it holds now is let go
	// (those are overwritten by the next ones, and held by win meanwhile).
	if n := len(c.fresh); n < c.freshUsed {
		clear(c.fresh[n:c.freshUsed])
	}
	c.freshUsed = len(c.fresh)
	c.fresh = c.fresh[:0]
	clear(c.freshKeys)
	c.freshKeys = c.freshKeys[:0]
	clear(c.recentKeys[:])
	c.heldBack = 0
	c.letGo(stay)
	c.win, c.winKeys, c.winNames, c.winSorted = win, ids, names, sorted
	c.since = 0
	c.sweep()
	return win, counters, deferred
}

// mergeRuns appends to dst the events of runs, each in index order, in
// index order (indexes are distinct: the cutter cuts no more once one
// comes out of order). A merge: sorting their concatenation moved each
// event, a hundred bytes, a dozen times, and a history whose keys are
// held back across cuts (long holds) sorted them at every cut, a fifth
// of its check. runs is reordered and emptied.
func mergeRuns(dst []history.Op, runs [][]history.Op) []history.Op {
	krs := make([]keyRun, len(runs))
	for i, r := range runs {
		krs[i] = keyRun{r, int32(i)}
	}
	dst, _ = mergeKeyRuns(dst, nil, krs)
	return dst
}

// keyRun is a run of one key's events, and the key's number (see
// cutter.winKeys).
type keyRun struct {
	ops []history.Op
	id  int32
}

// mergeKeyRuns is mergeRuns that also appends to ids the number of the
// key of each event it appends to dst.
func mergeKeyRuns(dst []history.Op, ids []int32, runs []keyRun) ([]history.Op, []int32) {
	total := 0
	for _, r := range runs {
		total += len(r.ops)
	}
	dst, ids = slices.Grow(dst, total), slices.Grow(ids, total)
	// h is a min-heap of the runs not empty by their first event's index.
	h := slices.DeleteFunc(runs, func(r keyRun) bool { return len(r.ops) == 0 })
	less := func(i, j int) bool { return h[i].ops[0].Index < h[j].ops[0].Index }
	down := func(i int) {
		for {
			m := 2*i + 1
			if m >= len(h) {
				return
			}
			if r := m + 1; r < len(h) && less(r, m) {
				m = r
			}
			if !less(m, i) {
				return
			}
			h[i], h[m] = h[m], h[i]
			i = m
		}
	}
	for i := len(h)/2 - 1; i >= 0; i-- {
		down(i)
	}
	for len(h) > 1 {
		dst, ids = append(dst, h[0].ops[0]), append(ids, h[0].id)
		if h[0].ops = h[0].ops[1:]; len(h[0].ops) == 0 {
			h[0] = h[len(h)-1]
			h = h[:len(h)-1]
		}
		down(0)
	}
	if len(h) == 1 {
		dst = append(dst, h[0].ops...)
		for range h[0].ops {
			ids = append(ids, h[0].id)
		}
	}
	return dst, ids
}

// letGo drops the keys take found quiet (nothing of them is left to
// follow) and keeps stay, the others. When the quiet are most of them (a
// window of fresh keys), the map is emptied and stay put back: deleting
// each key cost a hash and a probe of it.
func (c *cutter) letGo(stay []*keyState) {
	for _, k := range stay {
		c.heldBack += len(k.held)
		k.split = 0 // taken
	}
	if len(stay) > len(c.keys)/2 {
		for key, k := range c.keys {
			if k.bound == math.MaxInt64 {
				delete(c.keys, key)
				c.spareKey(k)
			}
		}
	} else {
		for _, k := range c.keys {
			if k.bound == math.MaxInt64 {
				c.spareKey(k)
			}
		}
		clear(c.keys)
		for _, k := range stay {
			c.keys[k.name] = k
		}
	}
	clear(stay)
	c.stay = stay[:0]
}

// spareKey keeps k, a key's state nothing points to now (recentKeys is
// clear), for a key to come.
func (c *cutter) spareKey(k *keyState) {
	if len(c.spare) < spareKeys {
		c.spare = append(c.spare, k)
	}
}

// commit carries the counter values a window's keys reached into cr, for
// the windows after it.
func commit(cr *carry, counters map[string]int64) {
	for k, v := range counters {
		cr.counter[k] = max(cr.counter[k], v)
	}
}

// rest is every event not yet taken, in index order: the last window.
// The cutter lets go of its events (the window before's among them), so
// that the last window, which holds the recovery period, is in memory
// once.
func (c *cutter) rest() []history.Op {
	ops := c.fresh
	n := 0
	for _, k := range c.keys {
		n += len(k.held)
	}
	if n > 0 {
		ops = make([]history.Op, 0, n+len(c.fresh))
		for _, k := range c.keys {
			ops = append(ops, k.held...)
		}
		slices.SortFunc(ops, func(a, b history.Op) int { return cmp.Compare(a.Index, b.Index) })
		ops = append(ops, c.fresh...)
	}
	c.fresh, c.freshKeys, c.win, c.keys = nil, nil, nil, nil
	c.winKeys, c.winNames = nil, nil
	clear(c.recentKeys[:])
	return ops
}

// global reports whether op belongs to no key's events: a nemesis event,
// or a client pause (whose exposure asks which keys its process held, see
// coverage) or crash. A client event that names no key is the key "":
// prepare judges such calls together as one lock, so the cutter follows
// their claims as any key's (TestWindowedKeylessClaims).
func isGlobal(op *history.Op) bool {
	return op.Process.IsNemesis() || op.F == history.FPause || op.F == history.FCrash
}

// observe follows op and holds it back (a copy: op is the reader's).
func (c *cutter) observe(op *history.Op) {
	if c.n > 0 && (op.Index <= c.lastIndex || op.Time < c.lastTime) {
		c.disorder, c.never = true, true
	}
	ps := c.proc(op.Process)
	if !c.validated && op.Validate() != nil || ps.dead && op.F != history.FCrash {
		// prepare refuses it: the window that holds it must hold
		// everything after it, and the whole check's first refusal.
		c.never = true
	}
	c.n++
	c.since++
	c.lastTime, c.lastIndex = op.Time, op.Index
	c.fresh = append(c.fresh, *op)
	if isGlobal(op) {
		c.freshKeys = append(c.freshKeys, nil)
		c.observeGlobal(op, ps)
		return
	}
	k := c.key(op.Key)
	c.freshKeys = append(c.freshKeys, k)
	if k.seen && c.quiet(k, op.Time-1) && k.lastTime < op.Time {
		// Quiet just before op, strictly earlier: a split point.
		k.split, k.splitTop = op.Index, k.top
	}
	k.seen = true
	k.lastTime = op.Time
	c.observeKey(k, op, ps)
}

// observeGlobal follows a global event; ps is its process's entry.
func (c *cutter) observeGlobal(op *history.Op, ps *procState) {
	pk := pendKey{op.Process, op.F}
	if op.F == history.FCrash {
		if op.Type != history.Invoke {
			c.crash(op.Process, ps)
		}
		return
	}
	if op.Type == history.Invoke {
		if !op.Process.IsNemesis() {
			c.invoke(ps, pendOp{f: op.F, key: op.Key, owner: int(op.Process), in: op.Value})
		}
		c.gpending[pk] = true
		return
	}
	delete(c.gpending, pk)
	if !op.Process.IsNemesis() {
		c.complete(op, ps, int(op.Process))
	}
}

// crash follows client process p's crash (see the argument above): its
// operations in flight will never complete (an unknown write may still
// land: it is followed as one; an unknown release ended its claim at its
// invocation; an unknown acquire, renew or read grants or shows nothing),
// its reads will never be followed by a write, and its session leases end
// here. Its other leases run until their deadlines, as they would.
func (c *cutter) crash(p history.Process, ps *procState) {
	if ps.dead {
		return
	}
	ps.dead = true
	if ps.busy {
		po := ps.pend
		// The entry outlives the crash (dead): it must not keep the
		// invocation's value, which would keep alive the decoder's whole
		// slab of values around it (a history of many crashes with an
		// operation in flight grew by a slab per crash).
		ps.busy, ps.pend = false, pendOp{}
		pk := pendKey{p, po.f}
		if c.gpending[pk] {
			delete(c.gpending, pk)
		} else if k := c.keys[po.key]; k != nil {
			k.pending--
			if po.f == history.FWrite {
				k.wrote(&history.Op{Type: history.Info, F: history.FWrite, Key: po.key}, po.owner, po.in)
			}
		}
	}
	for _, key := range ps.keys {
		if k := c.keys[key]; k != nil {
			k.open.del(int(p))
			if k.sessions[int(p)] {
				// Ended here, by a release that never completes
				// (endSessions).
				k.leases.del(int(p))
				delete(k.sessions, int(p))
				r := c.relOf(procKey{int(p), key})
				r.held, r.released, r.relDone = false, true, math.MaxInt64
			}
		}
	}
	ps.keys = nil
}

// track notes that owner has a read open or a session lease on key; untrack
// that it may no longer have either.
func (c *cutter) track(owner int, key string) {
	ps := c.proc(history.Process(owner))
	if !slices.Contains(ps.keys, key) {
		ps.keys = append(ps.keys, key)
	}
}

func (c *cutter) untrack(owner int, key string, k *keyState) {
	if _, open := k.open.get(owner); open || k.sessions[owner] {
		return
	}
	ps := c.procs[history.Process(owner)]
	if ps == nil {
		return
	}
	if i := slices.Index(ps.keys, key); i >= 0 {
		last := len(ps.keys) - 1
		ps.keys[i] = ps.keys[last]
		ps.keys[last] = ""
		ps.keys = ps.keys[:last]
	}
}

// invoke notes a client invocation.
func (c *cutter) invoke(ps *procState, p pendOp) {
	if ps.busy {
		// Two operations of one client at once (prepare refuses a second
		// of the same f, and no cut may pair them).
		c.never = true
	}
	ps.busy, ps.pend = true, p
}

// complete notes a client completion and returns its invocation's value;
// one prepare would refuse (no invocation, another key or owner) ends
// the cuts.
func (c *cutter) complete(op *history.Op, ps *procState, owner int) *history.Value {
	in := ps.pend
	if !ps.busy || in.f != op.F || in.key != op.Key || in.owner != owner {
		c.never = true
	}
	ps.busy, ps.pend = false, pendOp{}
	return in.in
}

// observeKey follows a client event on key k; ps is its process's entry.
func (c *cutter) observeKey(k *keyState, op *history.Op, ps *procState) {
	owner := int(op.Process)
	if op.Owner != nil {
		owner = int(*op.Owner)
		k.watched = true
		if c.carried[op.Key] {
			// A renewer thread on a key split past a crashed holder's
			// claim (see forgone): check the history whole.
			c.disorder, c.never = true, true
		}
	}
	pk := procKey{owner, op.Key}
	if op.Type == history.Invoke {
		c.invokeKey(k, op, ps, owner, pk)
		return
	}
	if op.F == history.FRelease {
		r := c.relOf(pk)
		r.released, r.relDone = true, op.Index
	}
	if ps.busy && ps.pend.f == op.F {
		k.pending--
	}
	in := c.complete(op, ps, owner)
	switch op.F {
	case history.FAcquire, history.FRenew:
		if op.Type == history.OK {
			c.granted(k, op, ps, owner, pk)
		}
	case history.FRead:
		if op.Type == history.OK && op.Value != nil && op.Value.Counter != nil {
			k.read(owner, *op.Value.Counter)
			c.track(owner, op.Key)
		}
	case history.FWrite:
		k.wrote(op, owner, in)
		c.untrack(owner, op.Key, k)
	}
	if op.F == history.FRenew {
		ps.renewInv = 0
	}
}

// invokeKey follows a client invocation on key k.
func (c *cutter) invokeKey(k *keyState, op *history.Op, ps *procState, owner int, pk procKey) {
	c.invoke(ps, pendOp{f: op.F, key: op.Key, owner: owner, in: op.Value})
	k.pending++
	switch op.F {
	case history.FRelease:
		// The claim ends here, and so does the section of a read not
		// yet followed by its write (see sections).
		k.leases.del(owner)
		delete(k.sessions, owner)
		k.open.del(owner)
		c.untrack(owner, op.Key, k)
		r := c.relOf(pk)
		r.held, r.released, r.relDone = false, true, math.MaxInt64
	case history.FRenew:
		ps.renewInv = op.Index
	}
}

// granted follows an acquire or renew ok on key k: the lease it grants
// (until its deadline) keeps k from splitting.
func (c *cutter) granted(k *keyState, op *history.Op, ps *procState, owner int, pk procKey) {
	// A renewer's renewal invoked after its process let go (its release
	// had completed, or it never held) is an orphan lock (see
	// findOrphans), a bug: its episodes merge across claims in ways
	// windows cannot follow, so the key splits no more (its events then
	// wait for the last window). A renewal concurrent with the release is
	// absorbed by it and no orphan.
	// (The entry is looked up once: an acquire's is made if need be, a
	// renewal's is only read.)
	if op.F == history.FAcquire {
		c.relOf(pk).held = true
	} else if op.Owner != nil {
		if r := c.rel.get(pk); r == nil || !r.held && (!r.released || ps.renewInv > r.relDone) {
			k.never = true
		}
	}
	d := int64(never)
	if op.Value != nil && op.Value.Deadline != 0 {
		d = op.Value.Deadline
	}
	if cur, ok := k.leases.get(owner); ok {
		d = max(d, cur)
	}
	k.leases.set(owner, d)
	if op.F == history.FAcquire && op.Value != nil && op.Value.Session {
		if k.sessions == nil {
			k.sessions = map[int]bool{}
		}
		k.sessions[owner] = true
		c.track(owner, op.Key)
	}
}

// read follows a read of the counter that returned v: a section is open
// until its write.
func (k *keyState) read(owner int, v int64) {
	k.open.set(owner, v)
	k.top = max(k.top, v)
	if k.unsettled && v > k.unsettledRead {
		k.unsettled = false // every unknown write on the key took effect or never will
	}
}

// wrote follows the completion of a write (invoked with in): it closes
// the section, and what it wrote, or may have, decides whether the
// counter's value at a split is certain.
func (k *keyState) wrote(op *history.Op, owner int, in *history.Value) {
	read, hasRead := k.open.get(owner)
	k.open.del(owner)
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
		k.never = true // the counter's value at a split could be ambiguous
		return
	}
	if op.Type == history.OK {
		k.top = max(k.top, wrote)
		return
	}
	// Unknown: it may take effect later, until a read shows the counter
	// past the value it needs.
	if !k.unsettled || read > k.unsettledRead {
		k.unsettledRead, k.unsettled = read, true
	}
}

// ownerVals is a value per owner: the leases and the open reads of one
// key, which are one or two at a time (mutual exclusion), looked up by
// going through them rather than hashing (a map per key cost more to make,
// look up and range over than all the rest of following a key).
type ownerVals []ownerVal

type ownerVal struct {
	owner int
	v     int64
}

// get is owner's value.
func (o ownerVals) get(owner int) (int64, bool) {
	for _, e := range o {
		if e.owner == owner {
			return e.v, true
		}
	}
	return 0, false
}

// set makes v owner's value.
func (o *ownerVals) set(owner int, v int64) {
	for i := range *o {
		if (*o)[i].owner == owner {
			(*o)[i].v = v
			return
		}
	}
	*o = append(*o, ownerVal{owner, v})
}

// del removes owner's value, if any.
func (o *ownerVals) del(owner int) {
	for i, e := range *o {
		if e.owner == owner {
			last := len(*o) - 1
			(*o)[i] = (*o)[last]
			*o = (*o)[:last]
			return
		}
	}
}
