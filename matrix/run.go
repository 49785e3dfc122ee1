package matrix

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/lockharness/lockharness/reports"
	lockrun "github.com/lockharness/lockharness/run"
	"github.com/lockharness/lockharness/scenarios"
	"github.com/lockharness/lockharness/sut"
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
	Backends map[string]sut.Backend
}

// backend is the deployment cell c runs on: nil for local processes.
func (o Options) backend(c Cell) (sut.Backend, error) {
	if c.Backend == "" || c.Backend == DefaultBackend {
		return o.Backends[DefaultBackend], nil // normally nil: local processes
	}
	b, ok := o.Backends[c.Backend]
	if !ok || b == nil {
		return nil, &lockrun.UsageError{Err: fmt.Errorf("backend %q: the matrix was given no way to start it (known: local, docker)", c.Backend)}
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
			case errors.Is(err, lockrun.ErrInterrupted) || ctx.Err() != nil:
				stopErr = ErrInterrupted
				results = append(results, CellResult{Cell: c, Test: c.TestName(), Command: spec.Reproduce(c)})
				continue
			case err != nil:
				var ue *lockrun.UsageError
				why := err.Error()
				switch {
				case errors.Is(err, sut.ErrUnsupported) && c.Backend != "" && c.Backend != DefaultBackend:
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
	cfg, err := spec.CellConfig(c, opts.Store)
	if err != nil {
		return CellResult{}, err
	}
	cfg.Backend = backend
	out, err := lockrun.Run(ctx, cfg)
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
//
// A shard's matrix.json is data from outside: every shard is read and
// every path it names checked (see runDir) before anything is copied, so
// a bad shard leaves out as it was, and each copy reads through an
// os.Root of its shard and writes through one of out, so no symbolic link
// leads it outside either.
func Merge(out, name string, dirs []string, expect *Expectations) (Matrix, error) {
	if err := reports.CheckName("matrix", name); err != nil {
		return Matrix{}, err
	}
	spec, copies, err := readShards(name, dirs)
	if err != nil {
		return Matrix{}, err
	}
	for _, c := range copies {
		if err := copyRun(c.shard, out, c.dir); err != nil {
			return Matrix{}, fmt.Errorf("merge %s: %w", c.cell, err)
		}
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
	return Build(spec, Shard{}, results), nil
}

// shardCopy is one finished cell's run to copy from a shard's store.
type shardCopy struct {
	shard, dir, cell string
}

// readShards reads every shard's matrix.json, checks that they belong to
// one matrix and that every run directory they name is a run of its cell
// inside the shard, and returns the spec and the runs to copy.
func readShards(name string, dirs []string) (Spec, []shardCopy, error) {
	var spec *Spec
	var copies []shardCopy
	for _, d := range dirs {
		m, err := ReadJSON(filepath.Join(d, name, JSONFile))
		if err != nil {
			return Spec{}, nil, fmt.Errorf("shard %s: %w (is it the store of a `harness matrix` run named %q?)", d, err, name)
		}
		if err := m.Spec.checkStoreNames(); err != nil {
			return Spec{}, nil, fmt.Errorf("shard %s: %s: %w", d, JSONFile, err)
		}
		if spec == nil {
			s := m.Spec
			spec = &s
		} else if err := sameMatrix(*spec, m.Spec); err != nil {
			return Spec{}, nil, fmt.Errorf("shard %s belongs to another matrix: %w", d, err)
		}
		for _, c := range m.Cells {
			if c.Dir == "" || c.Outcome == NotRun || c.Outcome == Error {
				continue
			}
			dir, err := c.runDir()
			if err == nil {
				err = checkInside(d, dir)
			}
			if err != nil {
				return Spec{}, nil, fmt.Errorf("shard %s: %s: %w: the file was edited or damaged; run the shard again, or remove the cell from it", d, JSONFile, err)
			}
			copies = append(copies, shardCopy{shard: d, dir: dir, cell: c.ID()})
		}
	}
	if spec == nil {
		return Spec{}, nil, fmt.Errorf("nothing to merge: name the shards' store directories")
	}
	return *spec, copies, nil
}

// checkStoreNames refuses a spec whose cells would name a store directory
// outside the store, hidden, or the latest link: each cell's test name is
// one element of a store path.
func (s Spec) checkStoreNames() error {
	if err := reports.CheckName("matrix", s.Name); err != nil {
		return err
	}
	for _, c := range s.Cells() {
		if err := reports.CheckName("cell "+c.ID()+"'s test", c.TestName()); err != nil {
			return err
		}
	}
	return nil
}

// runDir is the cell's run directory relative to a store, in the form
// the matrix writes it: its test name, a slash, one run's name. Anything
// else (an absolute path, "..", another cell's test, a deeper path) is
// refused: it would copy from outside the shard or into another place of
// the merged store.
func (r CellResult) runDir() (string, error) {
	test, run, ok := strings.Cut(r.Dir, "/")
	if !ok || test != r.TestName() {
		return "", fmt.Errorf("cell %s names run directory %q, not one of its own runs (%s/<run>)", r.ID(), r.Dir, r.TestName())
	}
	if err := reports.CheckName("cell "+r.ID()+"'s run", run); err != nil {
		return "", err
	}
	return filepath.Join(test, run), nil
}

// checkInside refuses a run directory that a symbolic link takes out of
// its shard, before anything is copied (copyRun would refuse it too, but
// only after the cells before it were copied).
func checkInside(shard, dir string) error {
	root, err := os.OpenRoot(shard)
	if err != nil {
		return fmt.Errorf("open shard: %w", err)
	}
	defer root.Close()
	run, err := root.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("run %s: %w", dir, err)
	}
	return run.Close()
}

// copyRun copies the run directory dir (relative to both stores) from
// store src to store dst, regular files and subdirectories only, unless it
// is there already (the same run merged twice, or a merge into one of the
// shards' own stores). Both ends go through an os.Root, which refuses a
// path that leaves its root, symbolic links included; the copy is written
// under a temporary name and renamed, so an interrupted merge leaves no
// half run.
func copyRun(src, dst, dir string) error {
	from, err := os.OpenRoot(src)
	if err != nil {
		return fmt.Errorf("open shard: %w", err)
	}
	defer from.Close()
	run, err := from.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("open run %s in shard %s: %w", dir, src, err)
	}
	defer run.Close()
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return fmt.Errorf("create store: %w", err)
	}
	to, err := os.OpenRoot(dst)
	if err != nil {
		return fmt.Errorf("open store: %w", err)
	}
	defer to.Close()
	if _, err := to.Lstat(dir); err == nil {
		return nil
	}
	tmp := dir + ".merging"
	_ = to.RemoveAll(tmp)
	if err := copyTree(run, to, tmp); err != nil {
		_ = to.RemoveAll(tmp)
		return fmt.Errorf("copy %s: %w", filepath.Join(src, dir), err)
	}
	if err := to.Rename(tmp, dir); err != nil {
		_ = to.RemoveAll(tmp)
		return fmt.Errorf("copy %s: %w", filepath.Join(src, dir), err)
	}
	return nil
}

// copyTree copies every directory and regular file under src into dir of
// dst, streaming each file; other entries (links, devices) are left out.
func copyTree(src, dst *os.Root, dir string) error {
	return fs.WalkDir(src.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		target := filepath.Join(dir, filepath.FromSlash(p))
		switch {
		case d.IsDir():
			return dst.MkdirAll(target, 0o755)
		case !d.Type().IsRegular():
			return nil
		}
		return copyFile(src, dst, filepath.FromSlash(p), target)
	})
}

func copyFile(src, dst *os.Root, from, to string) error {
	in, err := src.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := dst.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
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
