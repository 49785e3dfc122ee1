package matrix

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/nemesis"
	"github.com/lockharness/lockharness/reports"
	lockrun "github.com/lockharness/lockharness/run"
	"github.com/lockharness/lockharness/scenarios"
)

// Spec is what a matrix is made of: its cells and how each one runs. It is
// recorded in matrix.json so that shards can be checked to belong to the
// same matrix and merged without the command line that made them.
type Spec struct {
	// Name is the matrix's directory in the store (default "matrix"): its
	// outputs go to store/<name>/.
	Name string `json:"name"`
	// Backends are where the cells run, each cell on each: "local"
	// (redis-server processes) and "docker" (containers of Image). Empty
	// means local alone.
	Backends []string `json:"backends,omitempty"`
	// Image is the Redis image of the docker cells ("" the backend's
	// default); it is part of the matrix, as a cell's seed is.
	Image string `json:"image,omitempty"`
	// Backend is the single backend of a matrix.json written before
	// Backends existed; ReadJSON moves it into Backends, and it is never
	// written.
	Backend string   `json:"backend,omitempty"`
	Locks   []string `json:"locks,omitempty"`
	// Nemeses are the nemesis sets, each one column of the heat map; a
	// set of several nemeses composes them in one run.
	Nemeses [][]string `json:"nemeses,omitempty"`
	// Seeds are the seeds of every lock × nemesis set.
	Seeds []uint64 `json:"seeds,omitempty"`
	// Scenarios are catalogued scenarios, each run Repeat times.
	Scenarios []ScenarioRef `json:"scenarios,omitempty"`
	Repeat    int           `json:"repeat,omitempty"`
	// Run tunes every lock cell.
	Run RunParams `json:"run"`
	// Expect is the expectations file the cells are judged by.
	Expect Expectations `json:"expect"`
	// Registry holds the locks the lock cells name (nil: locks.Builtin());
	// the command line passes the registry its main was given. It is not
	// recorded: a merge reads the cells' results, not their locks. A
	// scenario cell runs with its scenario's own lock and registry.
	Registry *locks.Registry `json:"-"`
	// LockCmds are the adapter command lines (--lock-cmd) of the locks
	// that have one, by lock name: a cell's reproduce line carries its
	// lock's.
	LockCmds map[string]string `json:"lock_cmds,omitempty"`
}

// ScenarioRef names a catalogued scenario with the lock and nemeses it
// uses, for labels and the heat map.
type ScenarioRef struct {
	Name    string   `json:"name"`
	Lock    string   `json:"lock"`
	Nemeses []string `json:"nemeses,omitempty"`
}

// RunParams are the run settings shared by a matrix's lock cells; each
// one has the meaning of the `harness run` flag of the same name.
type RunParams struct {
	Clients   int           `json:"clients"`
	Keys      int           `json:"keys"`
	TTL       time.Duration `json:"ttl_ns"`
	TimeLimit time.Duration `json:"time_limit_ns"`
	// Recovery is every lock cell's recovery when given (--recovery);
	// zero, the default, gives each cell its own derived one
	// (lockrun.Config.DerivedRecovery: from the TTL, the faults and what
	// they leave behind on the cell's system), as `harness run` does.
	Recovery        time.Duration `json:"recovery_ns"`
	NemesisInterval time.Duration `json:"nemesis_interval_ns"`
	CheckTimeout    time.Duration `json:"check_timeout_ns"`
	// Hold is how long a client works inside its critical section: long
	// enough that a fault lands inside a hold, not between two.
	Hold time.Duration `json:"hold_ns"`
	// ClientPause is the client-pause nemesis's pause (the harness run flag
	// --nemesis-client-pause): 1.5 × the TTL outlives the lease by half.
	ClientPause time.Duration `json:"client_pause_ns"`
	// AwaitHolders makes each fault wait for a holder before it strikes
	// (harness run --nemesis-await): a cell's verdict is then its seed's,
	// not the machine's timing.
	AwaitHolders bool `json:"await_holders,omitempty"`
	// PartitionPatterns are the patterns a partition cell draws from
	// (harness run --partition-patterns); empty: every one its topology
	// allows.
	PartitionPatterns []string `json:"partition_patterns,omitempty"`
	// ClockModes are the modes a clock cell draws from (harness run
	// --clock-modes); empty: all.
	ClockModes []string `json:"clock_modes,omitempty"`
}

