// Package lockharness runs Jepsen-style tests of distributed locks on real
// Redis: it starts a topology, drives lock clients with a workload while a
// nemesis injects faults, records every operation, checks the history and
// writes a report. The CLI (cmd/harness) is a thin layer over Run.
package lockharness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/nemesis"
	"github.com/lockharness/lockharness/reports"
	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/sut/local"
	redisbackend "github.com/lockharness/lockharness/sut/redis"
	"github.com/lockharness/lockharness/sut/systems"
	"github.com/lockharness/lockharness/workloads"
)

// Config is one run. The zero value (plus a Lock) does something sensible.
type Config struct {
	// Lock is the name of the lock under test (see locks.Builtin).
	Lock string `json:"lock"`
	// Registry holds the locks to choose from; nil means locks.Builtin().
	Registry *locks.Registry `json:"-"`
	// Nodes is the number of independent Redis nodes; 0 means the lock's
	// minimum (5 for Redlock-style locks).
	Nodes int `json:"nodes"`

	Workload workloads.Config `json:"workload"`
	Cluster  sut.Config       `json:"cluster"`
	// Backend starts the Redis deployment the run tests; nil means local
	// redis-server processes (Redis's local backend, sut/systems). A lock
	// for another system (locks.Info.System) runs on that system's local
	// backend, and refuses a Backend.
	Backend sut.Backend `json:"-"`
	// Nemesis chooses and tunes the faults; no names, no faults. Its seed
	// is the run's.
	Nemesis nemesis.Config `json:"nemesis"`
	// Script, when set, replaces the random fault schedule: each step runs
	// at its time from the start of the run phase (scenarios are scripts).
	Script []nemesis.Step `json:"script,omitempty"`
	// Require is the exposure the run must reach for a valid verdict to
	// stand (a scripted scenario declares it). Empty: built from
	// Nemesis.Names, each named nemesis having struck while a client held
	// a lock (see Requirements). A run that granted nothing is never
	// evidence.
	Require []checker.Requirement `json:"require,omitempty"`
	// AllowVacuous keeps a valid verdict valid when the run did not reach
	// the required exposure; the coverage still says what it reached.
	AllowVacuous bool `json:"allow_vacuous,omitempty"`

	// TimeLimit is the length of the run phase (workload and faults).
	TimeLimit time.Duration `json:"time_limit"`
	// Recovery is how long the workload goes on after the final heal,
	// without faults, to measure liveness.
	Recovery time.Duration `json:"recovery"`
	// CheckTimeout bounds each porcupine check (unknown when it runs out).
	CheckTimeout time.Duration `json:"check_timeout"`
	// ClientTimeout is each lock client command's read timeout; 0 derives
	// it from the TTL (see clientTimeout). A schedule without link faults
	// may want more room on a loaded machine: a timed-out acquire is
	// unknown, and the workload gives back what it may hold, which for a
	// lock that releases with a plain DEL deletes another client's lock.
	ClientTimeout time.Duration `json:"client_timeout,omitempty"`

	// ClientRetries, when positive, lets the lock clients' go-redis retry a
	// command that timed out or lost its connection that many times, as
	// lock libraries' retry options do (go-redis retries 3 times by
	// default). Zero keeps them off, the harness's default: a retried
	// command may execute twice, so a reply lost on the way makes the
	// retry's answer describe the state its first execution left.
	ClientRetries int `json:"client_retries,omitempty"`

	// Seed makes the run replayable: tokens, keys, pauses, fault schedule.
	Seed uint64 `json:"seed"`
	// Store is the directory runs are written to (default "store").
	Store string `json:"store"`
	// Test names the run's subdirectory of the store (default: the lock).
	Test string `json:"test"`
	// Command is the command line that reproduces the run, for the report.
	Command string `json:"command,omitempty"`
	// Scenario, Explanation and Expected label a scripted scenario's run
	// in its report: its name, what happens and why in plain words, and
	// the verdict expected of each checker ("lock-promise": "invalid").
	Scenario    string            `json:"scenario,omitempty"`
	Explanation string            `json:"-"`
	Expected    map[string]string `json:"expected,omitempty"`

	// Log receives the phase log ("setup", "run", …); nil discards it.
	Log io.Writer `json:"-"`
	// Progress receives a live progress line; nil discards it. When it is
	// a terminal the line is redrawn in place.
	Progress io.Writer `json:"-"`
	// ProgressTTY redraws the progress line with \r instead of new lines.
	ProgressTTY bool `json:"-"`
}

