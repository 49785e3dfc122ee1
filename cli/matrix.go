package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/matrix"
	"github.com/lockharness/lockharness/nemesis"
	lockrun "github.com/lockharness/lockharness/run"
	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/sut/docker"
)

// exitInterrupted is the exit code of a matrix stopped by Ctrl-C (128 +
// SIGINT, as shells report it).
const exitInterrupted = 130

// matrixOutputs are the flags that copy a matrix's outputs out of the
// store, for CI steps that look for them elsewhere.
type matrixOutputs struct {
	junit, summary, expect string
}

func (o *matrixOutputs) flags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.expect, "expect", "", "expectations file (YAML): per cell pattern valid, invalid or flaky; without it every lock cell must be valid")
	f.StringVar(&o.junit, "junit", "", "also write the JUnit XML here (it is always in STORE/NAME/junit.xml)")
	f.StringVar(&o.summary, "summary", "", "also write the markdown summary here, e.g. $GITHUB_STEP_SUMMARY")
}

// matrixFlags are `harness matrix`'s flags: the spec they fill in, and
// what is the command's own.
type matrixFlags struct {
	spec                   matrix.Spec
	nemeses, scenarioNames []string
	seeds                  int
	shard, store           string
	backends               []string
	outs                   matrixOutputs
	lockCmd                string
}

func newMatrixCmd(a *app) *cobra.Command {
	var mf matrixFlags
	mf.spec.Run = matrix.DefaultRunParams()
	cmd := &cobra.Command{
		Use:   "matrix --locks … --nemeses … --seeds N | --scenarios all --repeat N",
		Short: "run many cells (lock × nemesis set × seed) and check each against an expectation",
		Long: `A matrix is many runs judged together, for nightly CI: each cell (lock × nemesis set × seed,
or scenario × repetition) is a normal run in the store under store/matrix.<lock>.<nemeses>.seed-<n>/,
judged against the expectations file. Re-running the same command resumes: cells already done
in the store are not run again. --shard i/n runs the cells whose index in the sorted list is
i-1 mod n; "harness matrix merge" joins the shards' stores.

--backends local,docker runs every cell on both backends: local redis-server processes and
Docker containers of --image. A docker cell's ID starts with docker/ (docker/token/kill/seed-1),
its runs go under store/matrix.docker.<lock>…, its reproduce command carries --backend docker,
and the heat map has a row per lock and backend. An expectation rule may name a backend.

Outputs in STORE/NAME/: matrix.json, junit.xml, summary.md, heatmap.png, heatmap.svg.
Exit codes: 0 every cell met its expectation (flaky ones aside), 1 a cell missed it,
2 a cell could not be run or bad input, 130 interrupted.`,
		Example: `  harness matrix --locks token,fenced,redlock,redsync --nemeses partition,clock,kill,client-pause \
      --seeds 3 --expect matrix/expectations.yaml --junit junit.xml
  harness matrix --shard 2/8 …
  harness matrix --nemeses partition+clock …   # one set of two composed nemeses
  harness matrix --backends local,docker …     # every cell on local processes and in containers
  harness matrix --scenarios all --repeat 20`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return mf.run(cmd, a) },
	}
	mf.add(cmd)
	cmd.AddCommand(newMatrixMergeCmd(a))
	return cmd
}