// DefaultClockModes are a nightly clock cell's: bumps alone. A strobe
// (flipping every 50ms for the fault's 2s) or a drift breaks a grant only
// when the grant falls in the wrong phase of it (a key set in the
// backward half of a strobe is gone at the next flip; a fast clock
// outlasts a 400ms hold only on a loaded machine), so its verdict varied
// between runs of one seed (fenced × clock seed 2 valid once, redlock
// and redsync × clock seeds 1 and 3 invalid once, of two passes). One
// jump at an awaited holder, undone at another, is decided by the
// schedule. The catalogue keeps the strobes and drifts.
func DefaultClockModes() []string { return []string{"bump"} }

// DefaultPartitionPatterns are a nightly partition cell's patterns: every
// one but isolate, and the holder's client cut alone. On a single-node
// lock isolate cuts every client off, so nobody holds at the heal and
// the verdict was the race of timed-out commands there (3 and 4 of 6
// runs invalid for set-nx-ex and setnx-expire); the holder pattern cuts
// one holder's client and orders its late release after the next grant.
func DefaultPartitionPatterns() []string {
	return []string{nemesis.PatternHolder, nemesis.PatternHalves, nemesis.PatternMajoritiesRing, nemesis.PatternBridge, nemesis.PatternClientSplit}
}

// DefaultRunParams are those of a nightly cell: short enough that a
// 72-cell matrix fits in about a quarter of an hour on two cores, long
// enough for two fault periods and a recovery. Every fault waits for a
// holder with half its lease left (AwaitHolders), and a holder works for
// 400ms, so that what a fault does to the holder happens inside its hold:
// a node killed and restarted (a few hundred milliseconds on a loaded
// machine) is back before the holder releases, a clock jump gives the
// lock to a contender while the holder still works. With 50ms holds and
// no awaits, whether a fault struck a holder in time was chance, and a
// quarter of the cells varied between runs of one seed. A client pause of
// 1.5 TTLs outlives the lease by half. The recovery is each cell's own
// derived one: a fixed 2s called python-etcd3 × kill unavailable, as an
// etcd member serves only after its election and its new leader re-arms
// the killed holder's lease for a full term (7s there); a Redis cell's is
// 2s without faults or with a client crash, 2.25s with a partition or a
// kill (a client timeout more), 3.5s with a 1.5s client pause, and with
// a clock fault the largest bump more (1m by default: a key set while its
// node's clock ran ahead lives that much longer once it is set back).
func DefaultRunParams() RunParams {
	return RunParams{Clients: 5, Keys: 1, TTL: time.Second, TimeLimit: 8 * time.Second,
		NemesisInterval: 2 * time.Second, CheckTimeout: 30 * time.Second,
		Hold: 400 * time.Millisecond, ClientPause: 1500 * time.Millisecond, AwaitHolders: true,
		PartitionPatterns: DefaultPartitionPatterns(), ClockModes: DefaultClockModes()}
}

// The limits of a matrix, checked before its seeds or cells are made: a
// cell runs for seconds (DefaultRunParams: about ten), so MaxCells is more
// than a day of cells on one machine; beyond them a typo (--seeds
// 2000000000) would allocate gigabytes before anything said no. A longer
// campaign is several matrices (or shards, --shard).
const (
	MaxSeeds  = 1000
	MaxRepeat = 1000
	MaxCells  = 10000
)

// SeedRange is the seeds 1…n.
func SeedRange(n int) []uint64 {
	out := make([]uint64, n)
	for i := range out {
		out[i] = uint64(i + 1)
	}
	return out
}