// DefaultNodes is the node count of multi-node locks when none is given.
const DefaultNodes = 5

// WithDefaults fills in unset fields.
func (c Config) WithDefaults() Config {
	if c.Registry == nil {
		c.Registry = locks.Builtin()
	}
	if c.TimeLimit == 0 {
		c.TimeLimit = 25 * time.Second
	}
	if c.Recovery == 0 {
		c.Recovery = 5 * time.Second
	}
	if c.CheckTimeout == 0 {
		c.CheckTimeout = 30 * time.Second
	}
	if c.Store == "" {
		c.Store = "store"
	}
	if c.Test == "" {
		c.Test = c.Lock
	}
	c.Workload = c.Workload.WithDefaults()
	if c.Seed == 0 {
		c.Seed = 1
	}
	c.Workload.Seed = c.Seed
	c.Nemesis.Seed = c.Seed
	// The deployment provides what the lock and the nemeses need (each
	// nemesis declares it): a lock that waits for replicas, and failover,
	// need a master with replicas; clock faults, nodes whose clocks can be
	// set.
	needs := c.needs()
	if info, err := c.Registry.Lookup(c.Lock); err == nil && info.NeedsReplicas {
		needs = needs.Merge(sut.Needs{Replicated: true})
	}
	c.Cluster = c.Cluster.Provide(needs)
	return c
}

// nemesisNames are the nemeses the run uses: the composed ones, then
// those the script names, each once.
func (c Config) nemesisNames() []string {
	names := append([]string(nil), c.Nemesis.Names...)
	for _, st := range c.Script {
		if !slices.Contains(names, st.Nemesis) {
			names = append(names, st.Nemesis)
		}
	}
	return names
}

// needs is what the run's nemeses need of the deployment; unknown names
// need nothing here (resolve refuses them).
func (c Config) needs() sut.Needs {
	var out sut.Needs
	for _, n := range c.nemesisNames() {
		if info, err := nemesis.Lookup(n); err == nil {
			out = out.Merge(info.Needs)
		}
	}
	return out
}

// checkDeployment refuses a deployment that cannot support one of the
// run's nemeses, naming what is missing (exit 2, before the run starts).
func (c Config) checkDeployment(d sut.Deployment) error {
	for _, n := range c.nemesisNames() {
		info, err := nemesis.Lookup(n)
		if err != nil {
			continue
		}
		if err := sut.Check(d, "the "+n+" nemesis", info.Needs); err != nil {
			return &UsageError{Err: err}
		}
	}
	return nil
}

// UsageError is an error in the configuration: the CLI exits 2 and prints it.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

func usage(format string, a ...any) error { return &UsageError{Err: fmt.Errorf(format, a...)} }

