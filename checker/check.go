package checker

import (
	"context"
	"fmt"
	"runtime/debug"
	"sort"
	"strings"
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

// Check judges a history with the three checkers of DESIGN.md and composes
// their verdicts. It never panics: a checker that panics, runs out of time
// or is cancelled is Unknown, and an unusable history makes every checker
// Unknown with the reason.
func Check(ctx context.Context, ops []history.Op, cfg Config) Result {
	cfg = cfg.withDefaults()
	res := Result{Checkers: map[string]CheckResult{}, Violations: []Violation{}}

	var p *prepared
	var byKey map[string][]claim
	shared := guard(func() (CheckResult, error) {
		var err error
		p, err = prepare(ops)
		if err != nil {
			return CheckResult{}, err
		}
		byKey = buildClaims(p)
		res.Holds = holds(p, byKey)
		return CheckResult{}, nil
	})
	res.Counts = guardCounts(ops, p)
	if shared.Verdict == Unknown {
		for _, name := range []string{LockPromise, Resource, Liveness} {
			res.Checkers[name] = shared
		}
		res.Verdict = Unknown
		return res
	}

	nonlin := map[string]bool{}
	run := func(name string, f func() (CheckResult, []Violation, []string)) {
		var vs []Violation
		var keys []string
		cr := guard(func() (CheckResult, error) {
			if err := ctx.Err(); err != nil {
				return CheckResult{}, fmt.Errorf("cancelled before it ran: %w", context.Cause(ctx))
			}
			var cr CheckResult
			cr, vs, keys = f()
			return cr, nil
		})
		res.Checkers[name] = cr
		res.Violations = append(res.Violations, vs...)
		for _, k := range keys {
			nonlin[k] = true
		}
	}
	run(LockPromise, func() (CheckResult, []Violation, []string) { return checkPromise(ctx, p, byKey, cfg) })
	run(Resource, func() (CheckResult, []Violation, []string) { return checkResource(ctx, p, byKey, cfg) })
	run(Liveness, func() (CheckResult, []Violation, []string) {
		cr, vs := checkLiveness(p, byKey)
		return cr, vs, nil
	})

	sort.SliceStable(res.Violations, func(i, j int) bool { return res.Violations[i].Start < res.Violations[j].Start })
	for k := range nonlin {
		res.NonLinearizableKeys = append(res.NonLinearizableKeys, k)
	}
	sort.Strings(res.NonLinearizableKeys)
	res.Verdict = Combine(res.Checkers[LockPromise].Verdict, res.Checkers[Resource].Verdict, res.Checkers[Liveness].Verdict)
	judgeExposure(&res, p, byKey, cfg)
	return res
}

// judgeExposure records the coverage and, when a valid verdict rests on
// none of the required exposure, makes it unknown with the reasons. An
// invalid verdict stays invalid: a violation is a fact whatever else the
// run missed.
func judgeExposure(res *Result, p *prepared, byKey map[string][]claim, cfg Config) {
	g := guard(func() (CheckResult, error) {
		res.Coverage = coverage(p, byKey)
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
func checkPromise(ctx context.Context, p *prepared, byKey map[string][]claim, cfg Config) (CheckResult, []Violation, []string) {
	f := analyseClaims(p, byKey)
	stats := map[string]float64{
		"claims":           0,
		"overlaps":         float64(f.overlapping),
		"foreign-releases": float64(f.foreignReleases),
		"lost-leases":      float64(f.lostLeases),
	}
	for _, cs := range byKey {
		stats["claims"] += float64(len(cs))
	}
	vs := f.violations
	violatedKeys := map[string]bool{}
	for _, v := range vs {
		violatedKeys[v.Key] = true
	}

	var nonlin, unknownReasons, disagree []string
	type keyResult struct {
		lr  linResult
		ops int
	}
	results := eachKey(p.keys, func(key string) keyResult {
		ops := leaseOps(p, key, false)
		return keyResult{checkLinearizable(ctx, LeaseMutexModel(), ops, cfg.Timeout), len(ops)}
	})
	for i, key := range p.keys {
		lr := results[i].lr
		stats["porcupine-ops"] += float64(results[i].ops)
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

	res := CheckResult{Verdict: Valid, Stats: stats}
	switch {
	case len(vs) > 0:
		res.Verdict = Invalid
		res.Reason = fmt.Sprintf("%d overlapping claims, %d foreign releases, %d lost leases", f.overlapping, f.foreignReleases, f.lostLeases)
		if len(nonlin) > 0 {
			res.Reason += "; not linearizable: " + strings.Join(nonlin, ", ")
		}
		if len(disagree) > 0 {
			// The overlap analysis names what it found; porcupine's
			// disagreement means one definition drifted: say so.
			res.Reason += "; porcupine found a linearization anyway for " + strings.Join(disagree, ", ") + " (the definitions disagree: a checker bug)"
		}
	case len(unknownReasons) > 0:
		res.Verdict = Unknown
		res.Reason = joinReasons(unknownReasons)
	}
	return res, vs, nonlin
}

func joinReasons(rs []string) string {
	const show = 5
	if len(rs) > show {
		return strings.Join(rs[:show], "; ") + fmt.Sprintf("; and %d more keys", len(rs)-show)
	}
	return strings.Join(rs, "; ")
}
