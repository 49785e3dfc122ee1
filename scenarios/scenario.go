// Package scenarios is the catalogue of named, deterministic anomalies from
// the literature on Redis locks: each one a scripted fault schedule over the
// same locks, nemeses and checkers as a random `harness run`, with the
// verdict it must produce, where the argument comes from, and what happened
// in plain words. The catalogue is the harness's acceptance suite: a
// scenario that stops reproducing its verdict is a bug somewhere.
package scenarios

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/registry"
	lockrun "github.com/lockharness/lockharness/run"
	"github.com/lockharness/lockharness/sut"
)

// Checkers are the checker names a scenario has an expectation for, in the
// order they are shown.
var checkerNames = [...]string{checker.LockPromise, checker.Resource, checker.Liveness}

// Checkers returns the checker names every scenario is judged on.
func Checkers() []string { return checkerNames[:] }

// Expect is the verdict a scenario must produce from each checker. Every
// checker has one: a scenario about a broken lock promise still says what
// it expects of the resource (two holders at once usually lose an update
// too) and of liveness, so nothing is left to a default.
type Expect struct {
	LockPromise checker.Verdict
	Resource    checker.Verdict
	Liveness    checker.Verdict
}

// Of returns the expected verdict of the named checker.
func (e Expect) Of(name string) checker.Verdict {
	switch name {
	case checker.LockPromise:
		return e.LockPromise
	case checker.Resource:
		return e.Resource
	case checker.Liveness:
		return e.Liveness
	}
	return ""
}

// Map is the expectation as the run's metadata records it: the checkers
// it declares a verdict for (all three, but for a lock of a kind whose
// prediction leaves some out).
func (e Expect) Map() map[string]string {
	out := map[string]string{}
	for _, n := range checkerNames {
		if v := e.Of(n); v != "" {
			out[n] = string(v)
		}
	}
	return out
}

// String names the invalid checkers ("lock-promise invalid, resource
// invalid"), or "valid" when none is; an expectation that leaves checkers
// out says so ("resource invalid; others judged as a run").
func (e Expect) String() string {
	var bad []string
	partial := false
	for _, n := range checkerNames {
		switch v := e.Of(n); v {
		case checker.Valid:
		case "":
			partial = true
		default:
			bad = append(bad, n+" "+string(v))
		}
	}
	switch {
	case partial && len(bad) == 0 && len(e.Map()) == 0:
		return "no prediction: judged as a run"
	case partial && len(bad) == 0:
		return "valid where declared; others judged as a run"
	case partial:
		return strings.Join(bad, ", ") + "; others judged as a run"
	case len(bad) == 0:
		return "valid"
	}
	return strings.Join(bad, ", ")
}

var (
	valid   = checker.Valid
	invalid = checker.Invalid
)

// Scenario is one entry of the catalogue.
type Scenario struct {
	// Name is how the scenario is run: `harness scenario run NAME`.
	Name string
	// Lock is the lock under test (a name in locks.Builtin, or in
	// Run.Registry when the scenario has one).
	Lock string
	// Summary is one line for `harness scenario list`.
	Summary string
	// Source is where the argument comes from: paper or page, and section.
	Source string
	// Explanation says what happens, why, and what fixes it, in plain
	// words; it is printed after the run and shown in the report.
	Explanation string
	// Expect is the verdict of each checker.
	Expect Expect
	// Run is the configuration of the run, script included, without the
	// fields RunConfig fills in (lock, labels, store).
	Run lockrun.Config
	// Exposure is what the run must reach for its verdicts to be evidence
	// ("the clock jump struck while a client held the lock", "a pause
	// outlived the holder's lease"); a run that misses it does not pass,
	// whatever the verdicts.
	Exposure []checker.Requirement
	// Kinds are the kinds of lock the scenario applies to besides its
	// own lock, each with what the mechanism predicts of it (see
	// AppliesTo and WithLock); empty: its own lock's kind.
	Kinds []Kind
	// Instead is the catalogue's own lock when the scenario runs another
	// (WithLock); Expect is then the prediction of the kind the lock is
	// of, the one kind left in Kinds.
	Instead string
}

// Duration is the scripted length of the scenario (run and recovery
// phases), without setup, heal and check.
func (s Scenario) Duration() time.Duration { return s.Run.TimeLimit + s.Run.Recovery }

// Sentinel reports whether the scenario runs Redis Sentinel, whose
// failover detection makes it slower than the others.
func (s Scenario) Sentinel() bool {
	c := s.Run.Cluster.WithDefaults()
	return c.Topology == "replicated" && c.Failover == "sentinel"
}