// resolve validates the configuration and returns the lock's registry
// entry and the node count.
func (c Config) resolve() (locks.Info, int, error) {
	info, err := c.Registry.Lookup(c.Lock)
	if err != nil {
		return info, 0, &UsageError{Err: err}
	}
	if _, err := nemesis.New(c.Nemesis); err != nil {
		return info, 0, &UsageError{Err: err}
	}
	if p := c.Nemesis.Persistence; p != "" {
		if err := sut.CheckPersistence(p); err != nil {
			return info, 0, &UsageError{Err: err}
		}
	}
	known := map[string]bool{}
	for _, n := range nemesis.Known() {
		known[n.Name] = true
	}
	for i, st := range c.Script {
		if !known[st.Nemesis] {
			return info, 0, usage("script step %d: unknown nemesis %q", i+1, st.Nemesis)
		}
	}
	if err := c.validateNumbers(); err != nil {
		return info, 0, err
	}
	if c.Nemesis.ClientPause < 0 {
		return info, 0, usage("the client-pause nemesis's pause must be positive, got %v", c.Nemesis.ClientPause)
	}
	if err := c.checkFailpoints(info); err != nil {
		return info, 0, err
	}
	if err := c.checkRenews(info); err != nil {
		return info, 0, err
	}
	if err := c.Workload.Validate(); err != nil {
		return info, 0, &UsageError{Err: err}
	}
	switch {
	case c.TimeLimit < 0:
		return info, 0, usage("time limit must be positive, got %v", c.TimeLimit)
	case c.Recovery < 0:
		return info, 0, usage("recovery must not be negative, got %v", c.Recovery)
	case c.CheckTimeout < 0:
		return info, 0, usage("check timeout must not be negative, got %v", c.CheckTimeout)
	case c.ClientRetries < 0:
		return info, 0, usage("--client-retries must not be negative, got %d: use 0 to keep go-redis's retries off, or e.g. --client-retries 3", c.ClientRetries)
	}
	if sys := info.SystemName(); sys != locks.SystemRedis {
		if _, err := systems.Builtin().Lookup(sys); err != nil {
			return info, 0, usage("lock %s runs on %s, which this harness cannot start (it starts: %s)", info.Name, sys, strings.Join(systems.Builtin().Names(), ", "))
		}
		if c.Backend != nil {
			// Unsupported as well as a usage error: a catalogue run on
			// another backend skips the scenario instead of failing it.
			return info, 0, &UsageError{Err: fmt.Errorf("lock %s runs on %s, started as local processes; the backend chosen (--backend, --target) starts Redis: leave it out (%w)", info.Name, sys, sut.ErrUnsupported)}
		}
		if c.Cluster.Topology == sut.Replicated {
			return info, 0, usage("lock %s runs on %s, a group of peers, not a Redis master with replicas: leave out --topology replicated and the failover nemesis", info.Name, sys)
		}
		if n := c.needs(); c.Cluster.Topology == sut.RedisCluster || n.Has(sut.CanFailoverShard) || n.Has(sut.CanMoveSlots) {
			return info, 0, usage("lock %s runs on %s, not on a Redis Cluster: leave out --topology cluster and the cluster-failover nemesis", info.Name, sys)
		}
	}
	if n := c.needs(); (n.Has(sut.CanFailoverShard) || n.Has(sut.CanMoveSlots)) && c.Cluster.Topology != sut.RedisCluster {
		return info, 0, usage("the cluster-failover nemesis strikes a Redis Cluster, and the topology is %s: use --topology cluster (or leave --topology out)", c.Cluster.Topology)
	}
	if c.Cluster.Topology == sut.RedisCluster {
		return c.resolveRedisCluster(info)
	}
	if c.Cluster.Topology == sut.Replicated {
		// One master with replicas: a lock over independent nodes has no
		// place here.
		if c.Nodes > 1 || info.MinNodes > 1 || (info.MaxNodes == 0 && c.Nodes == 0) {
			return info, 0, usage("lock %s runs on independent nodes, but the topology is replicated (one master with replicas, chosen by --topology or --nemesis failover): use a single-node lock such as token, or --topology independent", info.Name)
		}
		return info, 1, nil
	}
	if info.NeedsReplicas {
		return info, 0, usage("lock %s needs a master with replicas: add --topology replicated (or --nemesis failover)", info.Name)
	}
	nodes := c.Nodes
	if nodes == 0 {
		nodes = info.MinNodes
		if info.MaxNodes == 0 {
			nodes = max(nodes, DefaultNodes)
		}
	}
	if nodes < info.MinNodes || (info.MaxNodes > 0 && nodes > info.MaxNodes) {
		if info.MaxNodes == info.MinNodes {
			return info, 0, usage("lock %s uses exactly %d node(s), got --nodes %d: use --nodes %d or leave it out", info.Name, info.MinNodes, nodes, info.MinNodes)
		}
		return info, 0, usage("lock %s needs between %d and %d nodes, got --nodes %d: use --nodes %d to %d", info.Name, info.MinNodes, info.MaxNodes, nodes, info.MinNodes, info.MaxNodes)
	}
	return info, nodes, nil
}

