package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/nemesis"
	"github.com/lockharness/lockharness/reports"
	lockrun "github.com/lockharness/lockharness/run"
)

func newCheckCmd() *cobra.Command {
	var timeout time.Duration
	var jsonOut, allowVacuous bool
	gc := checkGC{percent: checkGCPercent, limitMiB: checkGCLimitMiB}
	cmd := &cobra.Command{
		Use:   "check HISTORY.jsonl",
		Short: "re-check a stored history and print the verdict",
		Long: `check reads a history (JSON lines, as a run writes to store/<test>/<run>/history.jsonl)
and prints the verdict of each checker. Ctrl-C stops it within a second: the checkers
that had not finished are unknown, the output says the results are partial, and the
exit code is 130.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if timeout <= 0 {
				return &codeError{exitError, fmt.Errorf("--check-timeout must be positive, got %v: use e.g. --check-timeout 30s", timeout)}
			}
			ctx, cancel := withCheckBudget(cmd.Context(), timeout)
			defer cancel()
			defer gc.apply()()
			ccfg, rec, _, _ := storedRun(filepath.Dir(args[0]))
			ccfg.Timeout = timeout
			ccfg.AllowVacuous = ccfg.AllowVacuous || allowVacuous
			var out reports.Results
			var err error
			if !untilInterrupted(ctx, func() { out, err = checkHistory(ctx, args[0], ccfg, rec) }) {
				return &codeError{interruptCode(ctx), fmt.Errorf("%v: nothing was checked", context.Cause(ctx))}
			}
			if err != nil {
				if ctx.Err() != nil {
					return &codeError{interruptCode(ctx), fmt.Errorf("%v: nothing was checked", context.Cause(ctx))}
				}
				return err
			}
			out.Meta = reports.RunMeta{Test: args[0], Lock: rec.Lock, Nemeses: rec.Nemeses, Seed: rec.Seed}
			res := out.Result
			if ctx.Err() != nil {
				// Whatever finished is reported; the rest is unknown.
				out.Meta.Partial = fmt.Sprintf("%v during the check: checkers that had not finished are unknown", context.Cause(ctx))
			}
			if budgetSpent(ctx) {
				// Not an interrupt: what finished is the verdict (a
				// violation found stands; otherwise unknown, exit 2).
				fmt.Fprintf(cmd.ErrOrStderr(), "note: %v: the checkers that had not finished are unknown; give the check longer with a larger --check-timeout\n", context.Cause(ctx))
				out.Meta.Partial = ""
			}
			if jsonOut {
				if err := writeJSON(cmd.OutOrStdout(), out); err != nil {
					return &codeError{exitError, err}
				}
			} else {
				if res.Seen.Truncated {
					fmt.Fprintln(cmd.ErrOrStderr(), "note: the last line was cut off (a killed run); checked the complete prefix")
				}
				printSummary(cmd.OutOrStdout(), "", out)
			}
			if out.Meta.Partial != "" {
				return &codeError{interruptCode(ctx), fmt.Errorf("partial results: %s", out.Meta.Partial)}
			}
			return verdictCode(res.Verdict)
		},
	}
	cmd.Flags().DurationVar(&timeout, "check-timeout", 30*time.Second, "bound on each linearizability check; the whole check stops at 4 times it")
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print the results as JSON")
	cmd.Flags().BoolVar(&allowVacuous, "allow-vacuous", false, "exit 0 on a valid verdict even when nothing was granted or the run's requested faults never struck a holder")
	cmd.Flags().Int64Var(&gc.limitMiB, "memory-limit", gc.limitMiB, "soft memory limit of the check in MiB (GOMEMLIMIT, which wins when set); 0 leaves the runtime's")
	return cmd
}

// checkGC is how the garbage collector runs during a check: the check's
// heap is mostly a window's events, let go at the next cut, so the
// collector may let it grow (percent, as GOGC) up to a soft memory limit
// (limitMiB, as GOMEMLIMIT) rather than collect each time the heap doubles
// a small live set. GOGC and GOMEMLIMIT in the environment win: the
// runtime has already applied them.
type checkGC struct {
	percent  int
	limitMiB int64
}

// The check's collector by default, from measurement (docs/measurements.md,
// issue 27): a limit under the goal of 150 MB peak for every history
// shape, and a percent that lets the heap grow to three times a window's
// live set (about 12 MB), so that the shapes that stay well under the
// limit fault in and mark a heap of 50 to 60 MB rather than grow to the
// limit (400 did, for no CPU that measurement could show).
const (
	checkGCPercent  = 200
	checkGCLimitMiB = 100
)

// apply sets the collector for the check and returns what puts the
// settings before it back.
func (g checkGC) apply() (restore func()) {
	if g.limitMiB <= 0 || os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	limit := debug.SetMemoryLimit(g.limitMiB << 20)
	percent := debug.SetGCPercent(g.percent)
	return func() {
		debug.SetGCPercent(percent)
		debug.SetMemoryLimit(limit)
	}
}

// checkHistory judges the history at path (checker.Check): a regular
// file is read event by event, in windows, so that a history of any length
// is checked in bounded memory; anything else (a pipe) is read whole,
// once. The violations are explained from what the check saw, as rec (the
// run's record, for its fault kinds) says to read it: the history is read
// once. The error is a *codeError that says what to give instead.
func checkHistory(ctx context.Context, path string, cfg checker.Config, rec reports.Record) (reports.Results, error) {
	var out reports.Results
	src, err := history.Open(ctx, path)
	if err != nil {
		return out, historyError(err)
	}
	res, err := checker.Check(ctx, src, cfg)
	if err != nil {
		return out, historyError(err)
	}
	if ctx.Err() == nil {
		if err := checkable(res.Seen); err != nil {
			return out, &codeError{exitError, fmt.Errorf("%s: %w", path, err)}
		}
		out.Why = reports.Explain(rec, res)
	}
	out.Result = res
	return out, nil
}

// historyError says what to give instead of a history that cannot be read.
func historyError(err error) error {
	if errors.Is(err, history.ErrMalformed) {
		return &codeError{exitError, fmt.Errorf("%w: give a history a run wrote (store/<test>/<run>/history.jsonl); see harness check --help", err)}
	}
	if errors.Is(err, fs.ErrNotExist) {
		return &codeError{exitError, fmt.Errorf("%w: give the path of a history (store/<test>/<run>/history.jsonl)", err)}
	}
	return &codeError{exitError, err}
}

// storedRun is the record of the run stored in dir (run.json beside its
// history; lockrun.StoredRecord) and how it was judged: the exposure
// it required (its nemeses, or a scenario's declaration) and whether it
// allowed a vacuous verdict. Without a record that says, only "something
// was granted" is required, and the record holds nothing but the fault
// kinds; stored is false without run.json.
func storedRun(dir string) (ccfg checker.Config, rec reports.Record, stored bool, err error) {
	rec, stored, err = lockrun.StoredRecord(dir)
	bare := reports.Record{FaultKinds: rec.FaultKinds}
	if err != nil || !stored || len(rec.Config) == 0 {
		return checker.Config{}, bare, stored, err
	}
	var cfg lockrun.Config
	if json.Unmarshal(rec.Config, &cfg) != nil {
		return checker.Config{}, bare, stored, nil
	}
	return checker.Config{Require: cfg.Requirements(), AllowVacuous: cfg.AllowVacuous}, rec, stored, nil
}

func newLocksCmd(a *app) *cobra.Command {
	return newListCmd("locks", "list the locks under test", func() [][2]string {
		var rows [][2]string
		for _, l := range a.opts.registry().All() {
			desc := l.Description
			if sys := l.SystemName(); sys != locks.SystemRedis {
				desc = "(" + sys + ") " + desc // the run starts that system, not Redis
			}
			if len(l.Failpoints) > 0 { // the names --failpoints takes
				desc += "; failpoints: " + strings.Join(l.Failpoints, ", ")
			}
			rows = append(rows, [2]string{l.Name, desc})
		}
		return rows
	})
}

func newNemesesCmd() *cobra.Command {
	return newListCmd("nemeses", "list the faults that can be injected", func() [][2]string {
		var rows [][2]string
		for _, n := range nemesis.Known() {
			rows = append(rows, [2]string{n.Name, n.Description})
		}
		return rows
	})
}

// newListCmd prints name and description rows as an aligned table.
func newListCmd(use, short string, rows func() [][2]string) *cobra.Command {
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			for _, r := range rows() {
				fmt.Fprintf(tw, "%s\t%s\n", r[0], r[1])
			}
			return tw.Flush()
		},
	}
}

// writeJSON prints v as indented JSON; results as reports.EncodeResults
// writes them, their holds streamed.
func writeJSON(w io.Writer, v any) error {
	if r, ok := v.(reports.Results); ok {
		bw := bufio.NewWriterSize(w, 64<<10)
		if err := reports.EncodeResults(bw, r); err != nil {
			return err
		}
		return bw.Flush()
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// checkable refuses a history that records no client operation (seen is
// what its check saw of it): every checker would find nothing wrong in
// it, and a verdict of valid that tested nothing is as false as any other.
func checkable(seen checker.Seen) error {
	switch {
	case seen.Clients:
		return nil
	case seen.Events == 0:
		return errors.New("the history is empty: nothing to check; give the history.jsonl of a run that ran")
	}
	return errors.New("the history records no client operation, only faults: nothing to check; give the history.jsonl of a run whose clients ran")
}

// checkBudget is the cause of a check's context when the whole check ran
// past its bound (run.WholeCheckBound of --check-timeout).
type checkBudget struct{ timeout time.Duration }

func (b checkBudget) Error() string {
	return fmt.Sprintf("the whole check ran past %v (4 × --check-timeout %v)", lockrun.WholeCheckBound(b.timeout), b.timeout)
}

// withCheckBudget bounds a whole check as a run bounds its check phase:
// --check-timeout alone bounds each porcupine search, not the reading of
// the history nor the number of searches.
func withCheckBudget(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(ctx, lockrun.WholeCheckBound(timeout), checkBudget{timeout})
}

// budgetSpent reports whether ctx ended because the whole check ran past
// its bound (rather than by a signal).
func budgetSpent(ctx context.Context) bool {
	var b checkBudget
	return errors.As(context.Cause(ctx), &b)
}