// RunConfig is the lockharness configuration that runs the scenario, the
// same as `harness run` would build: store is the directory of the runs.
func (s Scenario) RunConfig(store string) lockrun.Config {
	cfg := s.Run
	cfg.Lock = s.Lock
	cfg.Store = store
	cfg.Test = s.Name
	cfg.Scenario = s.Name
	cfg.Explanation = s.Explanation
	cfg.Expected = s.Expect.Map()
	if cfg.Command == "" {
		cfg.Command = lockrun.CommandLine("harness", "scenario", "run", s.Name)
	}
	cfg.Require = append(s.Exposure[:0:0], s.Exposure...)
	// The script is data shared by every run of the catalogue: copy it so
	// that nothing downstream can change the catalogue.
	cfg.Script = append(cfg.Script[:0:0], cfg.Script...)
	return cfg
}

// Options tunes Run.
type Options struct {
	// Store is the directory runs are written to (default "store").
	Store string
	// Log receives the run's phase log; nil discards it.
	Log io.Writer
	// Progress receives the live progress line; nil discards it.
	Progress    io.Writer
	ProgressTTY bool
	// Backend starts the deployment each scenario runs against; nil means
	// local redis-server processes. A scenario whose faults the backend
	// cannot cause fails with an error wrapping sut.ErrUnsupported,
	// saying why: it was not run, so it did not pass.
	Backend sut.Backend
}

// Outcome is what one run of a scenario observed.
type Outcome struct {
	Scenario Scenario
	// Dir is the run's directory in the store (empty if it never started).
	Dir string
	// Observed is each checker's verdict.
	Observed map[string]checker.Verdict
	// Result is the whole check, violations included.
	Result checker.Result
	// Why explains violations by index into Result.Violations
	// (reports.Explain).
	Why map[int]string
	// Elapsed is the wall time of the run, setup to report.
	Elapsed time.Duration
	// Sizes says how large each fault was against the lock's TTL
	// (reports.Render).
	Sizes []string
}

// Pass reports whether every checker gave the expected verdict and the run
// reached its declared exposure. A checker the expectation leaves out (a
// lock of a kind whose prediction does not cover it) must be valid, as in
// a run.
func (o Outcome) Pass() bool {
	if len(o.Result.Vacuous) > 0 {
		return false
	}
	for _, n := range checkerNames {
		if o.Observed[n] != o.Scenario.Expect.Judged(n) {
			return false
		}
	}
	return true
}

// ObservedString names the observed verdicts in the form of Expect.String.
func (o Outcome) ObservedString() string {
	e := Expect{LockPromise: o.Observed[checker.LockPromise], Resource: o.Observed[checker.Resource], Liveness: o.Observed[checker.Liveness]}
	for _, n := range checkerNames {
		if e.Of(n) == "" {
			return "no verdict"
		}
	}
	if len(o.Result.Vacuous) > 0 {
		return e.String() + " (exposure not reached)"
	}
	return e.String()
}

// Run runs one scenario through lockrun.Run, exactly as `harness run`
// runs a configuration. The error is lockrun.Run's: a scenario that ran
// but produced an unexpected verdict is not an error (see Outcome.Pass).
func Run(ctx context.Context, s Scenario, opts Options) (Outcome, error) {
	store := opts.Store
	if store == "" {
		store = "store"
	}
	cfg := s.RunConfig(store)
	cfg.Log, cfg.Progress, cfg.ProgressTTY = opts.Log, opts.Progress, opts.ProgressTTY
	cfg.Backend = opts.Backend
	start := time.Now()
	out, err := lockrun.Run(ctx, cfg)
	o := Outcome{Scenario: s, Dir: out.Dir, Result: out.Results.Result, Why: out.Results.Why, Sizes: out.Results.Sizes, Elapsed: time.Since(start), Observed: map[string]checker.Verdict{}}
	for _, n := range checkerNames {
		if c, ok := out.Results.Checkers[n]; ok {
			o.Observed[n] = c.Verdict
		}
	}
	if err != nil {
		return o, fmt.Errorf("scenario %s: %w", s.Name, err)
	}
	return o, nil
}

// UnknownError is returned for a scenario name that is not in the
// catalogue: the registries' one unknown-name error, of Kind "scenario".
type UnknownError = registry.UnknownError

// Lookup returns the scenario called name, or an *UnknownError listing
// the catalogue's names, sorted. Like Catalogue, it returns a new value
// each time.
func Lookup(name string) (Scenario, error) { return index().Lookup(name) }

// index is the catalogue by name. A name used twice is a programming
// error in the catalogue, caught by its tests.
func index() *registry.Registry[Scenario] {
	r := registry.New[Scenario]("scenario")
	for _, s := range Catalogue() {
		if err := r.Register(s.Name, s); err != nil {
			panic(err)
		}
	}
	return r
}
