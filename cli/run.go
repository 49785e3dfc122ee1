package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/reports"
	lockrun "github.com/lockharness/lockharness/run"
)

// runFlags are `harness run`'s flags: the run's configuration they fill
// in, and what is the command's own.
type runFlags struct {
	cfg     lockrun.Config
	jsonOut bool
	backend backendFlags
	lockCmd string
	// schedule is the schedule file to run (--schedule).
	schedule string
}

// runGiven are the fields `harness run` always sets from a flag whose
// default is not zero: a zero there is a mistake, not the library's
// default (lockrun.Config.Given).
var runGiven = []string{"Lock", "Workload.Clients", "Workload.Keys", "Workload.TTL", "TimeLimit"}

func newRunCmd(a *app) *cobra.Command {
	var rf runFlags
	cmd := &cobra.Command{
		Use:   "run --lock NAME [flags]",
		Short: "run a lock against real Redis under faults and check the history",
		Long: `Runs a lock against real servers under faults and checks the history. The flags say what
to run, or --schedule FILE does: a schedule file (YAML) with the lock, the deployment, the
workload and the fault steps, such as the schedule.yaml every run writes into its directory
(harness run --schedule store/latest/schedule.yaml replays a run) or a scenario of the
catalogue's kind (see docs/schedules.md).`,
		Example: `  harness run --lock token --clients 5 --keys 1 --ttl 1s --time-limit 10s --seed 7
  harness run --lock set-nx-ex --client-pause 1.5s --time-limit 10s
  harness run --schedule store/latest/schedule.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var cfg lockrun.Config
			var err error
			if rf.schedule == "" {
				cfg, err = rf.config(cmd, a)
			} else {
				cfg, err = rf.scheduleConfig(cmd, a, rf.schedule)
				rf.output(cmd, &cfg)
			}
			if err != nil {
				return &codeError{exitError, err}
			}
			out, err := lockrun.Run(cmd.Context(), cfg)
			return rf.finish(cmd, out, err)
		},
	}
	rf.add(cmd.Flags())
	return cmd
}

// add defines the flags.
func (rf *runFlags) add(f *pflag.FlagSet) {
	cfg := &rf.cfg
	f.StringVar(&cfg.Lock, "lock", "", "lock under test (see: harness locks)")
	f.IntVar(&cfg.Nodes, "nodes", 0, "independent Redis nodes (default: 1, or 5 for Redlock-style locks)")
	f.IntVar(&cfg.Workload.Clients, "clients", 5, "concurrent clients")
	f.IntVar(&cfg.Workload.Keys, "keys", 1, "lock keys the clients compete for")
	f.DurationVar(&cfg.Workload.TTL, "ttl", time.Second, "lease length")
	f.DurationVar(&cfg.TimeLimit, "time-limit", 25*time.Second, "length of the run phase")
	f.DurationVar(&cfg.Recovery, "recovery", 0, "fault-free period after the final heal (liveness); 0 sizes it from the TTL and the faults used (docs/faults.md)")
	f.DurationVar(&cfg.Workload.ClientPause, "client-pause", 0, "the workload's own random stop-the-world pause inside the critical section (a GC pause; see --client-pause-rate); for the nemesis's pause of a holder see --nemesis-client-pause")
	f.Float64Var(&cfg.Workload.ClientPauseRate, "client-pause-rate", 0.1, "probability of --client-pause per critical section")
	f.DurationVar(&cfg.Workload.Hold, "hold", 0, "how long a client works inside its critical section")
	f.DurationVar(&cfg.Workload.AcquireTimeout, "acquire-timeout", 0, "how long one acquire may wait for a held lock (0: try once)")
	f.BoolVar(&cfg.Workload.RenewBeforeWrite, "renew-before-write", false, "each client extends its lease right before it writes and skips the write when the lock refuses (the lock must have Renew)")
	f.IntVar(&cfg.ClientRetries, "client-retries", 0, "let the lock clients' go-redis retry a command that timed out or lost its connection this many times (0: off, the harness's default; a retry may run a command twice)")
	f.DurationVar(&cfg.CheckTimeout, "check-timeout", 30*time.Second, "bound on each linearizability check (unknown when exceeded)")
	f.Uint64Var(&cfg.Seed, "seed", 0, "random seed; the same seed replays the same choices (default: random, printed)")
	f.StringVar(&cfg.Store, "store", "store", "directory runs are written to")
	f.BoolVar(&rf.jsonOut, "json", false, "print results.json to stdout instead of the summary")
	f.StringVar(&rf.schedule, "schedule", "", "run this schedule file (YAML: the lock, deployment, workload and fault steps; a run's schedule.yaml replays it) instead of the flags")
	f.BoolVar(&cfg.AllowVacuous, "allow-vacuous", false, "exit 0 on a valid verdict even when nothing was granted or a requested fault never struck a holder (the coverage is still reported)")
	f.BoolVar(&cfg.AwaitHolders, "nemesis-await", false, "each random fault waits for a client holding a lock with half its lease left before it strikes (a fault on one node of a multi-node lock: a holder granted by every node), so that it strikes a holder whatever the machine's timing")
	addFaultFlags(f, cfg)
	addBackendFlags(f, &rf.backend)
	addLockCmdFlag(f, &rf.lockCmd)
}

// config is the run's configuration: the flags', with the backend they
// choose, the command line that reproduces the run (with the seed drawn
// when none was given), and where the phase log and the progress go.
func (rf *runFlags) config(cmd *cobra.Command, a *app) (lockrun.Config, error) {
	cfg := rf.cfg
	cfg.Given = runGiven
	if cmd.Flags().Changed("nemesis") {
		cfg.Given = append(slices.Clone(runGiven), "Nemesis.Names")
	}
	backend, err := rf.backend.resolve()
	if err != nil {
		return cfg, err
	}
	cfg.Backend = backend
	reg, adapted, err := a.invocationLocks(rf.lockCmd)
	if err != nil {
		return cfg, err
	}
	cfg.Registry = reg
	if cfg.Lock == "" {
		cfg.Lock = adapted
	}
	cfg.Command = a.command()
	if !cmd.Flags().Changed("seed") {
		cfg.Seed = drawSeed()
		cfg.Command += fmt.Sprintf(" --seed %d", cfg.Seed)
	}
	rf.output(cmd, &cfg)
	return cfg, nil
}

// output sends the phase log and the progress line to stderr, unless the
// results go to stdout as JSON.
func (rf *runFlags) output(cmd *cobra.Command, cfg *lockrun.Config) {
	if errw := cmd.ErrOrStderr(); !rf.jsonOut {
		cfg.Log = phaseLog{errw}
		cfg.Progress = errw
		cfg.ProgressTTY = isTerminal(errw)
	}
}

// drawSeed is a seed for a run that was given none (printed in its
// command line so that it replays).
func drawSeed() uint64 { return uint64(time.Now().UnixNano()%1_000_000) + 1 }

// finish prints what the run produced, the summary or results.json, and
// returns the command's exit: 2 for a run refused or not carried out (or
// interrupted), else the verdict's.
func (rf *runFlags) finish(cmd *cobra.Command, out lockrun.Outcome, err error) error {
	var ue *lockrun.UsageError
	if errors.As(err, &ue) {
		return &codeError{exitError, err}
	}
	if out.Dir == "" || out.Results.Verdict == "" {
		return &codeError{exitError, err}
	}
	if rf.jsonOut {
		if werr := writeJSON(cmd.OutOrStdout(), out.Results); werr != nil {
			return &codeError{exitError, werr}
		}
	} else {
		printSummary(cmd.OutOrStdout(), out.Dir, out.Results)
	}
	if err != nil {
		return &codeError{exitError, err}
	}
	return verdictCode(out.Results.Verdict)
}

// addFaultFlags adds the flags that choose faults and the topology they
// need.
func addFaultFlags(f *pflag.FlagSet, cfg *lockrun.Config) {
	f.StringSliceVar(&cfg.Nemesis.Names, "nemesis", nil, "faults to inject, comma-separated (see: harness nemeses)")
	f.DurationVar(&cfg.Nemesis.Interval, "nemesis-interval", 5*time.Second, "quiet time before each fault, and how long it lasts")
	f.StringVar(&cfg.Cluster.Topology, "topology", "", "independent (N masters), replicated (master + replicas; default with --nemesis failover) or cluster (Redis Cluster: --masters masters with --replicas replicas each; default with --nemesis cluster-failover)")
	f.IntVar(&cfg.Cluster.Replicas, "replicas", 0, "replicas of a replicated topology (default 2), or of each Redis Cluster master (default 1)")
	f.IntVar(&cfg.Cluster.Masters, "masters", 0, "masters of a Redis Cluster (--topology cluster; default 3)")
	f.StringVar(&cfg.Cluster.Failover, "failover", "", "replicated topology: sentinel (default) or manual (the harness promotes)")
	f.IntVar(&cfg.Cluster.BasePort, "base-port", 0, "put node i on base-port+i (and the storage node, sentinels after them) instead of free ports")
	f.StringVar(&cfg.Cluster.Persistence, "persistence", "", "lock nodes' persistence: none (default), aof-everysec or aof-always")
	f.StringSliceVar(&cfg.Nemesis.PartitionPatterns, "partition-patterns", nil, "patterns the partition nemesis draws from, comma-separated: isolate, halves, majorities-ring, bridge, client-split, or holder (the client of a holder alone, cut from every node while the others go on; named only); default every pattern the topology allows but holder")
	f.DurationVar(&cfg.Nemesis.RestartDelay, "restart-delay", 0, "how long a killed node stays down (antirez's delayed restart)")
	f.StringSliceVar(&cfg.Nemesis.ClockModes, "clock-modes", nil, "modes the clock nemesis draws from, comma-separated: bump, strobe, drift (default all; a mode left out is drawn as a bump)")
	f.DurationVar(&cfg.Nemesis.ClockBump, "clock-bump", time.Minute, "largest clock jump of the clock nemesis")
	f.DurationVar(&cfg.Nemesis.Latency, "latency", 100*time.Millisecond, "delay added by the latency nemesis")
	f.DurationVar(&cfg.Nemesis.ClientPause, "nemesis-client-pause", time.Second, "how long --nemesis client-pause stops a holder (it waits for a client to hold a lock, then pauses it inside its critical section)")
	f.StringSliceVar(&cfg.Nemesis.Failpoints, "failpoints", nil, "lock failpoints --nemesis client-pause or client-crash arm, comma-separated (the lock's own, e.g. redlock: after-majority,after-validity-check)")
}

// verdictCode maps a verdict to the command's exit.
func verdictCode(v checker.Verdict) error {
	switch v {
	case checker.Valid:
		return nil
	case checker.Invalid:
		return &codeError{code: exitInvalid}
	default:
		return &codeError{code: exitError}
	}
}

// phaseLog prefixes phase lines so they read as a log next to the
// progress line.
type phaseLog struct{ w io.Writer }

func (p phaseLog) Write(b []byte) (int, error) {
	if _, err := fmt.Fprintf(p.w, "phase  %s", b); err != nil {
		return 0, err
	}
	return len(b), nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// printFindings prints at most limit findings, the most telling first
// (as the report orders them): "!" for a violation, "·" for a finding
// that did no harm (a stale write the storage rejected); each followed by
// why[i], the history's explanation of it, when there is one.
func printFindings(w io.Writer, vs []checker.Violation, why map[int]string, limit int) {
	// The most telling of each kind first, so that a screen shows the
	// whole story (an overlap and the release that caused it, the update
	// that was lost), then the rest.
	order := reports.MostTelling(vs)
	var first, rest []int
	seen := map[string]bool{}
	for _, i := range order {
		if k := vs[i].Kind; !seen[k] {
			seen[k] = true
			first = append(first, i)
		} else {
			rest = append(rest, i)
		}
	}
	for n, i := range append(first, rest...) {
		if n == limit {
			fmt.Fprintf(w, "  … and %d more in results.json and the report\n", len(vs)-n)
			return
		}
		mark := "!"
		if !vs[i].Fatal {
			mark = "·"
		}
		fmt.Fprintf(w, "  %s %s\n", mark, vs[i].Description)
		if why[i] != "" {
			fmt.Fprintln(w, wrap("why: "+why[i], "    ", 92))
		}
	}
}

// printEvidence prints what the run exercised and, unless the reason line
// already says it, the required exposure it did not reach.
func printEvidence(w io.Writer, res checker.Result) {
	for i, l := range reports.Evidence(res.Coverage) {
		label := ""
		if i == 0 {
			label = "evidence"
		}
		fmt.Fprintf(w, "  %-13s %s\n", label, l)
	}
	if !strings.HasPrefix(res.Reason, checker.VacuousPrefix) {
		for _, u := range res.Vacuous {
			fmt.Fprintf(w, "  %-13s %s\n", "not reached", u)
		}
	}
}

// printSizes says how large each fault and client pause was against the
// lock's TTL (reports.Render).
// A long run has thousands of client pauses: the summary, one screen,
// gives the first maxSizes and points to the rest.
func printSizes(w io.Writer, sizes []string) {
	const maxSizes = 12
	for i, s := range sizes {
		if i == maxSizes {
			fmt.Fprintf(w, "  %-13s … and %d more in results.json and the report\n", "", len(sizes)-maxSizes)
			break
		}
		label := ""
		if i == 0 {
			label = "fault sizes"
		}
		fmt.Fprintf(w, "  %-13s %s\n", label, s)
	}
}

// printSummary is the one-screen account of a run.
func printSummary(w io.Writer, dir string, res reports.Results) {
	fmt.Fprintf(w, "\n%s  %s\n", strings.ToUpper(string(res.Verdict)), res.Meta.Test)
	if res.Meta.Partial != "" {
		fmt.Fprintf(w, "  PARTIAL       %s\n", res.Meta.Partial)
	}
	for _, name := range []string{"lock-promise", "resource", "liveness"} {
		c, ok := res.Checkers[name]
		if !ok {
			continue
		}
		line := fmt.Sprintf("  %-13s %s", name, c.Verdict)
		if c.Reason != "" {
			line += "  (" + c.Reason + ")"
		}
		fmt.Fprintln(w, line)
	}
	if res.Reason != "" {
		fmt.Fprintf(w, "  reason        %s\n", res.Reason)
	}
	printEvidence(w, res.Result)
	printSizes(w, res.Sizes)
	fmt.Fprint(w, "  operations   ")
	for _, f := range []string{"acquire", "release", "read", "write"} {
		c := res.Counts[f]
		fmt.Fprintf(w, " %s %d/%d/%d", f, c["ok"], c["fail"], c["info"])
	}
	fmt.Fprintln(w, "  (ok/fail/info)")
	printFindings(w, res.Violations, res.Why, 8)
	if dir != "" {
		// An interrupted check or drawing leaves no index.html.
		if _, err := os.Stat(filepath.Join(dir, reports.IndexFile)); err == nil {
			fmt.Fprintf(w, "  report       %s\n", filepath.Join(dir, reports.IndexFile))
		}
	}
	if res.Meta.Command != "" {
		fmt.Fprintf(w, "  reproduce    %s\n", res.Meta.Command)
	}
}
