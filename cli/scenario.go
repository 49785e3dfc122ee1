package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockharness/lockharness/locks"
	lockrun "github.com/lockharness/lockharness/run"
	"github.com/lockharness/lockharness/scenarios"
	"github.com/lockharness/lockharness/sut"
)

func newScenarioCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "scenario",
		Short: "the catalogue of named anomalies from the literature, each with its expected verdict",
		Long: `A scenario is a scripted fault schedule that reproduces one argument from Kleppmann's
"How to do distributed locking", antirez's "Is Redlock safe?", the redis.io distributed-locks page
or Jepsen's Redis analysis, next to the fix that makes it go away. It runs exactly like
"harness run" and must produce its expected verdict every time.`,
	}
	cmd.AddCommand(newScenarioListCmd(), newScenarioRunCmd(a))
	// Without RunE cobra prints the help and exits 0 for any argument, so
	// a typo ("scenario runn") looked like success.
	cmd.Args = cobra.ArbitraryArgs
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return cmd.Help()
		}
		cmd.SuggestionsMinimumDistance = 2
		hint := "want list or run"
		if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
			hint = "did you mean " + strings.Join(s, " or ") + "?"
		}
		return &codeError{exitError, fmt.Errorf("unknown command %q for \"harness scenario\" (%s; see harness scenario --help)", args[0], hint)}
	}
	return cmd
}

func newScenarioListCmd() *cobra.Command {
	var jsonOut bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "list the scenarios: name, lock, what happens, expected verdict",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			all := scenarios.Catalogue()
			w := cmd.OutOrStdout()
			if jsonOut {
				type kind struct {
					Kind     string            `json:"kind"`
					Expected map[string]string `json:"expected"`
				}
				type item struct {
					Name      string            `json:"name"`
					Lock      string            `json:"lock"`
					Summary   string            `json:"summary"`
					Source    string            `json:"source"`
					Expected  map[string]string `json:"expected"`
					AppliesTo []kind            `json:"applies_to"`
				}
				var items []item
				for _, s := range all {
					kinds, err := s.AppliesTo()
					if err != nil {
						return &codeError{exitError, err}
					}
					it := item{s.Name, s.Lock, s.Summary, s.Source, s.Expect.Map(), nil}
					for _, k := range kinds {
						it.AppliesTo = append(it.AppliesTo, kind{k.String(), k.Expect.Map()})
					}
					items = append(items, it)
				}
				if err := writeJSON(w, items); err != nil {
					return &codeError{exitError, err}
				}
				return nil
			}
			tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tLOCK\tEXPECTED\tWHAT HAPPENS")
			for _, s := range all {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", s.Name, s.Lock, s.Expect, s.Summary)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print the catalogue as JSON")
	return cmd
}

// scenarioRow is one line of `scenario run`'s table and of its --json.
type scenarioRow struct {
	Name     string            `json:"name"`
	Lock     string            `json:"lock"`
	Expected map[string]string `json:"expected"`
	Observed map[string]string `json:"observed"`
	Pass     bool              `json:"pass"`
	Seconds  float64           `json:"seconds"`
	Dir      string            `json:"dir,omitempty"`
	Error    string            `json:"error,omitempty"`
	// Skipped: the backend cannot cause the scenario's faults (Error says
	// why); it did not run, so it neither passed nor failed.
	Skipped bool `json:"skipped,omitempty"`

	expected, observed string
}

// scenarioRunFlags are `harness scenario run`'s flags.
type scenarioRunFlags struct {
	all, jsonOut  bool
	store         string
	parallel      int
	backend       backendFlags
	lock, lockCmd string
}