// SeedsFlag is the seeds of --seeds n: 1…n, n checked to be between 1
// and MaxSeeds before anything is allocated.
func SeedsFlag(n int) ([]uint64, error) {
	if n < 1 {
		return nil, fmt.Errorf("--seeds must be at least 1, got %d", n)
	}
	if n > MaxSeeds {
		return nil, fmt.Errorf("--seeds %d is more than a matrix runs (%d seeds of each lock × nemesis set): use --seeds %d or fewer, or split the seeds across matrices", n, MaxSeeds, MaxSeeds)
	}
	return SeedRange(n), nil
}

// checkSize refuses a spec with more seeds, repeats or cells than a matrix
// runs (MaxSeeds, MaxRepeat, MaxCells), counting the cells without making
// them: Cells would allocate every one first. A matrix.json is data from
// outside, so ReadJSON checks it too.
func (s Spec) checkSize() error {
	if n := len(s.Seeds); n > MaxSeeds {
		return fmt.Errorf("%d seeds: a matrix runs at most %d seeds of each lock × nemesis set: use --seeds %d or fewer", n, MaxSeeds, MaxSeeds)
	}
	if s.Repeat > MaxRepeat {
		return fmt.Errorf("--repeat %d: a matrix runs each scenario at most %d times: use --repeat %d or fewer", s.Repeat, MaxRepeat, MaxRepeat)
	}
	lockCells := mulCapped(MaxCells, len(s.Locks), len(s.Nemeses), len(s.Seeds))
	scenarioCells := mulCapped(MaxCells, len(s.Scenarios), max(s.Repeat, 0))
	if n := mulCapped(MaxCells, len(s.BackendList()), lockCells+scenarioCells); n > MaxCells {
		return fmt.Errorf("the matrix has more than %d cells (backends × (locks × nemesis sets × seeds + scenarios × repeat)): use fewer --seeds, --repeat, --locks or --nemeses, or run it as several matrices", MaxCells)
	}
	return nil
}

// mulCapped is the product of ns, or limit+1 when it is more than limit
// (it never overflows).
func mulCapped(limit int, ns ...int) int {
	if slices.Contains(ns, 0) {
		return 0
	}
	p := 1
	for _, n := range ns {
		if p > limit/n {
			return limit + 1
		}
		p *= n
	}
	return p
}

// ParseNemesisSets reads the --nemeses list: each element is one set, its
// nemeses joined by '+' ("partition,clock+partition" is two sets).
func ParseNemesisSets(list []string) [][]string {
	var out [][]string
	for _, s := range list {
		if s == "none" {
			out = append(out, nil)
			continue
		}
		out = append(out, strings.Split(s, "+"))
	}
	return out
}

// Validate reports the first thing wrong with the spec, naming the fix.
func (s Spec) Validate() error {
	if err := s.checkSize(); err != nil {
		return err
	}
	if len(s.Locks) == 0 && len(s.Scenarios) == 0 {
		return fmt.Errorf("nothing to run: give --locks (and --nemeses, --seeds) or --scenarios")
	}
	if len(s.Locks) > 0 && len(s.Seeds) == 0 {
		return fmt.Errorf("--seeds must be at least 1")
	}
	if len(s.Locks) > 0 && len(s.Nemeses) == 0 {
		return fmt.Errorf("--nemeses is empty: name at least one nemesis set (or none)")
	}
	if len(s.Scenarios) > 0 && s.Repeat < 1 {
		return fmt.Errorf("--repeat must be at least 1, got %d", s.Repeat)
	}
	seen := map[string]bool{}
	for _, b := range s.BackendList() {
		if !safeBackend(b) {
			return fmt.Errorf("backend %q: not a backend name (--backends takes local, docker)", b)
		}
		if seen[b] {
			return fmt.Errorf("backend %q is named twice in --backends", b)
		}
		seen[b] = true
	}
	if s.Image != "" && !seen[DockerBackend] {
		return fmt.Errorf("--image %s is the image of docker cells: add docker to --backends, or leave out --image", s.Image)
	}
	if err := reports.CheckName("matrix", s.Name); err != nil {
		return err
	}
	for _, l := range s.Locks {
		if strings.ContainsAny(l, "/+. ") || l == "" {
			return fmt.Errorf("lock %q: not a lock name (see: harness locks)", l)
		}
	}
	for _, set := range s.Nemeses {
		for _, n := range set {
			if n == "" || strings.ContainsAny(n, "/._ ") {
				return fmt.Errorf("nemesis %q: not a nemesis name (see: harness nemeses)", n)
			}
		}
	}
	return nil
}

