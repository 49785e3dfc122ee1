package checker

import (
	"context"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/lockharness/lockharness/history"
)

// Config tunes Check. The zero value is usable.
type Config struct {
	// Timeout bounds each porcupine check (per key, per model); when it
	// runs out the checker is Unknown, never Valid. Default 10s.
	Timeout time.Duration
	// Require is the exposure the run must have reached (a fault striking
	// a holder, a pause outliving a lease) for a valid verdict to stand;
	// at least one grant is always required. Unmet, a valid verdict
	// becomes unknown, with the reasons in Result.Vacuous.
	Require []Requirement
	// AllowVacuous keeps a valid verdict valid when a requirement is
	// unmet; Result.Vacuous still says which.
	AllowVacuous bool
	// SpillDir is where the windowed check of a history file keeps the
	// holds of a long history, past the first 65,536, and what it carries
	// of each process and key at rest, past the first 65,536 (see
	// pkStore): in files it removes as soon as it has opened them. Empty
	// is the system's temporary directory.
	SpillDir string
	// HoldsInMemory is how many holds the windowed check keeps in memory
	// before it writes them to SpillDir; 0 is 65,536 (about 4 MB).
	HoldsInMemory int
	// Views keeps, for each key porcupine refutes, porcupine's view of it
	// (Result.View), the picture the report draws, when the history has at
	// most MaxViewEvents events. The porcupine runs behind the views come
	// after the verdict, each bounded by ten seconds.
	Views bool

	// Observe, when set, is given every event of the history as the
	// check reads it, in order, once (also when the check reads a history
	// again: the observer does not see it twice), and valid only during
	// the call: so that whoever draws the verdict (reports.Digest) need
	// not read the history again.
	Observe func(*history.Op)

	// carryInMemory is pkHot for tests, fixed (0: pkHot, which may grow
	// to pkHotMax: see pkStore.grow).
	carryInMemory int
	// cutAtTarget cuts a history file's windows at the target's events
	// whatever the cut before held back (see checkWindows): a test's
	// target of 1 cuts at every point allowed.
	cutAtTarget bool
}

// holdLimit is how many holds a check keeps in memory before it writes
// them to a file.
func (c Config) holdLimit() int {
	if c.HoldsInMemory > 0 {
		return c.HoldsInMemory
	}
	return holdsInMemory
}

func (c Config) withDefaults() Config {
	if c.Timeout <= 0 {
		c.Timeout = 10 * time.Second
	}
	return c
}

// Checker names, the keys of Result.Checkers.
const (
	LockPromise = "lock-promise"
	Resource    = "resource"
	Liveness    = "liveness"
)

// Check judges the history src with the three checkers of DESIGN.md and
// composes their verdicts. A history file is read in windows, so that the
// memory of the check does not grow with the length of the history (see
// stream.go); events in memory are checked whole. The result keeps, in
// Seen, what the check saw that whoever shows the verdict needs: the
// nemesis events, the events the violations name, porcupine's views
// (Config.Views).
//
// It never panics: a checker that panics, runs out of time or is
// cancelled is Unknown, and an unusable history makes every checker
// Unknown with the reason. When ctx is done the reading stops and the
// checkers that had not finished are unknown. err is for a history file
// that cannot be read (a missing file, a line that is not an event).
func Check(ctx context.Context, src history.Source, cfg Config) (Result, error) {
	if ops, ok := src.InMemory(); ok {
		return checkWhole(ctx, ops, src.Truncated(), cfg), nil
	}
	return checkSource(ctx, src, cfg, windowTarget)
}

// checkWhole checks the whole history ops at once.
func checkWhole(ctx context.Context, ops []history.Op, truncated bool, cfg Config) Result {
	a := newAccumulator(ctx, cfg, 0)
	for i := range ops {
		a.seen.Add(&ops[i])
		if cfg.Observe != nil {
			cfg.Observe(&ops[i])
		}
	}
	a.seen.Complete, a.seen.Truncated = true, truncated
	a.window(ops, true, 0)
	return a.result()
}

// judgeExposure records the coverage and, when a valid verdict rests on
// none of the required exposure, makes it unknown with the reasons. An
// invalid verdict stays invalid: a violation is a fact whatever else the
// run missed.
func judgeExposure(res *Result, cov Coverage, covErr string, cfg Config) {
	if covErr != "" {
		res.Verdict, res.Reason = Unknown, "coverage: "+covErr
		return
	}
	g := guard(func() (CheckResult, error) {
		res.Coverage = cov
		res.Vacuous = vacuous(res.Coverage, res.Counts, cfg.Require)
		return CheckResult{}, nil
	})
	if g.Verdict == Unknown {
		res.Verdict, res.Reason = Unknown, "coverage: "+g.Reason
		return
	}
	if res.Verdict == Valid && len(res.Vacuous) > 0 && !cfg.AllowVacuous {
		res.Verdict = Unknown
		res.Reason = VacuousPrefix + strings.Join(res.Vacuous, "; ")
	}
}