// resolveRedisCluster checks a run on a Redis Cluster: a lock that keeps
// everything under its one key, reached through one ClusterClient, and no
// nemesis that fails over a single master.
func (c Config) resolveRedisCluster(info locks.Info) (locks.Info, int, error) {
	if !locks.RunsOnCluster(info.Name) {
		return info, 0, usage("lock %s does not run on a Redis Cluster (--topology cluster): a lock there must keep all it writes under its one key, reached through one ClusterClient; use one of %s, or another topology",
			info.Name, strings.Join(locks.ClusterLocks(), ", "))
	}
	if c.Nodes > 1 {
		return info, 0, usage("a Redis Cluster is one lock node (a ClusterClient over its masters), got --nodes %d: leave --nodes out (--masters and --replicas shape the cluster)", c.Nodes)
	}
	if c.needs().Replicated {
		return info, 0, usage("the failover nemesis fails over a single master with replicas, and a Redis Cluster elects its own: use --nemesis cluster-failover, or --topology replicated")
	}
	return info, 1, nil
}

// checkRenews checks that a workload that renews before it writes has a
// lock that can renew. It asks an instance built over placeholder nodes,
// which are never dialled (go-redis connects on the first command).
func (c Config) checkRenews(info locks.Info) error {
	if !c.Workload.RenewBeforeWrite {
		return nil
	}
	nodes := make([]sut.ClientNode, max(info.MinNodes, 1))
	for i := range nodes {
		nodes[i] = sut.ClientNode{Name: fmt.Sprintf("n%d", i+1), Addr: "127.0.0.1:0", Client: redis.NewClient(&redis.Options{Addr: "127.0.0.1:0"})}
	}
	defer sut.CloseClientNodes(nodes)
	l, err := info.New(nodes, locks.Options{})
	if err != nil {
		return fmt.Errorf("lock %s: %w", info.Name, err)
	}
	if cl, ok := l.(locks.Closer); ok {
		defer cl.Close()
	}
	if _, ok := l.(locks.Renewer); !ok {
		return usage("lock %s has no Renew, so its clients cannot renew before they write: drop --renew-before-write or use a lock with Renew (token, fenced, reentrant, redlock, redsync, redislock)", info.Name)
	}
	return nil
}

// checkFailpoints checks that every failpoint to arm is one the lock
// declares, and that a client fault will arm it.
func (c Config) checkFailpoints(info locks.Info) error {
	if len(c.Nemesis.Failpoints) == 0 {
		return nil
	}
	// A client fault (one that strikes a client) arms them.
	arms := false
	for _, n := range c.Nemesis.Names {
		if info, err := nemesis.Lookup(n); err == nil && info.StrikesClient != "" {
			arms = true
		}
	}
	if !arms {
		return usage("failpoints %s are armed only by a client fault: add --nemesis client-pause or client-crash", strings.Join(c.Nemesis.Failpoints, ","))
	}
	for _, fp := range c.Nemesis.Failpoints {
		if !slices.Contains(info.Failpoints, fp) {
			if len(info.Failpoints) == 0 {
				return usage("lock %s has no failpoints, got %q (locks with failpoints: see harness locks)", info.Name, fp)
			}
			return usage("lock %s has no failpoint %q (it has: %s)", info.Name, fp, strings.Join(info.Failpoints, ", "))
		}
	}
	return nil
}

// system is the system the lock runs on (locks.Info.System), as
// sut/systems registers it; resolve has checked that it is there.
func (c Config) system(info locks.Info) sut.System {
	s, _ := systems.Builtin().Lookup(info.SystemName())
	return s
}