// BackendList is the backends the cells run on: Backends, or local alone.
func (s Spec) BackendList() []string {
	switch {
	case len(s.Backends) > 0:
		return s.Backends
	case s.Backend != "":
		return []string{s.Backend}
	}
	return []string{DefaultBackend}
}

// upgrade reads a spec of an older matrix.json (one Backend) as one of
// today's (Backends), so that its shards merge with today's.
func (s *Spec) upgrade() {
	if len(s.Backends) == 0 && s.Backend != "" {
		s.Backends = []string{s.Backend}
	}
	s.Backend = ""
}

// safeBackend: a backend's name is a word of a cell's ID and of its store
// name, so it has no separator of either.
func safeBackend(b string) bool {
	if b == "" {
		return false
	}
	for _, r := range b {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			return false
		}
	}
	return true
}

// Cells enumerates the spec's cells in the matrix's order.
func (s Spec) Cells() []Cell {
	var out []Cell
	for _, b := range s.BackendList() {
		for _, l := range s.Locks {
			for _, set := range s.Nemeses {
				for _, seed := range s.Seeds {
					out = append(out, Cell{Backend: b, Lock: l, Nemeses: slices.Clone(set), Seed: seed})
				}
			}
		}
		for _, sc := range s.Scenarios {
			for i := 1; i <= s.Repeat; i++ {
				out = append(out, Cell{Backend: b, Lock: sc.Lock, Nemeses: slices.Clone(sc.Nemeses), Scenario: sc.Name, Repeat: i})
			}
		}
	}
	SortCells(out)
	return out
}

// RunConfig is the lockharness configuration of a lock cell, with the
// command line that reproduces it alone.
func (s Spec) RunConfig(c Cell, store string) lockrun.Config {
	p := s.Run
	cfg := lockrun.Config{Lock: c.Lock, Registry: s.Registry, Seed: c.Seed, Store: store, Test: c.TestName(),
		TimeLimit: p.TimeLimit, Recovery: p.Recovery, CheckTimeout: p.CheckTimeout}
	cfg.Workload.Clients, cfg.Workload.Keys, cfg.Workload.TTL, cfg.Workload.Hold = p.Clients, p.Keys, p.TTL, p.Hold
	cfg.Nemesis.Names = slices.Clone(c.Nemeses)
	cfg.Nemesis.Interval = p.NemesisInterval
	cfg.Nemesis.ClientPause = p.ClientPause
	cfg.AwaitHolders = p.AwaitHolders
	if slices.Contains(c.Nemeses, "partition") {
		cfg.Nemesis.PartitionPatterns = slices.Clone(p.PartitionPatterns)
	}
	if slices.Contains(c.Nemeses, "clock") {
		cfg.Nemesis.ClockModes = slices.Clone(p.ClockModes)
	}
	cfg.Command = s.Reproduce(c)
	return cfg
}

// cellGiven are the fields RunConfig sets in every lock cell whose zero is
// a mistake there, not a default (lockrun.Config.Given): a matrix always
// gives its run settings.
var cellGiven = []string{"Workload.Clients", "Workload.Keys", "Workload.TTL", "TimeLimit", "Nemesis.Interval", "CheckTimeout", "Nemesis.ClientPause"}

// CellConfig is the configuration cell c runs with in store: a lock cell's
// from the spec's run settings (RunConfig), a scenario cell's the
// scenario's own, under the cell's test name. Its command reproduces the
// cell on its backend. The matrix validates every cell with it before the
// first runs, and runs each with it, so both see the same configuration.
func (s Spec) CellConfig(c Cell, store string) (lockrun.Config, error) {
	if c.Scenario == "" {
		cfg := s.RunConfig(c, store)
		cfg.Given = cellGiven
		return cfg, nil
	}
	sc, err := scenarios.Lookup(c.Scenario)
	if err != nil {
		return lockrun.Config{}, &lockrun.UsageError{Err: err}
	}
	cfg := sc.RunConfig(store)
	cfg.Test = c.TestName()
	// A scenario's own command line does not name the cell's backend.
	cfg.Command = s.Reproduce(c)
	return cfg, nil
}