// add defines the flags.
func (mf *matrixFlags) add(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&mf.spec.Name, "name", "matrix", "the matrix's directory in the store, for its outputs")
	f.StringSliceVar(&mf.spec.Locks, "locks", nil, "locks, comma-separated (see: harness locks)")
	f.StringSliceVar(&mf.nemeses, "nemeses", nil, "nemesis sets, comma-separated; join nemeses of one set with '+' (partition+clock), 'none' for no faults")
	f.IntVar(&mf.seeds, "seeds", 3, "seeds 1…N for every lock × nemesis set")
	f.StringSliceVar(&mf.scenarioNames, "scenarios", nil, "catalogued scenarios to run as cells, or 'all' (judged by their own expected verdicts unless a rule names them)")
	f.IntVar(&mf.spec.Repeat, "repeat", 1, "runs of each scenario")
	f.StringVar(&mf.shard, "shard", "", "run only shard i of n (i/n): the cells whose index in the sorted list is i-1 mod n")
	f.StringVar(&mf.store, "store", "store", "directory runs are written to (and resumed from)")
	f.StringSliceVar(&mf.backends, "backends", []string{backendLocal}, "where the cells run, each cell on each: local (redis-server processes), docker (containers, see --image), or local,docker")
	f.StringVar(&mf.spec.Image, "image", "", "with docker in --backends: the Redis image of the docker cells (default "+docker.DefaultImage+", built by make image)")
	f.IntVar(&mf.spec.Run.Clients, "clients", mf.spec.Run.Clients, "concurrent clients per cell")
	f.IntVar(&mf.spec.Run.Keys, "keys", mf.spec.Run.Keys, "lock keys per cell")
	f.DurationVar(&mf.spec.Run.TTL, "ttl", mf.spec.Run.TTL, "lease length")
	f.DurationVar(&mf.spec.Run.TimeLimit, "time-limit", mf.spec.Run.TimeLimit, "length of each cell's run phase")
	f.DurationVar(&mf.spec.Run.Recovery, "recovery", mf.spec.Run.Recovery, "fault-free period after each lock cell's final heal; 0 sizes each cell's from its TTL, faults and system (docs/faults.md)")
	f.DurationVar(&mf.spec.Run.NemesisInterval, "nemesis-interval", mf.spec.Run.NemesisInterval, "quiet time before each fault, and how long it lasts")
	f.DurationVar(&mf.spec.Run.Hold, "hold", mf.spec.Run.Hold, "how long a client works inside its critical section, so that faults land inside holds")
	f.DurationVar(&mf.spec.Run.ClientPause, "nemesis-client-pause", mf.spec.Run.ClientPause, "how long the client-pause nemesis pauses a holder")
	f.StringSliceVar(&mf.spec.Run.PartitionPatterns, "partition-patterns", mf.spec.Run.PartitionPatterns, "patterns a partition cell draws from (harness run --partition-patterns); the default leaves out isolate, whose heal on a single-node lock is a race, and adds holder")
	f.StringSliceVar(&mf.spec.Run.ClockModes, "clock-modes", mf.spec.Run.ClockModes, "modes a clock cell draws from (harness run --clock-modes); the default, bump, leaves out strobe and drift, whose verdict on a lock hangs on when each grant falls in the fault")
	f.BoolVar(&mf.spec.Run.AwaitHolders, "nemesis-await", mf.spec.Run.AwaitHolders, "each fault waits for a holder before it strikes (harness run --nemesis-await), so that a cell's verdict is its seed's, not the machine's timing")
	f.DurationVar(&mf.spec.Run.CheckTimeout, "check-timeout", mf.spec.Run.CheckTimeout, "bound on each linearizability check")
	mf.outs.flags(cmd)
	addLockCmdFlag(f, &mf.lockCmd)
}

// run checks everything it is given, every cell included, then runs the
// cells and writes the outputs; a matrix interrupted exits 130 with the
// cells that finished.
func (mf *matrixFlags) run(cmd *cobra.Command, a *app) error {
	spec, sh, err := mf.build(cmd.Context(), a)
	if err != nil {
		return &codeError{exitError, err}
	}
	up, err := matrixBackends(cmd.Context(), spec, sh, mf.store)
	if err != nil {
		return &codeError{exitError, err}
	}
	errw := cmd.ErrOrStderr()
	m, err := matrix.Run(cmd.Context(), spec, sh, matrix.Options{Store: mf.store, Progress: errw, ProgressTTY: isTerminal(errw), Backends: up})
	interrupted := errors.Is(err, matrix.ErrInterrupted)
	if err != nil && !interrupted {
		return &codeError{exitError, err}
	}
	code, werr := finishMatrix(cmd.OutOrStdout(), mf.store, m, mf.outs)
	if werr != nil {
		return &codeError{exitError, werr}
	}
	if interrupted {
		return &codeError{exitInterrupted, errors.New("interrupted: the cells that finished are in matrix.json; run the same command again to resume")}
	}
	if code != 0 {
		return &codeError{code: code}
	}
	return nil
}

// build is the matrix's spec and shard from the flags, the names in them
// checked (locks, nemeses, scenarios, backends) and the expectations read.
func (mf *matrixFlags) build(ctx context.Context, a *app) (matrix.Spec, matrix.Shard, error) {
	sh, err := matrix.ParseShard(mf.shard)
	if err != nil {
		return matrix.Spec{}, sh, err
	}
	spec := mf.spec
	reg, adapted, err := a.invocationLocks(mf.lockCmd)
	if err != nil {
		return spec, sh, err
	}
	spec.Registry = reg
	if adapted != "" {
		if len(spec.Locks) == 0 {
			spec.Locks = []string{adapted}
		}
		spec.LockCmds = map[string]string{adapted: mf.lockCmd}
	}
	spec.Backends = mf.backends
	spec.Nemeses = matrix.ParseNemesisSets(mf.nemeses)
	if len(spec.Locks) > 0 {
		if spec.Seeds, err = matrix.SeedsFlag(mf.seeds); err != nil {
			return spec, sh, err
		}
	}
	if len(mf.scenarioNames) > 0 {
		if spec.Scenarios, err = matrix.ScenarioRefs(mf.scenarioNames); err != nil {
			return spec, sh, err
		}
	}
	if err := checkNames(spec); err != nil {
		return spec, sh, err
	}
	if mf.outs.expect != "" {
		if spec.Expect, err = matrix.ReadExpectations(ctx, mf.outs.expect, knownNames(reg)); err != nil {
			return spec, sh, err
		}
	}
	if err := checkBackends(spec); err != nil {
		return spec, sh, err
	}
	return spec, sh, spec.Validate()
}

