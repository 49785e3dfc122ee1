package scenarios

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/reports"
	lockrun "github.com/lockharness/lockharness/run"
	"github.com/lockharness/lockharness/schedule"
	"github.com/lockharness/lockharness/shrink"
	"github.com/lockharness/lockharness/sut"
)

// ReplayDir is the directory, inside a run's, that its replays are
// written to (as `harness shrink` writes its candidates into RUN/shrink).
const ReplayDir = "replay"

// ReplayOptions tune ReplaySchedule and ReplayScenario.
type ReplayOptions struct {
	// Times is how many replays of the run's schedule (default 10).
	Times int
	// Env is what the schedule's names are looked up in (its lock).
	Env schedule.Env
	// Backend starts each replay's deployment; nil: local processes.
	Backend sut.Backend
	// Command is recorded as each replay's command.
	Command string
	// Each, when set, is told of each replay as it ends.
	Each func(i int, r Replayed)
}

// Replays are the replays of one INVALID run's schedule.yaml, each run as
// `harness run --schedule RUN/schedule.yaml` runs it.
type Replays struct {
	// Dir is the run whose schedule was replayed.
	Dir string
	// Target is the failure a replay must show to break the lock the
	// same way (`harness shrink`'s: the run's first fatal violation in
	// the order its summary shows them, lock-promise first); Kinds are
	// all the run's fatal violation kinds (checker/kind, sorted) and
	// Verdicts its checkers' verdicts.
	Target   shrink.Target
	Kinds    []string
	Verdicts map[string]checker.Verdict
	Runs     []Replayed
}

// Replayed is one replay.
type Replayed struct {
	Dir      string
	Kinds    []string
	Verdicts map[string]checker.Verdict
	// Target: the replay has a fatal violation of the run's target.
	Target  bool
	Elapsed time.Duration
	// Err is why the replay could not be carried out (it counts as one
	// that did not reproduce).
	Err error
}

// Reproduced is how many replays showed the run's target failure.
func (r Replays) Reproduced() int {
	n := 0
	for _, x := range r.Runs {
		if x.Target {
			n++
		}
	}
	return n
}

// SameKinds is how many replays broke the lock with exactly the run's
// fatal violation kinds, and SameVerdicts how many gave every checker the
// run's verdict: stricter than Reproduced, shown beside it.
func (r Replays) SameKinds() int {
	n := 0
	for _, x := range r.Runs {
		if x.Err == nil && slices.Equal(x.Kinds, r.Kinds) {
			n++
		}
	}
	return n
}

// SameVerdicts: see SameKinds.
func (r Replays) SameVerdicts() int {
	n := 0
	for _, x := range r.Runs {
		if x.Err == nil && sameVerdicts(x.Verdicts, r.Verdicts) {
			n++
		}
	}
	return n
}

func sameVerdicts(a, b map[string]checker.Verdict) bool {
	for _, n := range checkerNames {
		if a[n] != b[n] {
			return false
		}
	}
	return true
}

