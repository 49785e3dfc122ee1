// Package run carries out one Jepsen-style test of a distributed lock: its
// Config has one validation (Validate, whose errors name the field at
// fault), resolves once into a Plan, and the plan runs in phases, each
// one method, logged in a fixed order: setup, run, heal, recovery,
// teardown, check, report. Teardown and heal happen on every exit path.
package run

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
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
	"github.com/lockharness/lockharness/workloads"
)

// Outcome is what a run produced.
type Outcome struct {
	// Dir is the run's directory in the store.
	Dir     string
	Results reports.Results
}

// Run performs one test: setup, run, heal, recovery, teardown, check, report.
// Teardown happens on every exit path. The returned error is a *UsageError
// for bad configuration, ErrInterrupted (wrapped) when ctx was cancelled,
// or another error when the run could not be carried out.
func Run(ctx context.Context, cfg Config) (Outcome, error) {
	p, err := NewPlan(cfg)
	if err != nil {
		return Outcome{}, err
	}
	return p.Run(ctx)
}

// Run carries out the plan, phase by phase. Whatever setup started is torn
// down on every exit path, panics included, and a run whose setup failed
// leaves nothing in the store; the store's latest link moves only to a run
// whose report is complete.
func (p *Plan) Run(ctx context.Context) (out Outcome, err error) {
	r := &runner{plan: p, cfg: p.Config, log: p.Config.Log}
	if r.log == nil {
		r.log = io.Discard
	}
	if r.dir, err = reports.NewRunDir(r.cfg.Store, r.cfg.Test, time.Now()); err != nil {
		return out, &UsageError{Err: err}
	}
	out.Dir = r.dir
	// Deferred first, so it runs last: after the deployment is down and
	// the history closed.
	defer func() {
		if err != nil && !r.started {
			r.discard()
			out.Dir = ""
		}
	}()
	logged, endLog, err := openRunLog(r.dir, r.log)
	if err != nil {
		return out, err
	}
	r.log = logged
	defer func() { endLog(err, out.Results, r.tails) }() // after the cleanup, which may log
	defer r.cleanup()
	if err := r.setup(ctx); err != nil {
		return out, err
	}
	running := r.watchRecorder(ctx)
	interrupted, err := r.run(running)
	if err != nil {
		return out, err
	}
	r.heal(running)
	if !interrupted && !r.clientsGone {
		interrupted = r.recovery(running)
	}
	if err := r.teardown(); err != nil {
		return out, err
	}
	res, finish, err := r.check(ctx, interrupted)
	if err != nil {
		return out, err
	}
	if err := r.nothingTested(res); err != nil {
		return out, err
	}
	out.Results, err = r.report(ctx, finish, interrupted, r.judgeLost(res))
	return out, err
}

// runner is one run of a plan: what its phases started, for the phases
// after them and for the cleanup.
type runner struct {
	plan *Plan
	cfg  Config
	log  io.Writer
	dir  string
	// undo are the cleanups of what the phases started, run in reverse
	// order on every exit path.
	undo []func()
	// started is set when the run phase begins: from then on the run
	// directory is the record of a run, kept whatever happens.
	started bool

	nodeDir   string
	cl        sut.Deployment
	clock     *history.Clock
	rec       *history.Recorder
	start     time.Time
	storage   *redis.Client
	slotNodes [][]sut.ClientNode
	wl        *workloads.Mutex
	env       nemesis.Env

	exits exits

	stopWorkload context.CancelFunc
	wlDone       chan error
	progressDone <-chan struct{}
	// clientsGone: every client ended early, its lock broken; lost is
	// why (the workload's error): the verdict says it (judgeLost).
	clientsGone bool
	lost        error
	nemErr      error
	// executed records the steps the nemesis carried out (schedule.yaml).
	executed *executed
	// scriptOver is closed once the script's steps have all acted or
	// been given up; ev follows the history for a phase that may end
	// early (EndEarly), nil when none may.
	scriptOver chan struct{}
	ev         *evidence

	// src is the history the check read, for the report to read too.
	src    history.Source
	phases []reports.Phase
	// tails are the servers' last lines, read before their directory is
	// removed, for the log of a failed run (openRunLog).
	tails string
}