func newMatrixMergeCmd(a *app) *cobra.Command {
	var store, name string
	var outs matrixOutputs
	cmd := &cobra.Command{
		Use:   "merge --store OUT SHARD_STORE…",
		Short: "join the stores of a matrix's shards and write the whole matrix's outputs",
		Long: `Copies every finished cell of each shard's store into OUT, then writes matrix.json, junit.xml,
summary.md and the heat map for the whole matrix into OUT/NAME/. Shards must come from the same
matrix (same cells and run settings). A cell no shard finished counts as not run (exit 2).`,
		Example: `  harness matrix merge --store merged shard-1/store shard-2/store --junit junit.xml`,
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, dirs []string) error {
			var expect *matrix.Expectations
			if outs.expect != "" {
				e, err := matrix.ReadExpectations(cmd.Context(), outs.expect, knownNames(a.opts.registry()))
				if err != nil {
					return &codeError{exitError, err}
				}
				expect = &e
			}
			m, err := matrix.Merge(store, name, dirs, expect)
			if err != nil {
				return &codeError{exitError, err}
			}
			code, err := finishMatrix(cmd.OutOrStdout(), store, m, outs)
			if err != nil {
				return &codeError{exitError, err}
			}
			if code != 0 {
				return &codeError{code: code}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&store, "store", "store", "the merged store (created if missing)")
	cmd.Flags().StringVar(&name, "name", "matrix", "the matrix's name (its directory in each store)")
	outs.flags(cmd)
	return cmd
}

// finishMatrix writes the outputs, prints the account and returns the exit
// code the matrix earned.
func finishMatrix(w io.Writer, store string, m matrix.Matrix, outs matrixOutputs) (int, error) {
	dir, err := matrix.WriteOutputs(store, m)
	if err != nil {
		return exitError, err
	}
	for _, c := range []struct{ to, from string }{{outs.junit, matrix.JUnitFile}, {outs.summary, matrix.SummaryFile}} {
		if c.to == "" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, c.from))
		if err != nil {
			return exitError, err
		}
		if c.from == matrix.SummaryFile && c.to == os.Getenv("GITHUB_STEP_SUMMARY") {
			// The step summary is appended to, never replaced.
			f, err := os.OpenFile(c.to, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				return exitError, fmt.Errorf("--summary: %w", err)
			}
			_, err = f.Write(b)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return exitError, fmt.Errorf("--summary: %w", err)
			}
			continue
		}
		if err := matrix.WriteFileAtomic(c.to, b); err != nil {
			return exitError, err
		}
	}
	printMatrix(w, dir, m)
	return m.ExitCode(), nil
}

func printMatrix(w io.Writer, dir string, m matrix.Matrix) {
	label := "MATRIX"
	if m.Shard != "" {
		label += " (shard " + m.Shard + ")"
	}
	verdict := map[int]string{0: "AS EXPECTED", 1: "EXPECTATION MISSED", 2: "INCOMPLETE"}[m.ExitCode()]
	fmt.Fprintf(w, "\n%s  %s  %s\n", verdict, label, m.Tally)
	for _, c := range m.Misses() {
		fmt.Fprintf(w, "  ✗ %s: %s\n", c.ID(), c.Explain)
		fmt.Fprintf(w, "      reproduce  %s\n", c.Command)
		if c.Dir != "" {
			fmt.Fprintf(w, "      report     %s\n", filepath.Join(filepath.Dir(dir), filepath.FromSlash(c.Dir), "index.html"))
		}
	}
	for _, c := range m.Cells {
		if c.Outcome == matrix.Flaky {
			fmt.Fprintf(w, "  ~ %s: %s\n", c.ID(), c.Explain)
		}
	}
	fmt.Fprintf(w, "  heat map     %s\n", filepath.Join(dir, matrix.HeatmapPNG))
	fmt.Fprintf(w, "  matrix       %s (junit.xml, summary.md beside it)\n", filepath.Join(dir, matrix.JSONFile))
	if m.WallSeconds > 0 {
		fmt.Fprintf(w, "  wall time    %s\n", (time.Duration(m.WallSeconds * float64(time.Second))).Round(time.Second))
	}
}

