package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/locks/adapter"
	"github.com/lockharness/lockharness/reports"
	lockrun "github.com/lockharness/lockharness/run"
	"github.com/lockharness/lockharness/scenarios"
	"github.com/lockharness/lockharness/schedule"
	"github.com/lockharness/lockharness/shrink"
)

// shrinkDir is the directory `harness shrink RUN` writes into, inside RUN:
// the smallest schedule found, a link to the report of its run, and the
// store of the candidates' runs.
const (
	shrinkDir    = "shrink"
	shrinkReport = "report"
	shrinkRuns   = "runs"
)

// shrinkFlags are `harness shrink`'s flags.
type shrinkFlags struct {
	runs      int
	maxRuns   int
	budget    time.Duration
	store     string
	violation string
	lockCmd   string
}

func newShrinkCmd(a *app) *cobra.Command {
	var sf shrinkFlags
	cmd := &cobra.Command{
		Use:   "shrink RUN [--runs N] [--budget 10m] [--store DIR]",
		Short: "search for the smallest schedule that still breaks a lock as an INVALID run did",
		Long: `shrink replays an INVALID run's schedule (RUN/schedule.yaml) and searches for a smaller one
that breaks the lock the same way (the same violation kind on the same checker, by default
the run's first lock-promise violation): fewer fault steps, a shorter run and recovery, shorter
faults, fewer clients and keys, steps that await a holder. Each candidate runs --runs times
and is kept when most of its runs reproduce. It writes RUN/shrink/schedule.yaml (the smallest
schedule, replay it with harness run --schedule), RUN/shrink/report (a link to the run of the
last candidate kept) and the candidates' runs under RUN/shrink/runs.

Exit codes: 0 a schedule that reproduces was written (smaller, or the run's own when nothing
smaller reproduces), 2 bad input or a run that does not reproduce on replay; Ctrl-C keeps the
best schedule so far and exits 130.`,
		Example: `  harness shrink store/latest
  harness shrink store/set-nx-ex/20261127T142658.987Z --runs 5 --budget 20m`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return sf.shrink(cmd, a, args[0])
		},
	}
	f := cmd.Flags()
	f.IntVar(&sf.runs, "runs", shrink.DefaultRuns, "runs of each candidate; it is kept when most of them reproduce")
	f.IntVar(&sf.maxRuns, "max-runs", 0, "stop after this many runs in all (0: only the budget stops the search)")
	f.DurationVar(&sf.budget, "budget", 10*time.Minute, "stop the search after this long (a run in progress finishes) with the best schedule so far")
	f.StringVar(&sf.store, "store", "store", "the store RUN is in")
	f.StringVar(&sf.violation, "violation", "", "CHECKER/KIND to reproduce, e.g. resource/lost-update (default: the run's first, lock-promise first)")
	addLockCmdFlag(f, &sf.lockCmd)
	return cmd
}

// shrinkJob is what a shrink works from: the run's directory, its
// results, its schedule and the target failure.
type shrinkJob struct {
	dir     string
	res     reports.Results
	sched   schedule.Schedule
	env     schedule.Env
	target  shrink.Target
	lockCmd string
}