// phase logs the beginning of a phase and records it for the report.
func (r *runner) phase(name string) {
	at := int64(0)
	if r.clock != nil {
		at = r.clock.Now()
	}
	r.phases = append(r.phases, reports.Phase{Name: name, At: at})
	fmt.Fprintf(r.log, "%-9s %s\n", name, time.Now().Format("15:04:05.000"))
}

// onExit adds f to the cleanups.
func (r *runner) onExit(f func()) { r.undo = append(r.undo, f) }

// cleanup undoes what the phases started, the last first, each one even
// when one before it panics (as deferred calls do).
func (r *runner) cleanup() {
	for _, f := range r.undo {
		defer f()
	}
}

// discard removes the run directory of a run whose setup failed.
func (r *runner) discard() {
	if err := reports.DiscardRunDir(r.cfg.Store, r.dir); err != nil {
		fmt.Fprintf(r.log, "setup: %v\n", err)
	}
}

// setup starts the deployment, the recorder, the clients and the
// nemeses. A deployment that cannot do what a nemesis needs is refused
// as bad input.
func (r *runner) setup(ctx context.Context) error {
	hf, err := os.Create(filepath.Join(r.dir, reports.HistoryFile))
	if err != nil {
		return fmt.Errorf("create history: %w", err)
	}
	r.onExit(func() { hf.Close() })
	r.phase("setup")
	if err := r.startDeployment(ctx); err != nil {
		return err
	}
	r.clock = history.NewClock()
	r.rec = history.NewRecorder(r.clock, hf)
	r.onExit(func() { r.rec.Close() }) // flushes what an early return leaves; idempotent
	r.start = time.Now()
	r.watchExits()
	if err := r.startClients(); err != nil {
		return err
	}
	r.env = nemesis.Env{Deployment: r.cl, Recorder: r.rec, Clients: r.wl}
	if err := r.plan.Nemesis.Setup(ctx, r.env); err != nil {
		if errors.Is(err, sut.ErrUnsupported) {
			return &UsageError{Err: err}
		}
		return fmt.Errorf("setup: %w", err)
	}
	return nil
}

// startDeployment starts the deployment in a node directory of its own
// and checks that it can do what the nemeses need.
func (r *runner) startDeployment(ctx context.Context) error {
	ccfg := r.plan.Cluster
	if ccfg.Dir == "" {
		// Outside the store, so that a killed run leaves no node files
		// (libfaketime control files among them) in its record.
		dir, err := local.NewNodeDir()
		if err != nil {
			return fmt.Errorf("setup: %w", err)
		}
		ccfg.Dir = dir
		r.onExit(func() { os.RemoveAll(dir) }) // after the deployment's Down
	}
	r.nodeDir = ccfg.Dir
	// After the deployment is down, before its directory is removed.
	r.onExit(func() { r.tails = cmp.Or(r.tails, serverTails(r.nodeDir)) })
	cl, err := r.plan.Backend(ctx, ccfg)
	if err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	r.cl = cl
	// Teardown on every path, panics included.
	r.onExit(func() { _ = cl.Down() })
	return r.cfg.checkDeployment(cl)
}

// startClients connects the storage client and each client slot's lock
// nodes, and builds the workload over them.
func (r *runner) startClients() error {
	clients := r.cfg.Workload.Clients
	r.storage = redisbackend.NewRedisClient(r.cl.StorageAddr(), sut.ClientOptions{Timeout: 2 * time.Second, PoolSize: clients + 2})
	r.onExit(func() { r.storage.Close() })
	r.slotNodes = make([][]sut.ClientNode, clients)
	for i := range r.slotNodes {
		r.slotNodes[i] = r.cl.ClientNodes(i, sut.ClientOptions{Timeout: clientTimeout(r.cfg), MaxRetries: r.cfg.ClientRetries})
	}
	r.onExit(func() {
		for _, ns := range r.slotNodes {
			sut.CloseClientNodes(ns)
		}
	})
	wl, err := workloads.NewMutex(r.cfg.Workload, workloads.Env{
		Recorder: r.rec, Lock: r.plan.Lock, Storage: r.storage,
		LockOptions: locks.Options{Dir: r.dir}, // an adapter keeps its program and log in the run
		Nodes:       func(slot int) []sut.ClientNode { return r.slotNodes[slot] },
	})
	if err != nil {
		return &UsageError{Err: err}
	}
	r.wl = wl
	return nil
}