// checkNames rejects unknown locks and nemeses before any cell runs.
func checkNames(spec matrix.Spec) error {
	reg := spec.Registry
	if reg == nil {
		reg = locks.Builtin()
	}
	for _, l := range spec.Locks {
		if _, err := reg.Lookup(l); err != nil {
			return err
		}
	}
	known := map[string]bool{}
	var names []string
	for _, n := range nemesis.Known() {
		known[n.Name] = true
		names = append(names, n.Name)
	}
	for _, set := range spec.Nemeses {
		for _, n := range set {
			if !known[n] {
				return fmt.Errorf("unknown nemesis %q in --nemeses (known: %s; join a set with '+')", n, strings.Join(names, ", "))
			}
		}
	}
	return nil
}

// knownNames are the names an expectations file may use.
// knownNames are the names an expectations file may use: the locks of the
// command's registry (the main's, with --lock-cmd's) and the faults.
func knownNames(reg *locks.Registry) matrix.Known { return matrix.KnownNames(reg, nemesis.Builtin()) }

// checkBackends rejects a backend the harness does not know and an image
// no cell would use, before the engine is asked anything.
func checkBackends(spec matrix.Spec) error {
	if len(spec.Backends) == 0 {
		return fmt.Errorf("--backends is empty: name local, docker or both (--backends local,docker)")
	}
	for _, b := range spec.Backends {
		if b != backendLocal && b != backendDocker {
			return fmt.Errorf("unknown backend %q in --backends: use local, docker or both (--backends local,docker)", b)
		}
	}
	if spec.Image != "" && !slices.Contains(spec.Backends, backendDocker) {
		return fmt.Errorf("--image %s is the image of docker cells: add docker to --backends (--backends local,docker), or leave out --image", spec.Image)
	}
	return nil
}

// matrixBackends resolves the spec's backends as `harness run --backend`
// does, validates every cell of the shard on its backend, and for docker
// asks the engine now, with its image: a matrix that cannot run a cell
// says so before any cell runs, not after the cells before it.
func matrixBackends(ctx context.Context, spec matrix.Spec, sh matrix.Shard, store string) (map[string]sut.Backend, error) {
	out := map[string]sut.Backend{}
	for _, name := range spec.BackendList() {
		bf := backendFlags{backend: name}
		if name == backendDocker {
			bf.image = spec.Image
		}
		b, err := bf.resolve()
		if err != nil {
			return nil, err
		}
		out[name] = b
	}
	if err := validateCells(spec, sh, store, out); err != nil {
		return nil, err
	}
	if !slices.Contains(spec.BackendList(), backendDocker) {
		return out, nil
	}
	if err := docker.Available(ctx); err != nil {
		return nil, fmt.Errorf("--backends docker: %w (or leave docker out of --backends)", err)
	}
	image := spec.Image
	if image == "" {
		image = docker.DefaultImage
	}
	if _, err := docker.InspectImage(ctx, image); err != nil {
		return nil, fmt.Errorf("--backends docker: %w", err)
	}
	return out, nil
}

// matrixShared are the fields the matrix's flags set in every lock cell:
// a problem of one of them is its flag's, not one cell's.
var matrixShared = map[string]bool{"Workload.Clients": true, "Workload.Keys": true, "Workload.TTL": true, "TimeLimit": true,
	"Recovery": true, "Nemesis.Interval": true, "CheckTimeout": true, "Workload.Hold": true, "Nemesis.ClientPause": true}

// validateCells validates every cell of the shard as its run will
// (lockrun.Config.Validate), before the first one runs. A cell its
// backend cannot run (unsupported) is left to the matrix, which records it
// as an error and goes on; a problem of a setting every lock cell shares
// is its flag's, the others are the cell's.
func validateCells(spec matrix.Spec, sh matrix.Shard, store string, backends map[string]sut.Backend) error {
	for _, c := range sh.Select(spec.Cells()) {
		cfg, err := spec.CellConfig(c, store)
		if err != nil {
			return fmt.Errorf("cell %s: %w", c.ID(), err)
		}
		onLocal := c.Backend == "" || c.Backend == matrix.DefaultBackend
		if onLocal {
			cfg.Backend = backends[matrix.DefaultBackend]
		} else {
			cfg.Backend = backends[c.Backend]
		}
		err = cfg.Validate()
		var fe *lockrun.FieldError
		switch {
		case err == nil:
		case errors.Is(err, sut.ErrUnsupported) && !onLocal:
		case c.Scenario == "" && errors.As(err, &fe) && matrixShared[fe.Field]:
			return err
		default:
			return fmt.Errorf("cell %s: %w", c.ID(), err)
		}
	}
	return nil
}