// backend is what starts the run's deployment: the lock's system's local
// backend, or for a Redis lock Backend when set. resolve has checked that
// the system exists.
func (c Config) backend(info locks.Info) sut.Backend {
	if info.SystemName() == locks.SystemRedis && c.Backend != nil {
		return c.Backend
	}
	return c.system(info).Local
}

// Outcome is what a run produced.
type Outcome struct {
	// Dir is the run's directory in the store.
	Dir     string
	Results reports.Results
}

// ErrInterrupted is returned (with the outcome of the prefix that ran) when
// the run was cancelled before its end.
var ErrInterrupted = errors.New("run interrupted")

// Run performs one test: setup, run, heal, recovery, teardown, check, report.
// Teardown happens on every exit path. The returned error is a *UsageError
// for bad configuration, ErrInterrupted (wrapped) when ctx was cancelled,
// or another error when the run could not be carried out.
func Run(ctx context.Context, cfg Config) (Outcome, error) {
	cfg = cfg.WithDefaults()
	info, nodes, err := cfg.resolve()
	if err != nil {
		return Outcome{}, err
	}
	if err := cfg.checkStartable(nodes); err != nil {
		return Outcome{}, err
	}
	r := &runner{cfg: cfg, lock: info, nodes: nodes, log: cfg.Log}
	if r.log == nil {
		r.log = io.Discard
	}
	return r.run(ctx)
}

type runner struct {
	cfg   Config
	lock  locks.Info
	nodes int
	log   io.Writer

	clock  *history.Clock
	rec    *history.Recorder
	phases []reports.Phase
}

func (r *runner) phase(name string) {
	at := int64(0)
	if r.clock != nil {
		at = r.clock.Now()
	}
	r.phases = append(r.phases, reports.Phase{Name: name, At: at})
	fmt.Fprintf(r.log, "%-9s %s\n", name, time.Now().Format("15:04:05.000"))
}