// guard runs one checker, turning an error or a panic into Unknown.
func guard(f func() (CheckResult, error)) (out CheckResult) {
	defer func() {
		if r := recover(); r != nil {
			out = CheckResult{Verdict: Unknown, Reason: fmt.Sprintf("checker panicked: %v\n%s", r, debug.Stack())}
		}
	}()
	cr, err := f()
	if err != nil {
		return CheckResult{Verdict: Unknown, Reason: err.Error()}
	}
	return cr
}

func guardCounts(ops []history.Op, p *prepared) (out map[string]map[string]int) {
	defer func() {
		if recover() != nil {
			out = map[string]map[string]int{}
		}
	}()
	return counts(ops, p)
}

// checkPromise judges the lock promise twice: by the overlap analysis of
// claims (exact, and it names the processes) and by porcupine on the
// lease-mutex model. They encode one definition; a disagreement is
// reported, never hidden.
func checkPromise(ctx context.Context, p *prepared, byKey map[string][]claim, cfg Config, w window) promisePart {
	f := analyseClaimsCapped(p, byKey, w.c.reported, w.c.open)
	stats := map[string]float64{
		"claims":           0,
		"overlaps":         float64(f.overlapping),
		"foreign-releases": float64(f.foreignReleases),
		"lost-leases":      float64(f.lostLeases),
	}
	// Counted as ints, and each stat set once: a window of thousands
	// of keys looked each up in the map for every key (the sums are
	// exact either way, far below 2^53).
	claims := 0
	if claimsOf(p, byKey) {
		for _, wk := range windowKeys(p) { // the same claims, not through the map
			claims += len(wk.claims)
		}
	} else {
		for _, cs := range byKey {
			claims += len(cs)
		}
	}
	stats["claims"] = float64(claims)
	vs := f.violations
	violatedKeys := map[string]bool{}
	for _, v := range vs {
		violatedKeys[v.Key] = true
	}

	var nonlin, unknownReasons, disagree []string
	// A key's result is small where it is linearizable by the sequential
	// check, as most keys are (nil: Ok): a window of thousands of keys
	// made a slice of porcupine's results, a hundred bytes each, every
	// window.
	type keyResult struct {
		lr  *linResult
		ops int
	}
	// Each key's inputs in an array reused from key to key (nothing
	// keeps them: boxing copies them), one per goroutine of eachKey.
	bufs := sync.Pool{New: func() any { return new([]leaseInput) }}
	deadline := time.Now().Add(cfg.Timeout)
	// Each key's calls, beside p.keys (windowKeys puts the keyless
	// calls, in no key of p.keys, first).
	wks := windowKeys(p)
	wks = wks[len(wks)-len(p.keys):]
	results := eachKey(p.keys, func(i int, key string) keyResult {
		buf := bufs.Get().(*[]leaseInput)
		defer bufs.Put(buf)
		calls := wks[i].calls
		if wks[i].key != key {
			calls = p.callsOf(key) // a guard: windowKeys lists p.keys in order
		}
		init, ins := openState(w.c.open[key]), leaseInputs(*buf, p, calls, false)
		*buf = ins
		if sequentialLease(ctx, init, ins, deadline) {
			return keyResult{nil, len(ins)}
		}
		ops := boxLeaseOps(ins)
		lr := checkOwnModel(ctx, leaseModel(init), ops, cfg.Timeout)
		return keyResult{&lr, len(ops)}
	})
	porcupineOps := 0
	for i, key := range p.keys {
		lr := linResult{res: porcupine.Ok}
		if r := results[i].lr; r != nil {
			lr = *r
		}
		porcupineOps += results[i].ops
		switch lr.res {
		case porcupine.Illegal:
			nonlin = append(nonlin, key)
			if !violatedKeys[key] {
				v := Violation{Checker: LockPromise, Kind: KindNonLinearizable, Key: key, Fatal: true,
					Description: fmt.Sprintf("porcupine found no linearization of %s under the lease-mutex model, yet the overlap analysis found nothing: the two definitions disagree (a checker bug; please report it with this history)", key)}
				if op, ok := firstUnplaced(lr); ok {
					in := op.Input.(LeaseOp)
					v.Processes, v.Start, v.End, v.Events = []int{in.Process}, in.Return, min(in.Return, p.last), []int64{op.Call}
				}
				vs = append(vs, v)
			}
		case porcupine.Unknown:
			if !violatedKeys[key] {
				unknownReasons = append(unknownReasons, fmt.Sprintf("%s: %s", key, lr.reason))
			} else {
				// The overlap analysis encodes the model's definition
				// (property-tested): its violation refutes the model too.
				nonlin = append(nonlin, key)
			}
		default:
			if violatedKeys[key] {
				disagree = append(disagree, key)
			}
		}
	}
	if len(p.keys) > 0 {
		stats["porcupine-ops"] += float64(porcupineOps)
	}

	return promisePart{stats: stats, vs: vs, nonlin: nonlin, unknown: unknownReasons, disagree: disagree}
}