// shrink runs the command: it checks RUN before anything starts (exit 2
// naming the problem), searches, and writes what it found as it goes.
func (sf *shrinkFlags) shrink(cmd *cobra.Command, a *app, arg string) error {
	if sf.runs < 1 || sf.budget <= 0 || sf.maxRuns < 0 {
		return &codeError{exitError, fmt.Errorf("--runs %d, --budget %v, --max-runs %d: give at least 1 run, a positive budget and no negative run count (e.g. --runs 3 --budget 10m)", sf.runs, sf.budget, sf.maxRuns)}
	}
	job, err := sf.load(a, arg)
	if err != nil {
		return &codeError{exitError, err}
	}
	out := filepath.Join(job.dir, shrinkDir)
	if err := os.MkdirAll(filepath.Join(out, shrinkRuns), 0o755); err != nil {
		return &codeError{exitError, fmt.Errorf("create %s: %w", out, err)}
	}
	sh := &shrinker{job: job, out: out, errw: cmd.ErrOrStderr(), cmdline: a.command(), start: time.Now(), check: 30 * time.Second}
	fmt.Fprintf(sh.errw, "shrink  %s: %s, reproduce %s in most of %d runs (budget %v)\n", job.dir, shrink.Measure(job.sched), job.target, sf.runs, sf.budget)
	res, err := shrink.Search(cmd.Context(), job.sched, sh.try, shrink.Options{Runs: sf.runs, MaxRuns: sf.maxRuns, Budget: sf.budget,
		Report: sh.report})
	if res.Stopped == shrink.StopInterrupted {
		sh.summary(cmd.OutOrStdout(), res)
		return &codeError{code: interruptCode(cmd.Context())}
	}
	if err != nil {
		sh.summary(cmd.OutOrStdout(), res)
		return &codeError{exitError, fmt.Errorf("shrink %s: %w", job.dir, err)}
	}
	if res.Stopped == shrink.StopNotReproduced {
		also := ""
		if res.Attempts > 1 {
			also = ", nor with its faults awaiting a holder"
		}
		return &codeError{exitError, fmt.Errorf("run %s: its schedule reproduced %s in %d of %d replays, not most%s: there is nothing to shrink from (the lock broke by a timing its replays do not meet: try --runs 5, or shrink another run)",
			job.dir, job.target, res.Baseline[0], res.Baseline[1], also)}
	}
	sh.summary(cmd.OutOrStdout(), res)
	return nil
}

// load reads and checks RUN: a run directory in the store, INVALID, with
// the schedule it executed and, for a lock of --lock-cmd, an adapter that
// still starts.
func (sf *shrinkFlags) load(a *app, arg string) (shrinkJob, error) {
	dir, err := storeRun(sf.store, arg)
	if err != nil {
		return shrinkJob{}, err
	}
	job := shrinkJob{dir: dir}
	if job.res, err = reports.ReadResults(dir); err != nil {
		return job, fmt.Errorf("run %s has no readable %s (%v): give a run that finished, such as store/latest", dir, reports.ResultsFile, err)
	}
	if v := job.res.Verdict; v != checker.Invalid {
		return job, fmt.Errorf("run %s is %s: nothing to shrink (shrink looks for a smaller schedule that breaks the lock as an INVALID run did; give an INVALID run)", dir, strings.ToUpper(string(v)))
	}
	if job.target, err = sf.chooseTarget(job.res.Violations); err != nil {
		return job, fmt.Errorf("run %s: %w", dir, err)
	}
	path := filepath.Join(dir, lockrun.ScheduleFile)
	if _, err := os.Stat(path); err != nil {
		return job, fmt.Errorf("run %s has no %s: it was made before runs recorded their schedule (run it again with its command, %s, and shrink that run)", dir, lockrun.ScheduleFile, job.res.Meta.Command)
	}
	if job.lockCmd, err = sf.runLockCmd(job.res.Meta.Command); err != nil {
		return job, fmt.Errorf("run %s: %w", dir, err)
	}
	reg, _, err := a.invocationLocks(job.lockCmd)
	if err != nil {
		return job, fmt.Errorf("run %s was a run of --lock-cmd %s, which does not start now: %w (put the adapter back, or give --lock-cmd with where it is now)", dir, lockrun.CommandLine(job.lockCmd), err)
	}
	job.env = schedule.Env{Locks: reg}
	if job.sched, _, err = readSchedule(path, job.env); err != nil {
		return job, err
	}
	return job, nil
}

// storeRun is the run directory arg names, resolved: a path (store/latest,
// store/LOCK/RUN) or one relative to the store (latest, LOCK/RUN). It must
// be inside the store: shrink writes next to the run, and nothing outside
// the store.
func storeRun(store, arg string) (string, error) {
	dir := arg
	if _, err := os.Stat(dir); err != nil && !filepath.IsAbs(arg) {
		if _, err2 := os.Stat(filepath.Join(store, arg)); err2 == nil {
			dir = filepath.Join(store, arg)
		}
	}
	st, err := os.Stat(dir)
	if err != nil || !st.IsDir() {
		return "", fmt.Errorf("%s is not a run directory: give store/<test>/<run> or store/latest (see --store)", arg)
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", fmt.Errorf("run %s: %w", arg, err)
	}
	root, err := filepath.EvalSymlinks(store)
	if err != nil {
		return "", fmt.Errorf("store %s: %w (give --store with the store the run is in)", store, err)
	}
	absReal, err1 := filepath.Abs(real)
	absRoot, err2 := filepath.Abs(root)
	if err := errors.Join(err1, err2); err != nil {
		return "", fmt.Errorf("run %s: %w", arg, err)
	}
	if !strings.HasPrefix(absReal, absRoot+string(filepath.Separator)) {
		return "", fmt.Errorf("run %s is not in the store %s: shrink writes next to the run and only inside the store (give --store with the store the run is in)", arg, store)
	}
	return real, nil
}