func (r *runner) run(ctx context.Context) (out Outcome, err error) {
	dir, err := reports.NewRunDir(r.cfg.Store, r.cfg.Test, time.Now())
	if err != nil {
		return out, &UsageError{Err: err}
	}
	out.Dir = dir
	// A run whose setup failed leaves nothing in the store: this deferred
	// call runs last, after the cluster is down and the history closed.
	started := false
	defer func() {
		if err != nil && !started {
			if derr := reports.DiscardRunDir(r.cfg.Store, dir); derr != nil {
				fmt.Fprintf(r.log, "setup: %v\n", derr)
			}
			out.Dir = ""
		}
	}()
	hf, err := os.Create(filepath.Join(dir, reports.HistoryFile))
	if err != nil {
		return out, fmt.Errorf("create history: %w", err)
	}
	defer hf.Close()

	r.phase("setup")
	ccfg := r.cfg.Cluster
	ccfg.Nodes = r.nodes
	ccfg.Clients = r.cfg.Workload.Clients
	if ccfg.Dir == "" {
		// Outside the store, so that a killed run leaves no node files
		// (libfaketime control files among them) in its record.
		if ccfg.Dir, err = local.NewNodeDir(); err != nil {
			return out, fmt.Errorf("setup: %w", err)
		}
		defer os.RemoveAll(ccfg.Dir) // after the cluster's Down below
	}
	cl, err := r.cfg.backend(r.lock)(ctx, ccfg)
	if err != nil {
		return out, fmt.Errorf("setup: %w", err)
	}
	// Teardown on every path, panics included.
	defer func() { _ = cl.Down() }()
	if err := r.cfg.checkDeployment(cl); err != nil {
		return out, err
	}

	r.clock = history.NewClock()
	r.rec = history.NewRecorder(r.clock, hf)
	defer r.rec.Close() // flushes what an early return leaves; idempotent
	start := time.Now()

	storage := redisbackend.NewRedisClient(cl.StorageAddr(), sut.ClientOptions{Timeout: 2 * time.Second, PoolSize: r.cfg.Workload.Clients + 2})
	defer storage.Close()
	slotNodes := make([][]sut.ClientNode, r.cfg.Workload.Clients)
	for i := range slotNodes {
		slotNodes[i] = cl.ClientNodes(i, sut.ClientOptions{Timeout: clientTimeout(r.cfg), MaxRetries: r.cfg.ClientRetries})
	}
	defer func() {
		for _, ns := range slotNodes {
			sut.CloseClientNodes(ns)
		}
	}()
	nem, err := nemesis.New(r.cfg.Nemesis)
	if err != nil {
		return out, &UsageError{Err: err}
	}
	wl, err := workloads.NewMutex(r.cfg.Workload, workloads.Env{
		Recorder: r.rec, Lock: r.lock, Storage: storage,
		Nodes: func(slot int) []sut.ClientNode { return slotNodes[slot] },
	})
	if err != nil {
		return out, &UsageError{Err: err}
	}

	env := nemesis.Env{Deployment: cl, Recorder: r.rec, Clients: wl}
	if err := nem.Setup(ctx, env); err != nil {
		if errors.Is(err, sut.ErrUnsupported) {
			return out, &UsageError{Err: err}
		}
		return out, fmt.Errorf("setup: %w", err)
	}

	r.phase("run")
	started = true
	// A history that can no longer be written (a full disk) ends the run at
	// once: the events after it would be lost anyway.
	outer := ctx
	ctx, cancelRun := context.WithCancel(ctx)
	defer cancelRun()
	go func() {
		select {
		case <-r.rec.Failed():
			cancelRun()
		case <-ctx.Done():
		}
	}()
	// A script's steps at 0 are in force before the first operation: a
	// scenario that cuts a client off at 0 so that the other holds must
	// not race it for the first grant (it lost 2 of 500 soak runs so).
	script, err := startScript(ctx, nem, env, r.cfg.Script)
	if err != nil {
		_ = nem.Heal(ctx, env) // the deferred Down stops the deployment
		return out, fmt.Errorf("nemesis: %w", err)
	}
	stop, stopWorkload := context.WithCancel(context.Background())
	defer stopWorkload()
	wlDone := make(chan error, 1)
	go func() { wlDone <- wl.Run(ctx, stop) }()
	progressDone := r.progress(ctx, stop, wl, start)
	faults, stopFaults := context.WithCancel(ctx)
	nemDone := make(chan error, 1)
	go func() {
		if len(r.cfg.Script) > 0 {
			nemDone <- runScript(faults, nem, env, script)
			return
		}
		nemDone <- nem.Run(faults, env)
	}()

	interrupted := !wait(ctx, r.cfg.TimeLimit)
	stopFaults()
	nemErr := <-nemDone

	// Heal on every path; Heal bounds itself and ignores ctx's cancellation.
	r.phase("heal")
	if err := nem.Heal(ctx, env); err != nil {
		fmt.Fprintf(r.log, "heal: %v\n", err)
	}

	if !interrupted {
		r.phase("recovery")
		interrupted = !wait(ctx, r.cfg.Recovery)
	}

	r.phase("teardown")
	stopWorkload()
	wlErr := <-wlDone
	<-progressDone
	finalCtx, cancel := context.WithTimeout(context.Background(), finalReadsBudget(wl.FinalReadKeys()))
	wl.FinalReads(finalCtx)
	cancel()
	if err := r.rec.Close(); err != nil {
		return out, fmt.Errorf("%w: the run stopped at the first write that failed; what was written before is kept in %s; free space on the store's filesystem or choose another with --store", err, dir)
	}
	if err := cl.Down(); err != nil {
		fmt.Fprintf(r.log, "teardown: %v\n", err)
	}
	_ = os.RemoveAll(ccfg.Dir) // node data is not part of the record
	if wlErr != nil {
		return out, fmt.Errorf("workload: %w", wlErr)
	}
	if nemErr != nil {
		return out, fmt.Errorf("nemesis: %w", nemErr)
	}

	return r.checkAndReport(outer, interrupted, dir, start, cl.Layout().Nodes, out)
}