// Reproduce is the command that runs cell c by itself, on its backend,
// shell-quoted (lockrun.CommandLine).
func (s Spec) Reproduce(c Cell) string {
	if c.Scenario != "" {
		return lockrun.CommandLine(append([]string{"harness", "scenario", "run", c.Scenario}, s.backendArgs(c)...)...)
	}
	p := s.Run
	args := []string{"harness", "run", "--lock", c.Lock}
	if len(c.Nemeses) > 0 {
		args = append(args, "--nemesis", strings.Join(c.Nemeses, ","))
	}
	args = append(args, "--seed", strconv.FormatUint(c.Seed, 10),
		"--clients", strconv.Itoa(p.Clients), "--keys", strconv.Itoa(p.Keys), "--ttl", p.TTL.String(),
		"--time-limit", p.TimeLimit.String())
	if p.Recovery > 0 {
		// Without it, harness run derives the cell's recovery as the
		// matrix did.
		args = append(args, "--recovery", p.Recovery.String())
	}
	args = append(args, "--nemesis-interval", p.NemesisInterval.String(), "--hold", p.Hold.String())
	if slices.Contains(c.Nemeses, "client-pause") {
		args = append(args, "--nemesis-client-pause", p.ClientPause.String())
	}
	if slices.Contains(c.Nemeses, "partition") && len(p.PartitionPatterns) > 0 {
		args = append(args, "--partition-patterns", strings.Join(p.PartitionPatterns, ","))
	}
	if slices.Contains(c.Nemeses, "clock") && len(p.ClockModes) > 0 {
		args = append(args, "--clock-modes", strings.Join(p.ClockModes, ","))
	}
	if p.AwaitHolders && len(c.Nemeses) > 0 {
		args = append(args, "--nemesis-await")
	}
	if cmdline, ok := s.LockCmds[c.Lock]; ok {
		args = append(args, "--lock-cmd", cmdline)
	}
	args = append(args, s.backendArgs(c)...)
	return lockrun.CommandLine(args...)
}

// backendArgs are the flags that put a command on cell c's backend: none
// for local processes.
func (s Spec) backendArgs(c Cell) []string {
	if c.Backend == "" || c.Backend == DefaultBackend {
		return nil
	}
	args := []string{"--backend", c.Backend}
	if c.Backend == DockerBackend && s.Image != "" {
		args = append(args, "--image", s.Image)
	}
	return args
}

// sameMatrix reports whether two specs describe the same matrix (shards of
// one matrix have equal specs); it names the first difference.
func sameMatrix(a, b Spec) error {
	switch {
	case a.Name != b.Name:
		return fmt.Errorf("matrix name %q ≠ %q", a.Name, b.Name)
	case !slices.Equal(sorted(a.BackendList()), sorted(b.BackendList())):
		return fmt.Errorf("backends %s ≠ %s", strings.Join(a.BackendList(), ","), strings.Join(b.BackendList(), ","))
	case a.Image != b.Image:
		return fmt.Errorf("docker image %q ≠ %q", a.Image, b.Image)
	case !slices.EqualFunc(a.Cells(), b.Cells(), func(x, y Cell) bool { return x.ID() == y.ID() && x.Backend == y.Backend }):
		return fmt.Errorf("the cells differ (locks, nemeses, seeds or scenarios)")
	case !a.Run.equal(b.Run):
		return fmt.Errorf("run settings differ: %+v ≠ %+v", a.Run, b.Run)
	}
	return nil
}

// equal reports whether p and q are the same run settings.
func (p RunParams) equal(q RunParams) bool {
	return reflect.DeepEqual(p, q)
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
