package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockharness/lockharness/scenarios"
	"github.com/lockharness/lockharness/schedule"
)

// replayFlags are `harness replay`'s flags.
type replayFlags struct {
	times, min int
	names      []string
	store      string
	jsonOut    bool
	backend    backendFlags
}

func newReplayCmd(a *app) *cobra.Command {
	var rf replayFlags
	cmd := &cobra.Command{
		Use:   "replay RUN… | --scenarios all|NAME,… [--times 10] [--min 9]",
		Short: "replay INVALID runs' schedules and count how often each breaks the lock the same way again",
		Long: `replay runs the schedule an INVALID run wrote (RUN/schedule.yaml) --times times, one after
another, as "harness run --schedule RUN/schedule.yaml" runs it, into RUN/replay/, and counts the
replays that break the lock the same way: a fatal violation of the run's first kind (the one
"harness shrink" reproduces, lock-promise first). Beside it: the replays with exactly the run's
violation kinds, and with the run's verdict on every checker.

--scenarios runs each named scenario of the catalogue once (all: every INVALID one) and replays
the schedule its run wrote. A schedule is replayable when at least --min of its --times replays
reproduce (default 9 of 10).

Exit codes: 0 every run's schedule reproduced in at least --min replays, 1 one did not (or a
scenario's own run did not come out INVALID), 2 bad input or a run that could not be carried out.`,
		Example: `  harness replay store/latest
  harness replay --scenarios all --times 10 --store /tmp/replay
  harness replay --scenarios wrong-release,failover-lost-lock`,
		RunE: func(cmd *cobra.Command, args []string) error { return rf.run(cmd, a, args) },
	}
	f := cmd.Flags()
	f.IntVar(&rf.times, "times", 10, "replays of each run's schedule")
	f.IntVar(&rf.min, "min", 0, "replays that must reproduce (default: 9 in 10 of --times, rounded up)")
	f.StringSliceVar(&rf.names, "scenarios", nil, "run these scenarios (or all: every INVALID one of the catalogue) and replay their runs' schedules")
	f.StringVar(&rf.store, "store", "store", "the store the runs are in (and the scenarios' runs go to)")
	f.BoolVar(&rf.jsonOut, "json", false, "print the rows as JSON instead of the table")
	addBackendFlags(f, &rf.backend)
	return cmd
}

// replayRow is one line of the table and of --json.
type replayRow struct {
	Name         string   `json:"name"`
	Dir          string   `json:"dir"`
	Target       string   `json:"target"`
	Kinds        []string `json:"kinds"`
	Times        int      `json:"times"`
	Reproduced   int      `json:"reproduced"`
	SameKinds    int      `json:"same_kinds"`
	SameVerdicts int      `json:"same_verdicts"`
	Seconds      float64  `json:"seconds"`
	// Misses are the kinds of each replay that did not reproduce.
	Misses []string `json:"misses,omitempty"`
	Pass   bool     `json:"pass"`
	Error  string   `json:"error,omitempty"`
}

// check refuses flags that cannot measure anything, before a run starts.
func (rf *replayFlags) check(args []string) error {
	if rf.times < 1 || rf.min < 0 || rf.min > rf.times {
		return fmt.Errorf("--times %d, --min %d: give at least one replay and a --min between 0 and --times (e.g. --times 10 --min 9)", rf.times, rf.min)
	}
	if (len(rf.names) > 0) == (len(args) > 0) {
		return errors.New("give run directories (store/latest) or --scenarios, one of the two")
	}
	if rf.min == 0 {
		rf.min = (9*rf.times + 9) / 10
	}
	return nil
}

// scenarioList is the scenarios of --scenarios: all is every INVALID one
// of the catalogue.
func (rf *replayFlags) scenarioList() ([]scenarios.Scenario, error) {
	if len(rf.names) == 1 && rf.names[0] == "all" {
		var out []scenarios.Scenario
		for _, s := range scenarios.Catalogue() {
			if s.Expect.Invalid() {
				out = append(out, s)
			}
		}
		return out, nil
	}
	var out []scenarios.Scenario
	for _, n := range rf.names {
		s, err := scenarios.Lookup(n)
		if err != nil {
			return nil, err
		}
		if !s.Expect.Invalid() {
			return nil, fmt.Errorf("scenario %s is expected %s: replay measures INVALID runs (leave it out of --scenarios)", n, s.Expect)
		}
		out = append(out, s)
	}
	return out, nil
}

func (rf *replayFlags) run(cmd *cobra.Command, a *app, args []string) error {
	if err := rf.check(args); err != nil {
		return &codeError{exitError, err}
	}
	reg, _, err := a.invocationLocks("")
	if err != nil {
		return &codeError{exitError, err}
	}
	backend, err := rf.backend.resolve()
	if err != nil {
		return &codeError{exitError, err}
	}
	ropt := scenarios.ReplayOptions{Times: rf.times, Env: schedule.Env{Locks: reg}, Backend: backend, Command: a.command()}
	var list []scenarios.Scenario
	if len(rf.names) > 0 {
		if list, err = rf.scenarioList(); err != nil {
			return &codeError{exitError, err}
		}
	} else {
		for i, d := range args {
			if args[i], err = storeRun(rf.store, d); err != nil {
				return &codeError{exitError, err}
			}
			if _, _, err := scenarios.OpenRun(args[i], ropt.Env); err != nil {
				return &codeError{exitError, err}
			}
		}
	}
	rows := rf.replayAll(cmd, list, args, ropt)
	return rf.finish(cmd.OutOrStdout(), rows, cmd.Context().Err() != nil)
}