func newScenarioRunCmd(a *app) *cobra.Command {
	var sf scenarioRunFlags
	cmd := &cobra.Command{
		Use:   "run NAME|FILE… | --all",
		Short: "run scenarios and compare each checker's verdict with the expected one",
		Long: `Runs each named scenario (or every one with --all) and prints what happened in plain words,
then a table: name, lock, expected, observed, seconds. An argument with a slash or a .yaml
ending is a scenario file of your own, in the catalogue's format (scenarios/catalogue/,
docs/schedules.md), judged against the expectation it declares. Exit code 0 only if every verdict is as
expected, 1 if one is not, 2 if a scenario could not be run.

--lock NAME runs the scenarios with another lock of the same kind (see harness scenario list
--json, "applies_to"): its system, and the properties the scenario's mechanism needs (expiring
lease, fencing, quorum, session, the failpoints it arms). The expectation is then what the
scenario predicts of every lock of that kind, checker by checker; a checker it makes no
prediction for is judged as a run is (valid, or a finding). A lock of another kind exits 2,
naming the kinds the scenario needs and the locks that fit. With --all, the scenarios the lock
fits run and the others are left out.`,
		Example: `  harness scenario run redlock-clock-jump
  harness scenario run ./my-scenario.yaml
  harness scenario run --all --store /tmp/store
  harness scenario run gc-pause-stale-write --lock my-lock`,
		RunE: func(cmd *cobra.Command, args []string) error {
			list, err := sf.list(args, a)
			if err != nil {
				return &codeError{exitError, err}
			}
			return sf.run(cmd, list)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&sf.all, "all", false, "run the whole catalogue")
	f.BoolVar(&sf.jsonOut, "json", false, "print the results as JSON instead of the account and the table")
	f.StringVar(&sf.store, "store", "store", "directory runs are written to")
	f.IntVar(&sf.parallel, "parallel", scenarios.DefaultParallel(), "most scenarios run side by side while the machine has a CPU idle (Sentinel scenarios always alone); 1 runs them one after another")
	addBackendFlags(f, &sf.backend)
	f.StringVar(&sf.lock, "lock", "", "run the scenarios with this lock instead of their own (a lock of the kind each applies to; see harness locks)")
	addLockCmdFlag(f, &sf.lockCmd)
	return cmd
}

// list is the scenarios to run, those named or the catalogue, each with
// the lock of --lock (or --lock-cmd) when one is given.
func (sf *scenarioRunFlags) list(args []string, a *app) ([]scenarios.Scenario, error) {
	reg, adapted, err := a.invocationLocks(sf.lockCmd)
	if err != nil {
		return nil, err
	}
	list, err := sf.named(args, reg)
	if err != nil {
		return nil, err
	}
	lock := sf.lock
	if lock == "" {
		lock = adapted
	}
	if lock == "" {
		return list, nil
	}
	if _, err := reg.Lookup(lock); err != nil {
		return nil, err
	}
	var out []scenarios.Scenario
	for _, s := range list {
		o, err := s.WithLock(lock, reg)
		var ke *scenarios.KindError
		switch {
		case errors.As(err, &ke) && sf.all:
			continue // --all runs those the lock fits
		case err != nil:
			return nil, err
		}
		if o.Instead != "" && sf.lockCmd != "" {
			o.Run.Command += " --lock-cmd " + lockrun.CommandLine(sf.lockCmd)
		}
		out = append(out, o)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no scenario of the catalogue applies to lock %s (see harness scenario list --json, applies_to)", lock)
	}
	return out, nil
}

// named is the scenarios to run: those named, or the catalogue. A
// scenario file may name any lock of reg, the invocation's (a shipped
// adapter, a user's own main's lock).
func (sf *scenarioRunFlags) named(args []string, reg *locks.Registry) ([]scenarios.Scenario, error) {
	switch {
	case sf.all && len(args) > 0:
		return nil, errors.New("give scenario names or --all, not both")
	case sf.all:
		return scenarios.Catalogue(), nil
	case len(args) == 0:
		return nil, errors.New("name a scenario (see `harness scenario list`) or use --all")
	}
	var list []scenarios.Scenario
	for _, name := range args {
		if isScheduleFile(name) {
			s, err := readScenario(name, reg)
			if err != nil {
				return nil, err
			}
			list = append(list, s)
			continue
		}
		s, err := scenarios.Lookup(name)
		if err != nil {
			return nil, err
		}
		list = append(list, s)
	}
	return list, nil
}

// run runs the scenarios side by side, printing each one's account in
// catalogue order as it finishes, then the table (or the rows as JSON);
// it exits 2 if a scenario could not be run, 1 if one missed its
// expectation.
func (sf *scenarioRunFlags) run(cmd *cobra.Command, list []scenarios.Scenario) error {
	if sf.parallel < 1 {
		return &codeError{exitError, fmt.Errorf("--parallel must be at least 1, got %d: use --parallel 1 to run the scenarios one after another", sf.parallel)}
	}
	backend, err := sf.backend.resolve()
	if err != nil {
		return &codeError{exitError, err}
	}
	out, errw := cmd.OutOrStdout(), cmd.ErrOrStderr()
	var rows []scenarioRow
	failed, broken := false, false
	scenarios.RunAll(cmd.Context(), list, scenarios.Options{Store: sf.store, Backend: backend}, sf.parallel, func(i int, r scenarios.Result) {
		s := list[i]
		if !sf.jsonOut {
			fmt.Fprintf(errw, "[%d/%d] %s (%s): %s\n", i+1, len(list), s.Name, s.Lock, s.Summary)
		}
		row := newScenarioRow(s, r.Outcome, r.Err)
		switch {
		case row.Skipped:
		case r.Err != nil:
			broken = true
		case !row.Pass:
			failed = true
		}
		rows = append(rows, row)
		if !sf.jsonOut {
			printScenario(out, s, r.Outcome, r.Err)
		}
	})
	if sf.jsonOut {
		if err := writeJSON(out, rows); err != nil {
			return &codeError{exitError, err}
		}
	} else if len(rows) > 1 {
		printScenarioTable(out, rows)
	}
	switch {
	case broken:
		return &codeError{code: exitError}
	case failed:
		return &codeError{code: exitInvalid}
	}
	return nil
}

// newScenarioRow is the row of scenario s's run.
func newScenarioRow(s scenarios.Scenario, o scenarios.Outcome, err error) scenarioRow {
	row := scenarioRow{Name: s.Name, Lock: s.Lock, Expected: s.Expect.Map(), Observed: map[string]string{},
		Pass: err == nil && o.Pass(), Seconds: o.Elapsed.Seconds(), Dir: o.Dir,
		expected: s.Expect.String(), observed: o.ObservedString()}
	for k, v := range o.Observed {
		row.Observed[k] = string(v)
	}
	switch {
	case errors.Is(err, sut.ErrUnsupported):
		row.Error, row.Skipped = flagText(err), true
		row.observed = "skipped"
	case err != nil:
		row.Error = flagText(err)
		row.observed = "error"
	}
	return row
}

// printScenario is the account of one scenario's run: the verdicts
// against the expectation, the violations found, and the explanation.
func printScenario(w io.Writer, s scenarios.Scenario, o scenarios.Outcome, err error) {
	mark := "AS EXPECTED"
	switch {
	case errors.Is(err, sut.ErrUnsupported):
		fmt.Fprintf(w, "\nSKIPPED  %s  (%s): it cannot run on this backend\n  reason       %s\n", s.Name, s.Lock, flagText(err))
		return
	case err != nil:
		mark = "ERROR"
	case !o.Pass():
		mark = "UNEXPECTED"
	}
	fmt.Fprintf(w, "\n%s  %s  (%s, %.1fs)\n", mark, s.Name, s.Lock, o.Elapsed.Seconds())
	if s.Instead != "" && len(s.Kinds) > 0 {
		fmt.Fprintf(w, "  %-13s %s instead of %s, as a %s\n", "lock", s.Lock, s.Instead, s.Kinds[0])
	}
	if err != nil {
		fmt.Fprintf(w, "  error        %s\n", flagText(err))
	}
	for _, n := range scenarios.Checkers() {
		got := string(o.Observed[n])
		if got == "" {
			got = "-"
		}
		want := "expected " + string(s.Expect.Of(n))
		if s.Expect.Of(n) == "" {
			want = "no prediction for this kind of lock: judged as a run"
		}
		fmt.Fprintf(w, "  %-13s %-8s (%s)\n", n, got, want)
	}
	if o.Result.Reason != "" {
		fmt.Fprintf(w, "  %-13s %s\n", "reason", o.Result.Reason)
	}
	printEvidence(w, o.Result)
	printSizes(w, o.Sizes)
	// Findings, the most telling first; the harmless ones ("·", a stale
	// write the storage rejected) are often the point of a scenario whose
	// verdict is valid.
	printFindings(w, o.Result.Violations, o.Why, 4)
	fmt.Fprintf(w, "  source       %s\n", s.Source)
	fmt.Fprintln(w, wrap(s.Explanation, "  ", 92))
	if o.Dir != "" {
		fmt.Fprintf(w, "  report       %s/index.html\n", o.Dir)
	}
}

func printScenarioTable(w io.Writer, rows []scenarioRow) {
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tLOCK\tEXPECTED\tOBSERVED\tSECONDS\t")
	pass, skipped := 0, 0
	var total float64
	for _, r := range rows {
		ok := "ok"
		if r.Skipped {
			ok = "skipped"
			skipped++
		} else if !r.Pass {
			ok = "FAIL"
		} else {
			pass++
		}
		total += r.Seconds
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.1f\t%s\n", r.Name, r.Lock, r.expected, r.observed, r.Seconds, ok)
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "\n%d of %d as expected in %s", pass, len(rows), (time.Duration(total * float64(time.Second))).Round(time.Second))
	if skipped > 0 {
		fmt.Fprintf(w, "; %d skipped: this backend cannot cause their faults (see each one's reason)", skipped)
	}
	fmt.Fprintln(w)
}

// wrap breaks s into lines of at most width characters, each prefixed.
func wrap(s, prefix string, width int) string {
	var b strings.Builder
	line := prefix
	for _, word := range strings.Fields(s) {
		if len(line) > len(prefix) && len(line)+1+len(word) > width {
			b.WriteString(line + "\n")
			line = prefix
		}
		if len(line) > len(prefix) {
			line += " "
		}
		line += word
	}
	b.WriteString(line)
	return b.String()
}