// chooseTarget is the failure to reproduce: --violation, which the run
// must have, or the run's first (shrink.Targets), of its violations in the
// order its summary shows them (the most telling first).
func (sf *shrinkFlags) chooseTarget(vs []checker.Violation) (shrink.Target, error) {
	ts := scenarios.RunTargets(vs)
	if len(ts) == 0 {
		return shrink.Target{}, errors.New("its results hold no fatal violation to reproduce (re-check it with harness report RUN)")
	}
	if sf.violation == "" {
		return ts[0], nil
	}
	names := make([]string, len(ts))
	for i, t := range ts {
		if t.String() == sf.violation {
			return t, nil
		}
		names[i] = t.String()
	}
	return shrink.Target{}, fmt.Errorf("--violation %s: the run has no such violation (it has %s)", sf.violation, strings.Join(names, ", "))
}

// runLockCmd is the adapter command of a run made with --lock-cmd: the
// flag's when given, else the one in the run's command line.
func (sf *shrinkFlags) runLockCmd(command string) (string, error) {
	if sf.lockCmd != "" {
		return sf.lockCmd, nil
	}
	words, err := adapter.SplitCommand(command)
	if err != nil {
		return "", fmt.Errorf("its command line %q: %w (give --lock-cmd when the run used one)", command, err)
	}
	for i, w := range words {
		if v, ok := strings.CutPrefix(w, "--lock-cmd="); ok {
			return v, nil
		}
		if w == "--lock-cmd" && i+1 < len(words) {
			return words[i+1], nil
		}
	}
	return "", nil
}

// shrinker runs the candidates through the real run path and writes what
// the search keeps.
type shrinker struct {
	job     shrinkJob
	out     string
	errw    io.Writer
	cmdline string
	start   time.Time
	check   time.Duration
	// lastDir is the newest run that reproduced, keptDir the one of the
	// candidate last kept (the report link).
	lastDir, keptDir string
	keptRes          reports.Results
	lastRes          reports.Results
}

// try runs s once, as `harness run --schedule` would, into the shrink's
// own store. A candidate the run refuses (its configuration) is
// shrink.ErrRefused; a run that tested nothing counts as one that did not
// reproduce.
func (sh *shrinker) try(ctx context.Context, s schedule.Schedule) (int, int, error) {
	cfg, err := lockrun.FromSchedule(s, sh.job.env)
	if err == nil {
		cfg.Store, cfg.CheckTimeout = filepath.Join(sh.out, shrinkRuns), sh.check
		cfg.Command = sh.cmdline
		_, err = lockrun.NewPlan(cfg)
	}
	if err != nil {
		return 0, 0, fmt.Errorf("%w: %s", shrink.ErrRefused, lockrun.Text(err, scheduleKey))
	}
	out, err := lockrun.Run(ctx, cfg)
	var ue *lockrun.UsageError
	switch {
	case ctx.Err() != nil:
		return 0, 0, ctx.Err()
	case errors.As(err, &ue):
		return 0, 0, fmt.Errorf("%w: %s", shrink.ErrRefused, lockrun.Text(err, scheduleKey))
	case out.Dir == "":
		return 0, 0, err
	case out.Results.Verdict == "":
		fmt.Fprintf(sh.errw, "shrink    a run tested nothing: %v\n", err)
		return 0, 1, nil
	}
	if !shrink.Reproduces(out.Results.Violations, sh.job.target) {
		return 0, 1, nil
	}
	sh.lastDir, sh.lastRes = out.Dir, out.Results
	return 1, 1, nil
}