// replayAll replays each run (or each scenario's run), printing progress
// to stderr, until done or interrupted.
func (rf *replayFlags) replayAll(cmd *cobra.Command, list []scenarios.Scenario, dirs []string, ropt scenarios.ReplayOptions) []replayRow {
	ctx, errw := cmd.Context(), cmd.ErrOrStderr()
	var rows []replayRow
	n := max(len(list), len(dirs))
	for i := 0; i < n && ctx.Err() == nil; i++ {
		start := time.Now()
		ropt.Each = func(j int, x scenarios.Replayed) {
			what := strings.Join(x.Kinds, ",")
			switch {
			case x.Err != nil:
				what = "error: " + x.Err.Error()
			case what == "":
				what = "no violation"
			}
			fmt.Fprintf(errw, "  replay %d/%d  %s  %s\n", j+1, rf.times, what, time.Since(start).Round(time.Second))
		}
		var r scenarios.Replays
		var err error
		name := ""
		if len(list) > 0 {
			name = list[i].Name
			fmt.Fprintf(errw, "[%d/%d] %s: one run, then %d replays of its schedule\n", i+1, n, name, rf.times)
			_, r, err = scenarios.ReplayScenario(ctx, list[i], scenarios.Options{Store: rf.store, Backend: ropt.Backend}, ropt)
		} else {
			fmt.Fprintf(errw, "[%d/%d] %s: %d replays of its schedule\n", i+1, n, dirs[i], rf.times)
			r, err = scenarios.ReplaySchedule(ctx, dirs[i], ropt)
			if r.Dir == "" {
				r.Dir = dirs[i]
			}
		}
		rows = append(rows, rf.row(name, r, err, time.Since(start)))
	}
	return rows
}

// row is the table's line of one run's replays.
func (rf *replayFlags) row(name string, r scenarios.Replays, err error, took time.Duration) replayRow {
	row := replayRow{Name: name, Dir: r.Dir, Kinds: r.Kinds, Times: len(r.Runs), Reproduced: r.Reproduced(),
		SameKinds: r.SameKinds(), SameVerdicts: r.SameVerdicts(), Seconds: took.Seconds()}
	if row.Name == "" {
		row.Name = r.Dir
	}
	if r.Target.Kind != "" {
		row.Target = r.Target.String()
	}
	for _, x := range r.Runs {
		if x.Target {
			continue
		}
		miss := strings.Join(x.Kinds, ",")
		if x.Err != nil {
			miss = "error: " + x.Err.Error()
		} else if miss == "" {
			miss = "no violation"
		}
		row.Misses = append(row.Misses, miss)
	}
	if err != nil {
		row.Error = err.Error()
	}
	row.Pass = err == nil && row.Times == rf.times && row.Reproduced >= rf.min
	return row
}

// finish prints the rows and returns the command's exit: 2 when a run
// could not be carried out, 1 when one did not reproduce enough.
func (rf *replayFlags) finish(w io.Writer, rows []replayRow, interrupted bool) error {
	if rf.jsonOut {
		if err := writeJSON(w, rows); err != nil {
			return &codeError{exitError, err}
		}
	} else {
		printReplays(w, rows, rf.min)
	}
	code := exitValid
	for _, r := range rows {
		switch {
		case r.Error != "" && !strings.Contains(r.Error, scenarios.ErrNotInvalid.Error()):
			code = exitError
		case !r.Pass && code == exitValid:
			code = exitInvalid
		}
	}
	if interrupted {
		return &codeError{exitInterrupted, errors.New("interrupted: the table holds the runs whose replays finished")}
	}
	if code != exitValid {
		return &codeError{code: code}
	}
	return nil
}

func printReplays(w io.Writer, rows []replayRow, min int) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\nRUN\tTARGET\tREPRODUCED\tSAME KINDS\tSAME VERDICTS\tSECONDS\t")
	pass := 0
	for _, r := range rows {
		mark := "✓"
		if !r.Pass {
			mark = "✗"
		} else {
			pass++
		}
		fmt.Fprintf(tw, "%s %s\t%s\t%d/%d\t%d/%d\t%d/%d\t%.0f\t\n", mark, r.Name, r.Target, r.Reproduced, r.Times, r.SameKinds, r.Times, r.SameVerdicts, r.Times, r.Seconds)
	}
	_ = tw.Flush()
	for _, r := range rows {
		if r.Error != "" {
			fmt.Fprintf(w, "  %s: %s\n", r.Name, r.Error)
		}
		if len(r.Misses) > 0 {
			fmt.Fprintf(w, "  %s: run %s; replays that did not reproduce: %s\n", r.Name, strings.Join(r.Kinds, ","), strings.Join(r.Misses, " | "))
		}
	}
	fmt.Fprintf(w, "%d of %d runs' schedules reproduced in at least %d replays\n", pass, len(rows), min)
}
