package matrix

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/lockharness/lockharness"
	"github.com/lockharness/lockharness/cluster"
	"github.com/lockharness/lockharness/deploy"
	"github.com/lockharness/lockharness/scenarios"
)

// Options tunes Run.
type Options struct {
	// Store is the directory of the runs (default "store").
	Store string
	// Progress receives one line per cell, or with ProgressTTY one line
	// redrawn in place; nil discards it.
	Progress    io.Writer
	ProgressTTY bool
	// Backends starts the deployment of each backend the spec names but
	// local (whose deployment is local redis-server processes): the
	// caller resolves them (the command line's --backends, --image), so
	// that this package knows no backend. A backend of the spec missing
	// here stops the matrix before it runs a cell: a configuration error.
	Backends map[string]cluster.Backend
}

// backend is the deployment cell c runs on: nil for local processes.
func (o Options) backend(c Cell) (cluster.Backend, error) {
	if c.Backend == "" || c.Backend == DefaultBackend {
		return o.Backends[DefaultBackend], nil // normally nil: local processes
	}
	b, ok := o.Backends[c.Backend]
	if !ok || b == nil {
		return nil, &lockharness.UsageError{Err: fmt.Errorf("backend %q: the matrix was given no way to start it (known: local, docker)", c.Backend)}
	}
	return b, nil
}

// ErrInterrupted is returned, with the matrix of the cells that finished,
// when ctx is cancelled: the cell that was running is not done and runs
// again next time.
var ErrInterrupted = errors.New("matrix interrupted")

// Run runs the shard's cells one after another, skipping those already
// done in the store (so re-running the same command resumes), and returns
// the judged matrix. Cells that cannot be run are recorded as errors and
// the matrix goes on; a configuration error (an unknown lock) stops it.
func Run(ctx context.Context, spec Spec, shard Shard, opts Options) (Matrix, error) {
	if opts.Store == "" {
		opts.Store = "store"
	}
	// Every backend can be started, or nothing runs.
	for _, b := range spec.BackendList() {
		if _, err := opts.backend(Cell{Backend: b}); err != nil {
			return Matrix{}, err
		}
	}
	start := time.Now()
	cells := shard.Select(spec.Cells())
	p := progress{w: opts.Progress, tty: opts.ProgressTTY, total: len(cells), start: start}
	var results []CellResult
	var stopErr error
	for i, c := range cells {
		if stopErr != nil {
			results = append(results, CellResult{Cell: c, Test: c.TestName(), Command: spec.Reproduce(c)})
			continue
		}
		r, done, err := Lookup(opts.Store, c)
		if err != nil {
			return Matrix{}, err
		}
		resumed := done
		if !done {
			p.running(i, c)
			r, err = runCell(ctx, spec, c, opts)
			switch {
			case errors.Is(err, lockharness.ErrInterrupted) || ctx.Err() != nil:
				stopErr = ErrInterrupted
				results = append(results, CellResult{Cell: c, Test: c.TestName(), Command: spec.Reproduce(c)})
				continue
			case err != nil:
				var ue *lockharness.UsageError
				why := err.Error()
				switch {
				case errors.Is(err, deploy.ErrUnsupported) && c.Backend != "" && c.Backend != DefaultBackend:
					// The backend cannot cause this cell's faults (as
					// `scenario run` skips such a scenario): the cell
					// could not be run, the others can.
					why = fmt.Sprintf("cannot run on backend %s: %v", c.Backend, err)
				case errors.As(err, &ue):
					return Matrix{}, fmt.Errorf("cell %s: %w", c.ID(), err)
				}
				r = CellResult{Cell: c, Test: c.TestName(), Command: spec.Reproduce(c), Error: why}
			}
		}
		r.Expectation = spec.Expect.For(c)
		r.Judge()
		results = append(results, r)
		p.done(i, r, resumed)
	}
	m := Build(spec, shard, results)
	m.WallSeconds = time.Since(start).Seconds()
	p.finish(m.Tally)
	return m, stopErr
}

// runCell runs one cell to its end and marks it done.
func runCell(ctx context.Context, spec Spec, c Cell, opts Options) (CellResult, error) {
	backend, err := opts.backend(c)
	if err != nil {
		return CellResult{}, err
	}
	var cfg lockharness.Config
	if c.Scenario != "" {
		s, err := scenarios.Lookup(c.Scenario)
		if err != nil {
			return CellResult{}, &lockharness.UsageError{Err: err}
		}
		// As scenarios.Run does, under the cell's own test name.
		cfg = s.RunConfig(opts.Store)
		cfg.Test = c.TestName()
	} else {
		cfg = spec.RunConfig(c, opts.Store)
	}
	cfg.Backend = backend
	// The record's command reproduces the cell on its backend (a
	// scenario's own command line does not name one).
	cfg.Command = spec.Reproduce(c)
	out, err := lockharness.Run(ctx, cfg)
	if err != nil {
		return CellResult{}, err
	}
	if out.Results.Verdict == "" {
		return CellResult{}, fmt.Errorf("run %s produced no verdict", out.Dir)
	}
	if err := MarkDone(out.Dir, c); err != nil {
		return CellResult{}, err
	}
	rel, err := filepath.Rel(opts.Store, out.Dir)
	if err != nil {
		return CellResult{}, fmt.Errorf("run directory: %w", err)
	}
	return FromResults(c, filepath.ToSlash(rel), out.Results), nil
}