// checkAndReport judges the run's history and writes its record: run.json,
// results.json (once) and the report that draws what the check found. The
// history file is read twice: once by the check, once by the report.
func (r *runner) checkAndReport(outer context.Context, interrupted bool, dir string, start time.Time, nodes []string, out Outcome) (Outcome, error) {
	r.phase("check")
	// Ctrl-C during the check or the report stops them; a run already
	// interrupted checks and reports its prefix regardless (a second
	// Ctrl-C ends the process).
	finish := outer
	if interrupted {
		finish = context.WithoutCancel(outer)
	}
	src := r.rec.Source()
	checkCtx, cancel := context.WithTimeout(finish, 4*r.cfg.CheckTimeout)
	res, err := checker.Check(checkCtx, src, checker.Config{Timeout: r.cfg.CheckTimeout,
		Require: r.cfg.Requirements(), AllowVacuous: r.cfg.AllowVacuous, SpillDir: dir, Views: true})
	cancel()
	if err != nil {
		return out, fmt.Errorf("check: %w", err)
	}

	r.phase("report")
	rec, err := r.record(start, nodes)
	if err != nil {
		return out, err
	}
	if err := reports.WriteJSON(dir, reports.MetaFile, rec); err != nil {
		return out, err
	}
	if finish.Err() != nil {
		rec.Partial = fmt.Sprintf("%v during the check: checkers that had not finished are unknown", context.Cause(finish))
		if out.Results, err = reports.WriteResults(dir, rec.RunMeta, res); err != nil {
			return out, err
		}
		return out, fmt.Errorf("%w: %s; results.json holds them, `harness report %s` checks again and draws the report", ErrInterrupted, rec.Partial, dir)
	}
	if out.Results, err = reports.Render(finish, dir, rec, src, res); err != nil {
		if finish.Err() != nil {
			// A page next to figures it does not match is worse than none.
			_ = os.Remove(filepath.Join(dir, reports.IndexFile))
			return out, fmt.Errorf("%w: %v while drawing the report; `harness report %s` draws it", ErrInterrupted, context.Cause(finish), dir)
		}
		return out, fmt.Errorf("report: %w", err)
	}
	if err := reports.PointLatest(r.cfg.Store, dir); err != nil {
		return out, err
	}
	if interrupted {
		return out, fmt.Errorf("%w: %v", ErrInterrupted, context.Cause(outer))
	}
	return out, nil
}

// finalReadsBudget is how long the final reads of n keys' counters may
// take: 5 s, and 100 µs more per key past the first 10,000 (a read takes
// about 20 µs on a quiet machine), up to a minute, so that a run of many
// keys reads them all and a run whose storage is gone does not wait long.
func finalReadsBudget(n int) time.Duration {
	d := 5*time.Second + time.Duration(max(n-10_000, 0))*100*time.Microsecond
	return min(d, time.Minute)
}

// Requirements is the exposure the run must reach: Require when given,
// else one requirement per named nemesis (it struck while a client held a
// lock). Nemesis names are checked by resolve; an unknown one adds none.
func (c Config) Requirements() []checker.Requirement {
	if len(c.Require) > 0 {
		return c.Require
	}
	return NemesisRequirements(c.Nemesis.Names)
}

// NemesisRequirements says, for each nemesis, what in a history shows that
// it struck while a client held a lock.
func NemesisRequirements(names []string) []checker.Requirement {
	var out []checker.Requirement
	for _, n := range names {
		info, err := nemesis.Lookup(n)
		if err != nil {
			continue
		}
		out = append(out, checker.Requirement{Name: "the " + n + " nemesis", Faults: info.Strikes,
			PauseStruck: info.StrikesClient == history.FPause, CrashStruck: info.StrikesClient == history.FCrash})
	}
	return out
}