// FatalKinds are the distinct kinds (checker/kind) of vs's fatal
// violations, sorted.
func FatalKinds(vs []checker.Violation) []string {
	var out []string
	for _, v := range vs {
		k := v.Checker + "/" + v.Kind
		if v.Fatal && !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// RunTargets are the failures a run with violations vs can be replayed
// or shrunk for (shrink.Targets), in the order the run's summary shows its
// violations (the most telling first): `harness shrink` and `harness
// replay` both choose from them.
func RunTargets(vs []checker.Violation) []shrink.Target {
	ordered := make([]checker.Violation, 0, len(vs))
	for _, i := range reports.MostTelling(vs) {
		ordered = append(ordered, vs[i])
	}
	return shrink.Targets(ordered)
}

// RunTarget is the failure a replay of an INVALID run with violations vs
// must reproduce: the first of RunTargets, as `harness shrink` chooses it
// by default.
func RunTarget(vs []checker.Violation) (shrink.Target, bool) {
	ts := RunTargets(vs)
	if len(ts) == 0 {
		return shrink.Target{}, false
	}
	return ts[0], true
}

// ErrNotInvalid is returned for a run that is not INVALID: its schedule
// has no failure a replay could reproduce.
var ErrNotInvalid = errors.New("not INVALID")

// ReplaySchedule replays the schedule.yaml of the INVALID run in dir
// opt.Times times, one after another, into dir/replay, and says of each
// replay which failures it showed. A cancelled ctx ends it with the
// replays that finished and ctx's error.
func ReplaySchedule(ctx context.Context, dir string, opt ReplayOptions) (Replays, error) {
	r, sch, err := OpenRun(dir, opt.Env)
	if err != nil {
		return r, err
	}
	times := opt.Times
	if times <= 0 {
		times = 10
	}
	for i := range times {
		x := replayOnce(ctx, sch, filepath.Join(dir, ReplayDir), opt)
		if ctx.Err() != nil {
			return r, ctx.Err()
		}
		x.Target = x.Err == nil && slices.Contains(x.Kinds, r.Target.String())
		r.Runs = append(r.Runs, x)
		if opt.Each != nil {
			opt.Each(i, x)
		}
	}
	return r, nil
}

// OpenRun reads what a replay of the run in dir needs, and refuses a run
// it cannot replay (one that did not finish, is not INVALID, or has no
// schedule.yaml), naming the problem: the replays of its result (none yet)
// and its schedule.
func OpenRun(dir string, env schedule.Env) (Replays, schedule.Schedule, error) {
	res, err := reports.ReadResults(dir)
	if err != nil {
		return Replays{}, schedule.Schedule{}, fmt.Errorf("run %s has no readable %s (%w): give a run that finished, such as store/latest", dir, reports.ResultsFile, err)
	}
	if res.Verdict != checker.Invalid {
		return Replays{}, schedule.Schedule{}, fmt.Errorf("run %s is %s, %w: nothing to reproduce (give an INVALID run)", dir, res.Verdict, ErrNotInvalid)
	}
	r := Replays{Dir: dir, Kinds: FatalKinds(res.Violations), Verdicts: verdictsOf(res)}
	r.Target, _ = RunTarget(res.Violations)
	sch, err := readRunSchedule(filepath.Join(dir, lockrun.ScheduleFile), env)
	return r, sch, err
}

// readRunSchedule parses a run's schedule.yaml.
func readRunSchedule(path string, env schedule.Env) (schedule.Schedule, error) {
	f, err := os.Open(path)
	if err != nil {
		return schedule.Schedule{}, fmt.Errorf("%w (a run records its schedule since runs write %s; run it again and replay that run)", err, lockrun.ScheduleFile)
	}
	defer f.Close()
	s, err := schedule.Parse(f, env)
	if err != nil {
		return s, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// replayOnce runs sch as `harness run --schedule` does, into store.
func replayOnce(ctx context.Context, sch schedule.Schedule, store string, opt ReplayOptions) Replayed {
	cfg, err := lockrun.FromSchedule(sch, opt.Env)
	if err != nil {
		return Replayed{Err: err}
	}
	cfg.Store, cfg.Backend, cfg.Command = store, opt.Backend, opt.Command
	start := time.Now()
	out, err := lockrun.Run(ctx, cfg)
	x := Replayed{Dir: out.Dir, Elapsed: time.Since(start), Err: err}
	if out.Results.Verdict == "" && err == nil {
		x.Err = errors.New("the replay gave no verdict")
	}
	x.Kinds, x.Verdicts = FatalKinds(out.Results.Violations), verdictsOf(out.Results)
	return x
}

func verdictsOf(r reports.Results) map[string]checker.Verdict {
	out := map[string]checker.Verdict{}
	for _, n := range checkerNames {
		if c, ok := r.Checkers[n]; ok {
			out[n] = c.Verdict
		}
	}
	return out
}

// ReplayScenario runs scenario s once and replays the schedule its run
// wrote (ReplaySchedule): the measure of issue 25's "replay of a run's
// schedule.yaml gives the same violation kind". A run that did not come
// out INVALID is returned with an error wrapping ErrNotInvalid.
func ReplayScenario(ctx context.Context, s Scenario, opts Options, ropt ReplayOptions) (Outcome, Replays, error) {
	o, err := Run(ctx, s, opts)
	if err != nil {
		return o, Replays{}, err
	}
	if o.Result.Verdict != checker.Invalid {
		return o, Replays{Dir: o.Dir}, fmt.Errorf("scenario %s: its run gave %s, %w: nothing to replay", s.Name, o.ObservedString(), ErrNotInvalid)
	}
	r, err := ReplaySchedule(ctx, o.Dir, ropt)
	return o, r, err
}

// Invalid reports whether the scenario expects some checker to find its
// lock broken: the scenarios whose runs a replay can reproduce.
func (e Expect) Invalid() bool {
	for _, n := range checkerNames {
		if e.Of(n) == checker.Invalid {
			return true
		}
	}
	return false
}