// watchRecorder is ctx, cancelled as well when the history can no longer
// be written (a full disk): the events after that would be lost anyway,
// so the run ends at once.
func (r *runner) watchRecorder(ctx context.Context) context.Context {
	ctx, cancel := context.WithCancel(ctx)
	r.onExit(cancel)
	go func() {
		select {
		case <-r.rec.Failed():
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx
}

// run is the run phase: the workload and the faults, for TimeLimit or
// until ctx ends (interrupted). The workload goes on until teardown.
func (r *runner) run(ctx context.Context) (interrupted bool, err error) {
	r.phase("run")
	r.started = true
	nem := r.plan.Nemesis
	// A script's steps at 0 are in force before the first operation: a
	// scenario that cuts a client off at 0 so that the other holds must
	// not race it for the first grant (it lost 2 of 500 soak runs so).
	// A random schedule runs as the script the generator draws from the
	// seed, so that the steps are recorded as scripted ones are.
	script, err := r.cfg.Script, error(nil)
	if len(script) == 0 {
		script = nem.Schedule(r.cfg.TimeLimit)
		if r.cfg.AwaitHolders {
			// With the ends of the faults the time limit cuts off, so that
			// runScript can tell a fault it could not end in the run.
			script = withEnds(nem.Schedule(r.cfg.TimeLimit+nem.Config().Interval), r.cfg.TimeLimit)
			script = awaitHolders(script, r.plan.grantingNodes(), r.cfg.Workload.TTL, r.cfg.Workload.Hold)
		}
	}
	r.executed = &executed{start: time.Now()}
	r.followEvidence()
	script, err = startScript(ctx, nem, r.env, script, r.executed)
	if err != nil {
		_ = nem.Heal(ctx, r.env) // the cleanup stops the deployment
		return false, fmt.Errorf("nemesis: %w", err)
	}
	stop, stopWorkload := context.WithCancel(context.Background())
	r.stopWorkload = stopWorkload
	r.onExit(stopWorkload)
	r.wlDone = make(chan error, 1)
	go func() { r.wlDone <- r.wl.Run(ctx, stop) }()
	r.progressDone = r.progress(ctx, stop, r.wl, r.start)
	faults, stopFaults := context.WithCancel(ctx)
	nemDone := make(chan error, 1)
	var end time.Time // a random schedule that awaits holders starts no fault it could not end
	if len(r.cfg.Script) == 0 && r.cfg.AwaitHolders {
		end = r.executed.start.Add(r.cfg.TimeLimit)
	}
	r.scriptOver = make(chan struct{})
	go func() { nemDone <- runScript(faults, nem, r.env, script, r.executed, end, r.scriptOver) }()
	interrupted = r.waitRun(ctx)
	stopFaults()
	r.nemErr = <-nemDone
	return interrupted, nil
}

// heal is the final heal, on every path past the run phase; Heal bounds
// itself and ignores ctx's cancellation.
func (r *runner) heal(ctx context.Context) {
	r.phase("heal")
	if err := r.plan.Nemesis.Heal(ctx, r.env); err != nil {
		fmt.Fprintf(r.log, "heal: %v\n", err)
	}
}

// recovery lets the workload go on without faults for Recovery, to
// measure liveness, or, with EndEarly.Recovery, until the evidence is in
// (evidence.recovered); it reports whether ctx ended it early.
func (r *runner) recovery(ctx context.Context) (interrupted bool) {
	r.phase("recovery")
	if r.ev == nil || !r.cfg.EndEarly.Recovery {
		return !wait(ctx, r.cfg.Recovery)
	}
	r.ev.setMark(r.clock.Now())
	t := time.NewTimer(r.cfg.Recovery)
	defer t.Stop()
	tick := time.NewTicker(evidencePoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return true
		case <-t.C:
			return false
		case <-tick.C:
			if r.ev.recovered() {
				fmt.Fprintf(r.log, "recovery  ended early: every key granted again after the heal\n")
				return false
			}
		}
	}
}

// teardown stops the workload, reads the final counters, closes the
// history and stops the deployment; then it reports what failed in the
// workload or the nemesis.
func (r *runner) teardown() error {
	r.phase("teardown")
	r.stopWorkload()
	wlErr := <-r.wlDone
	<-r.progressDone
	finalCtx, cancel := context.WithTimeout(context.Background(), finalReadsBudget(r.wl.FinalReadKeys()))
	r.wl.FinalReads(finalCtx)
	cancel()
	if err := r.rec.Close(); err != nil {
		return fmt.Errorf("%w: the run stopped at the first write that failed; what was written before is kept in %s; free space on the store's filesystem or choose another with --store", err, r.dir)
	}
	if err := r.cl.Down(); err != nil {
		fmt.Fprintf(r.log, "teardown: %v\n", err)
	}
	r.tails = serverTails(r.nodeDir) // for the log, should the run fail
	_ = os.RemoveAll(r.nodeDir)      // node data is not part of the record
	r.lost = wlErr                   // the clients' locks broke: the verdict says so
	if r.nemErr != nil {
		return fmt.Errorf("nemesis: %w", r.nemErr)
	}
	return nil
}

// finalReadsBudget is how long the final reads of n keys' counters may
// take: 5 s, and 100 µs more per key past the first 10,000 (a read takes
// about 20 µs on a quiet machine), up to a minute, so that a run of many
// keys reads them all and a run whose storage is gone does not wait long.
func finalReadsBudget(n int) time.Duration {
	d := 5*time.Second + time.Duration(max(n-10_000, 0))*100*time.Microsecond
	return min(d, time.Minute)
}

// check judges the run's history. Ctrl-C during the check or the report
// stops them; a run already interrupted checks and reports its prefix
// regardless (a second Ctrl-C ends the process): finish is the context
// both go on under.
func (r *runner) check(outer context.Context, interrupted bool) (res checker.Result, finish context.Context, err error) {
	r.phase("check")
	finish = outer
	if interrupted {
		finish = context.WithoutCancel(outer)
	}
	checkCtx, cancel := context.WithTimeout(finish, WholeCheckBound(r.cfg.CheckTimeout))
	defer cancel()
	r.src = r.rec.Source()
	res, err = checker.Check(checkCtx, r.src, checker.Config{Timeout: r.cfg.CheckTimeout,
		Require: r.plan.Require, AllowVacuous: r.cfg.AllowVacuous, SpillDir: r.dir, Views: true})
	if err != nil {
		return res, finish, fmt.Errorf("check: %w", err)
	}
	return res, finish, nil
}

// report writes the run's record: run.json, results.json (once) and the
// report that draws what the check found; then it points the store's
// latest link at the run. A check or drawing that finish's end cut short
// leaves results.json (the checkers that had not finished unknown) and
// no page.
func (r *runner) report(outer, finish context.Context, interrupted bool, res checker.Result) (reports.Results, error) {
	r.phase("report")
	rec, err := r.record(r.start, r.cl.Layout().Nodes)
	if err != nil {
		return reports.Results{}, err
	}
	r.markLost(&rec)
	if err := reports.WriteJSON(r.dir, reports.MetaFile, rec); err != nil {
		return reports.Results{}, err
	}
	if err := r.writeSchedule(); err != nil {
		return reports.Results{}, err
	}
	if finish.Err() != nil {
		rec.Partial = fmt.Sprintf("%v during the check: checkers that had not finished are unknown", context.Cause(finish))
		results, err := reports.WriteResults(r.dir, rec.RunMeta, res)
		if err != nil {
			return results, err
		}
		return results, fmt.Errorf("%w: %s; results.json holds them, `harness report %s` checks again and draws the report", ErrInterrupted, rec.Partial, r.dir)
	}
	results, err := reports.Render(finish, r.dir, rec, r.src, res)
	if err != nil {
		if finish.Err() != nil {
			// A page next to figures it does not match is worse than none.
			_ = os.Remove(filepath.Join(r.dir, reports.IndexFile))
			return results, fmt.Errorf("%w: %v while drawing the report; `harness report %s` draws it", ErrInterrupted, context.Cause(finish), r.dir)
		}
		return results, fmt.Errorf("report: %w", err)
	}
	if err := reports.PointLatest(r.cfg.Store, r.dir); err != nil {
		return results, err
	}
	if interrupted {
		return results, fmt.Errorf("%w: %v", ErrInterrupted, context.Cause(outer))
	}
	return results, nil
}