// startScript performs the leading steps of a script at 0 (those that
// await no holder) and returns the rest. A step that fails is recorded by
// the nemesis and the run goes on, as in runScript.
func startScript(ctx context.Context, nem *nemesis.Runner, env nemesis.Env, steps []nemesis.Step) ([]nemesis.Step, error) {
	for len(steps) > 0 && steps[0].At == 0 && steps[0].Await == nil {
		if err := nem.Do(ctx, env, steps[0]); err != nil {
			var unknown *nemesis.UnknownError
			if errors.As(err, &unknown) {
				return nil, err
			}
		}
		steps = steps[1:]
	}
	return steps, nil
}

// runScript performs each step at its time from now, until ctx is done. A
// step that fails is recorded by the nemesis and the script goes on, as in a
// random schedule. A step that awaits a holder shifts the rest of the
// script by as long as it waited, so the steps after it keep their distance
// from it (a restart stays as long after its kill as the script says).
func runScript(ctx context.Context, nem *nemesis.Runner, env nemesis.Env, steps []nemesis.Step) error {
	start := time.Now()
	for _, s := range steps {
		if !wait(ctx, time.Until(start.Add(s.At))) {
			return nil
		}
		if s.Await != nil {
			if err := nem.Await(ctx, env, s); err != nil {
				continue // no holder came: the step does not happen
			}
			start = time.Now().Add(-s.At)
			s.Await = nil
		}
		if err := nem.Do(ctx, env, s); err != nil {
			var unknown *nemesis.UnknownError
			if errors.As(err, &unknown) {
				return err
			}
		}
	}
	<-ctx.Done()
	return nil
}

// clientTimeout is the per-command timeout of lock clients: short enough
// that a partitioned node does not eat the lease, long enough for a loaded
// two-core machine.
func clientTimeout(cfg Config) time.Duration {
	if cfg.ClientTimeout > 0 {
		return cfg.ClientTimeout
	}
	t := cfg.Workload.TTL / 4
	return min(max(t, 50*time.Millisecond), 500*time.Millisecond)
}

func (r *runner) meta(start time.Time) (reports.RunMeta, error) {
	cj, err := json.Marshal(r.cfg)
	if err != nil {
		return reports.RunMeta{}, fmt.Errorf("encode config: %w", err)
	}
	return reports.RunMeta{
		Test: r.cfg.Test, Lock: r.cfg.Lock, Nemeses: r.cfg.Nemesis.Names, Seed: r.cfg.Seed, Command: r.cfg.Command,
		Scenario: r.cfg.Scenario, Explanation: r.cfg.Explanation, Expected: r.cfg.Expected,
		Config: cj, Start: start, Duration: time.Since(start), Phases: r.phases,
	}, nil
}

// wait sleeps for d; false if ctx ended first.
func wait(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// progress prints the live progress line until stop is done.
func (r *runner) progress(ctx, stop context.Context, wl *workloads.Mutex, start time.Time) <-chan struct{} {
	done := make(chan struct{})
	w := r.cfg.Progress
	if w == nil {
		close(done)
		return done
	}
	every := time.Second
	if !r.cfg.ProgressTTY {
		every = 5 * time.Second
	}
	total := r.cfg.TimeLimit + r.cfg.Recovery
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		var lastOps int64
		last := start
		line := func() {
			ok, fail, info := wl.Stats.OK.Load(), wl.Stats.Fail.Load(), wl.Stats.Info.Load()
			now := time.Now()
			rate := float64(ok+fail+info-lastOps) / now.Sub(last).Seconds()
			lastOps, last = ok+fail+info, now
			s := fmt.Sprintf("%5.1fs / %.0fs  %7.0f ops/s  ok %d  fail %d  info %d",
				now.Sub(start).Seconds(), total.Seconds(), rate, ok, fail, info)
			if r.cfg.ProgressTTY {
				fmt.Fprintf(w, "\r%-78s", s)
			} else {
				fmt.Fprintln(w, strings.TrimSpace(s))
			}
		}
		for {
			select {
			case <-stop.Done():
				if r.cfg.ProgressTTY {
					line()
					fmt.Fprintln(w)
				}
				return
			case <-ctx.Done():
				return
			case <-t.C:
				line()
			}
		}
	}()
	return done
}