// openState is the lease-mutex state a key's part after a split begins
// in, when the windows before carry claims of crashed holders that never
// end on it (open): held by the latest of them, for good (see
// cutter.forgone; two of them on one key refuted it already, and every
// later grant or release ok is illegal in either state). Free without.
func openState(open []claim) LeaseState {
	if len(open) == 0 {
		return leaseFree
	}
	s := leaseFree
	s.Holder, s.Deadline = open[len(open)-1].proc, never
	return s
}

// promisePart is what checkPromise found in one window of a history;
// the windows' parts add up to the history's (see result).
type promisePart struct {
	stats                     map[string]float64
	vs                        []Violation
	nonlin, unknown, disagree []string
}

// add joins a later window's part to p.
func (p *promisePart) add(q promisePart) {
	if p.stats == nil {
		p.stats = map[string]float64{}
	}
	for k, v := range q.stats {
		p.stats[k] += v
	}
	p.vs = append(p.vs, q.vs...)
	p.nonlin = sortedUnion(p.nonlin, q.nonlin)
	p.unknown = keyReasons(p.unknown, q.unknown)
	p.disagree = sortedUnion(p.disagree, q.disagree)
}

// disagreeing is the keys of disagree (porcupine linearized a window of
// the key where the overlap analysis found a violation) that no window's
// porcupine refuted (nonlin). A whole check runs porcupine once per key,
// so no key is in both. A window runs it on the window's events alone,
// while the overlap analysis also reads what the windows before carried
// (an earlier grant's token, a claim left open): a window can hold the
// violation and not all of porcupine's evidence, and then another window
// holds the rest; the history's key is refuted, as the whole check
// finds, and is no disagreement.
func disagreeing(disagree, nonlin []string) []string {
	var out []string
	for _, k := range disagree {
		if !slices.Contains(nonlin, k) {
			out = append(out, k)
		}
	}
	return out
}

// result is the lock-promise verdict of the part.
func (p promisePart) result() CheckResult {
	stats := p.stats
	res := CheckResult{Verdict: Valid, Stats: stats}
	switch {
	case len(p.vs) > 0:
		res.Verdict = Invalid
		res.Reason = fmt.Sprintf("%d overlapping claims, %d foreign releases, %d lost leases", int(stats["overlaps"]), int(stats["foreign-releases"]), int(stats["lost-leases"]))
		if len(p.nonlin) > 0 {
			res.Reason += "; not linearizable: " + strings.Join(p.nonlin, ", ")
		}
		if d := disagreeing(p.disagree, p.nonlin); len(d) > 0 {
			// The overlap analysis names what it found; porcupine's
			// disagreement means one definition drifted: say so.
			res.Reason += "; porcupine found a linearization anyway for " + strings.Join(d, ", ") + " (the definitions disagree: a checker bug)"
		}
	case len(p.unknown) > 0:
		res.Verdict = Unknown
		res.Reason = joinReasons(p.unknown)
	}
	return res
}

// sortedUnion is the keys of a and b, each once, sorted.
func sortedUnion(a, b []string) []string {
	out := appendNew(a, b...)
	slices.Sort(out)
	return out
}

// keyReasons joins two lists of "key: reason", sorted by key, keeping the
// first reason given for each key.
func keyReasons(a, b []string) []string {
	key := func(r string) string { k, _, _ := strings.Cut(r, ": "); return k }
	out := slices.Clone(a)
	for _, r := range b {
		if !slices.ContainsFunc(out, func(o string) bool { return key(o) == key(r) }) {
			out = append(out, r)
		}
	}
	slices.SortStableFunc(out, func(x, y string) int { return strings.Compare(key(x), key(y)) })
	return out
}

// appendNew appends each of vs not already in out.
func appendNew(out []string, vs ...string) []string {
	for _, v := range vs {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

func joinReasons(rs []string) string {
	const show = 5
	if len(rs) > show {
		return strings.Join(rs[:show], "; ") + fmt.Sprintf("; and %d more keys", len(rs)-show)
	}
	return strings.Join(rs, "; ")
}