// report prints one line per candidate judged and, when the search kept
// it (or it is the run's own schedule, reproduced), writes it and points
// the report link at its run.
func (sh *shrinker) report(at shrink.Attempt) {
	verdict := "dropped"
	switch {
	case at.Refused != nil:
		verdict = "refused: " + strings.TrimPrefix(at.Refused.Error(), shrink.ErrRefused.Error()+": ")
	case at.Kept, at.N == 1 && at.Reproduced*2 > at.Of:
		verdict = "kept"
		if err := sh.keep(at); err != nil {
			verdict = "kept, but " + err.Error()
		}
	}
	fmt.Fprintf(sh.errw, "shrink  %3d  %-6s %d/%d reproduced  %s: %s  [%s]\n", at.N, time.Since(sh.start).Round(time.Second),
		at.Reproduced, at.Of, at.Change, verdict, at.Size)
}

// keep writes the schedule the search holds now, the candidate just
// judged, and links its last reproducing run as the report.
func (sh *shrinker) keep(at shrink.Attempt) error {
	sh.keptDir, sh.keptRes = sh.lastDir, sh.lastRes
	return sh.write(at.Best)
}

// write writes s as RUN/shrink/schedule.yaml and the report link, each
// replaced atomically, so that a second Ctrl-C leaves the last complete
// pair.
func (sh *shrinker) write(s schedule.Schedule) error {
	var b bytes.Buffer
	if err := schedule.Write(&b, s); err != nil {
		return err
	}
	path := filepath.Join(sh.out, lockrun.ScheduleFile)
	if err := os.WriteFile(path+".tmp", b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if sh.keptDir == "" {
		return nil
	}
	rel, err := filepath.Rel(sh.out, sh.keptDir)
	if err != nil {
		return fmt.Errorf("link report: %w", err)
	}
	link := filepath.Join(sh.out, shrinkReport)
	_ = os.Remove(link + ".tmp")
	if err := os.Symlink(rel, link+".tmp"); err != nil {
		return fmt.Errorf("link report: %w", err)
	}
	if err := os.Rename(link+".tmp", link); err != nil {
		return fmt.Errorf("link report: %w", err)
	}
	return nil
}

// faults counts the faults a run's history holds: the nemesis's that took
// effect, and the client pauses and crashes the workload made itself (a
// pause-client or crash-client fault is one of the client's pauses or
// crashes too: counted once).
func faults(c checker.Coverage) int {
	n := 0
	for _, f := range c.Faults {
		n += f.TookEffect
	}
	n += max(0, c.Pauses.Total-c.Faults["pause-client"].TookEffect)
	n += max(0, c.Crashes.Total-c.Faults["crash-client"].TookEffect)
	return n
}

// summary prints what the search found: the sizes before and after, the
// changes, and where the schedule and its report are.
func (sh *shrinker) summary(w io.Writer, res shrink.Result) {
	fmt.Fprintf(w, "\nSHRINK  %s  (%s: %d attempts, %d runs, %v)\n", sh.job.target, res.Stopped, res.Attempts, res.Runs, time.Since(sh.start).Round(time.Second))
	fmt.Fprintf(w, "  before       %s, %d faults in its history\n", res.Before, faults(sh.job.res.Coverage))
	after := "no replay reproduced"
	if sh.keptDir != "" {
		after = fmt.Sprintf("%d faults in its history", faults(sh.keptRes.Coverage))
	}
	fmt.Fprintf(w, "  after        %s, %s\n", res.After, after)
	for _, c := range res.Changes {
		fmt.Fprintf(w, "  change       %s\n", c)
	}
	if sh.keptDir == "" {
		return
	}
	fmt.Fprintf(w, "  schedule     %s\n", filepath.Join(sh.out, lockrun.ScheduleFile))
	fmt.Fprintf(w, "  report       %s\n", filepath.Join(sh.out, shrinkReport, reports.IndexFile))
	fmt.Fprintf(w, "  replay       harness run --schedule %s\n", lockrun.CommandLine(filepath.Join(sh.out, lockrun.ScheduleFile)))
}