// progress prints the matrix's progress: cells done and left, the tally
// of verdicts and misses so far.
type progress struct {
	w     io.Writer
	tty   bool
	total int
	start time.Time
	tally Tally
}

func (p *progress) line(i int) string {
	t := p.tally
	return fmt.Sprintf("[%d/%d] %d left · valid %d invalid %d unknown %d · missed %d flaky %d errors %d · %s",
		i, p.total, p.total-i, t.Valid, t.Invalid, t.Unknown, t.Missed, t.Flaky, t.Errors,
		time.Since(p.start).Round(time.Second))
}

func (p *progress) running(i int, c Cell) {
	if p.w != nil && p.tty {
		fmt.Fprintf(p.w, "\r%-100s", truncate(p.line(i)+" · running "+c.ID(), 100))
	}
}

func (p *progress) done(i int, r CellResult, resumed bool) {
	p.tally.Add(r)
	if p.w == nil {
		return
	}
	what := fmt.Sprintf("%s: %s, %s", r.ID(), orDash(string(r.Verdict)), r.Outcome)
	if resumed {
		what += " (already in the store)"
	}
	if r.Outcome == Missed || r.Outcome == Error {
		what += " — " + r.Explain
	}
	if p.tty {
		// Misses and errors stay on screen; the rest is redrawn over.
		if r.Outcome == Missed || r.Outcome == Error {
			fmt.Fprintf(p.w, "\r%-100s\n", what)
		}
		fmt.Fprintf(p.w, "\r%-100s", truncate(p.line(i+1), 100))
		return
	}
	fmt.Fprintf(p.w, "%s  %s\n", p.line(i+1), what)
}

func (p *progress) finish(t Tally) {
	if p.w == nil {
		return
	}
	if p.tty {
		fmt.Fprintln(p.w)
	}
	fmt.Fprintf(p.w, "%s in %s\n", t, time.Since(p.start).Round(time.Second))
}

func truncate(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// Merge joins the stores of a matrix's shards into store out: it copies
// each finished cell's run directory, then rebuilds the whole matrix from
// out, judged by expect (or, when expect has no file, by the expectations
// the shards were run with). Cells that no shard finished are not-run.
func Merge(out, name string, dirs []string, expect *Expectations) (Matrix, error) {
	var spec *Spec
	for _, d := range dirs {
		m, err := ReadJSON(filepath.Join(d, name, JSONFile))
		if err != nil {
			return Matrix{}, fmt.Errorf("shard %s: %w (is it the store of a `harness matrix` run named %q?)", d, err, name)
		}
		if spec == nil {
			s := m.Spec
			spec = &s
		} else if err := sameMatrix(*spec, m.Spec); err != nil {
			return Matrix{}, fmt.Errorf("shard %s belongs to another matrix: %w", d, err)
		}
		for _, c := range m.Cells {
			if c.Dir == "" || c.Outcome == NotRun || c.Outcome == Error {
				continue
			}
			if err := copyRun(filepath.Join(d, filepath.FromSlash(c.Dir)), filepath.Join(out, filepath.FromSlash(c.Dir))); err != nil {
				return Matrix{}, fmt.Errorf("merge %s: %w", c.ID(), err)
			}
		}
	}
	if spec == nil {
		return Matrix{}, fmt.Errorf("nothing to merge: name the shards' store directories")
	}
	if expect != nil {
		spec.Expect = *expect
	}
	var results []CellResult
	for _, c := range spec.Cells() {
		r, ok, err := Lookup(out, c)
		if err != nil {
			return Matrix{}, err
		}
		if !ok {
			r = CellResult{Cell: c, Test: c.TestName(), Command: spec.Reproduce(c)}
		}
		results = append(results, r)
	}
	return Build(*spec, Shard{}, results), nil
}

// copyRun copies a run directory (regular files and subdirectories) to
// dst, unless dst exists already (the same run merged twice, or a merge
// into one of the shards' own stores).
func copyRun(src, dst string) error {
	if _, err := os.Stat(dst); err == nil {
		return nil
	}
	tmp := dst + ".merging"
	_ = os.RemoveAll(tmp)
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(tmp, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case !d.Type().IsRegular():
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
	if err != nil {
		_ = os.RemoveAll(tmp)
		return fmt.Errorf("copy %s: %w", src, err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		_ = os.RemoveAll(tmp)
		return fmt.Errorf("copy %s: %w", src, err)
	}
	return nil
}

// scenarioNemeses are the nemeses a scenario's script uses, in order of
// first use.
func scenarioNemeses(s scenarios.Scenario) []string {
	var out []string
	seen := map[string]bool{}
	add := func(n string) {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	for _, n := range s.Run.Nemesis.Names {
		add(n)
	}
	for _, st := range s.Run.Script {
		add(st.Nemesis)
	}
	return out
}

// ScenarioRefs resolves scenario names ("all" for the catalogue) into the
// spec's references.
func ScenarioRefs(names []string) ([]ScenarioRef, error) {
	var list []scenarios.Scenario
	if len(names) == 1 && strings.EqualFold(names[0], "all") {
		list = scenarios.Catalogue()
	} else {
		for _, n := range names {
			s, err := scenarios.Lookup(n)
			if err != nil {
				return nil, err
			}
			list = append(list, s)
		}
	}
	out := make([]ScenarioRef, 0, len(list))
	for _, s := range list {
		out = append(out, ScenarioRef{Name: s.Name, Lock: s.Lock, Nemeses: scenarioNemeses(s)})
	}
	return out, nil
}
