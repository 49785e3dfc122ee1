package run

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/nemesis"
	"github.com/lockharness/lockharness/schedule"
	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/workloads"
)

// ScheduleFile is the file in a run's directory that holds the schedule
// the run executed: `harness run --schedule DIR/schedule.yaml` replays it.
const ScheduleFile = "schedule.yaml"

// FromSchedule is the configuration that runs schedule s (already
// validated: schedule.Parse). Fields the schedule leaves zero take the
// run's defaults. The lock is looked up in reg unless the schedule names
// its own registry (nil reg: locks.Builtin()).
func FromSchedule(s schedule.Schedule, env schedule.Env) (Config, error) {
	reg, err := s.LockRegistry(env)
	if err != nil {
		return Config{}, &UsageError{Err: err}
	}
	w, d, n := s.Workload, s.Deployment, s.Nemesis
	c := Config{
		Lock: s.Lock, Registry: reg, Nodes: s.Nodes, Seed: s.Seed,
		Workload: workloads.Config{Clients: w.Clients, Keys: w.Keys, TTL: w.TTL, Hold: w.Hold, AcquireTimeout: w.AcquireTimeout,
			OpTimeout: w.OpTimeout, ClientPause: w.ClientPause, ClientPauseRate: w.ClientPauseRate, RenewBeforeWrite: w.RenewBeforeWrite},
		Cluster: sut.Config{Topology: d.Topology, Replicas: d.Replicas, Masters: d.Masters, Failover: d.Failover, Sentinels: d.Sentinels,
			ExtraConfig: d.ExtraConfig, Faketime: d.Faketime, Persistence: d.Persistence, ClusterNodeTimeout: d.ClusterNodeTimeout,
			SentinelDownAfter: d.SentinelDownAfter, SentinelFailoverTimeout: d.SentinelFailoverTimeout},
		Nemesis: nemesis.Config{Names: clone(n.Names), Interval: n.Interval, PartitionPatterns: clone(n.PartitionPatterns),
			Latency: n.Latency, Jitter: n.Jitter, ClockBump: n.ClockBump, StrobePeriod: n.StrobePeriod, DriftRate: n.DriftRate,
			PauseDuration: n.PauseDuration, Persistence: n.Persistence, RestartDelay: n.RestartDelay, FailoverWindow: n.FailoverWindow,
			SentinelFault: n.SentinelFault, ClientPause: n.ClientPause, Failpoints: clone(n.Failpoints), HealTimeout: n.HealTimeout,
			Registry: env.Faults},
		TimeLimit: s.TimeLimit, Recovery: s.Recovery, ClientTimeout: s.ClientTimeout, ClientRetries: s.ClientRetries,
		EndEarly: EndEarly(s.EndEarly), Scenario: s.Name, Explanation: s.Explanation,
	}
	for _, st := range s.Steps {
		c.Script = append(c.Script, st.NemesisStep())
	}
	for _, r := range s.Exposure {
		c.Require = append(c.Require, r.CheckerRequirement())
	}
	if len(s.Expect) > 0 {
		c.Expected = map[string]string{}
		for k, v := range s.Expect {
			c.Expected[k] = v
		}
	}
	return c, nil
}

func clone(xs []string) []string {
	if len(xs) == 0 {
		return nil
	}
	return append([]string(nil), xs...)
}

// ScheduleOf is the schedule of configuration c, as written: what
// FromSchedule reads back into c (but the registries, which are code:
// a user's lock runs again with the same --lock-cmd).
func ScheduleOf(c Config) schedule.Schedule {
	w, d, n := c.Workload, c.Cluster, c.Nemesis
	s := schedule.Schedule{
		Name: c.Scenario, Lock: c.Lock, Seed: c.Seed, Nodes: c.Nodes,
		Workload: schedule.Workload{Clients: w.Clients, Keys: w.Keys, TTL: w.TTL, Hold: w.Hold, AcquireTimeout: w.AcquireTimeout,
			OpTimeout: w.OpTimeout, ClientPause: w.ClientPause, ClientPauseRate: w.ClientPauseRate, RenewBeforeWrite: w.RenewBeforeWrite},
		Deployment: schedule.Deployment{Topology: d.Topology, Replicas: d.Replicas, Masters: d.Masters, Failover: d.Failover, Sentinels: d.Sentinels,
			ExtraConfig: d.ExtraConfig, Faketime: d.Faketime, Persistence: d.Persistence, ClusterNodeTimeout: d.ClusterNodeTimeout,
			SentinelDownAfter: d.SentinelDownAfter, SentinelFailoverTimeout: d.SentinelFailoverTimeout},
		Nemesis: schedule.Nemesis{Names: clone(n.Names), Interval: n.Interval, PartitionPatterns: clone(n.PartitionPatterns),
			Latency: n.Latency, Jitter: n.Jitter, ClockBump: n.ClockBump, StrobePeriod: n.StrobePeriod, DriftRate: n.DriftRate,
			PauseDuration: n.PauseDuration, Persistence: n.Persistence, RestartDelay: n.RestartDelay, FailoverWindow: n.FailoverWindow,
			SentinelFault: n.SentinelFault, ClientPause: n.ClientPause, Failpoints: clone(n.Failpoints), HealTimeout: n.HealTimeout},
		TimeLimit: c.TimeLimit, Recovery: c.Recovery, ClientTimeout: c.ClientTimeout, ClientRetries: c.ClientRetries,
		EndEarly: schedule.EndEarly(c.EndEarly), Explanation: c.Explanation,
	}
	s.Registry = registryOf(c.Lock)
	for _, st := range c.Script {
		s.Steps = append(s.Steps, schedule.StepOf(st))
	}
	for _, r := range c.Require {
		s.Exposure = append(s.Exposure, schedule.RequirementOf(r))
	}
	if len(c.Expected) > 0 {
		s.Expect = map[string]string{}
		for k, v := range c.Expected {
			s.Expect[k] = v
		}
	}
	return s
}

// registryOf is the schedule's registry for a run of lock: a lock only the
// deliberately buggy variants have (a catalogue scenario's) is named with
// registry: deliberate-bugs, so that the run's schedule.yaml replays it;
// any other is looked up in the replay's own locks.
func registryOf(lock string) string {
	if _, err := locks.Builtin().Lookup(lock); err == nil {
		return ""
	}
	if _, err := locks.WithDeliberateBugs().Lookup(lock); err == nil {
		return schedule.RegistryDeliberateBugs
	}
	return ""
}

// executed records the steps a run's nemesis carried out, as they
// happened, for the run's schedule.yaml.
type executed struct {
	start time.Time
	mu    sync.Mutex
	steps []schedule.Step
}

// add records step s, scripted at st.At, which acted at struck after
// waiting waited for a holder (found: who), or did not (notDone: why).
func (e *executed) add(s schedule.Step) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.steps = append(e.steps, s)
}

// since is the time from the start of the run phase to t, to the
// millisecond.
func (e *executed) since(t time.Time) time.Duration { return t.Sub(e.start).Round(time.Millisecond) }

// schedule is the schedule the run executed: its configuration, the
// exposure it had to reach, and its steps. A scripted run keeps its
// script (times and awaits as written, with when each step struck); a
// random one becomes a script of the steps the generator drew, at the
// times they struck (or, when they awaited holders, at the times drawn,
// with their awaits: the replay waits as the run did), and no random
// nemesis, so that a replay runs the same faults.
func (e *executed) schedule(cfg Config, require []checker.Requirement) schedule.Schedule {
	c := cfg
	c.Require = require
	if len(cfg.Script) == 0 {
		c.Nemesis.Names = nil
	}
	s := ScheduleOf(c)
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(cfg.Script) == 0 {
		s.Steps = nil
		for _, st := range e.steps {
			if st.NotDone == "" {
				if !cfg.AwaitHolders {
					st.At = st.Struck
				}
				s.Steps = append(s.Steps, st)
			}
		}
		return s
	}
	s.Steps = append([]schedule.Step(nil), e.steps...)
	return s
}

// writeSchedule writes the schedule the run executed into its directory.
func (r *runner) writeSchedule() error {
	s := r.executed.schedule(r.cfg, r.plan.Require)
	f, err := os.Create(filepath.Join(r.dir, ScheduleFile))
	if err != nil {
		return fmt.Errorf("write %s: %w", ScheduleFile, err)
	}
	if err := schedule.Write(f, s); err != nil {
		_ = f.Close()
		return fmt.Errorf("write %s: %w", ScheduleFile, err)
	}
	return f.Close()
}

// notDone says why a step did not act, in a line.
func notDone(err error) string {
	msg := err.Error()
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	return msg
}

// done records a step that acted at struck (or did not: err), after its
// await waited for holder.
func (e *executed) done(s schedule.Step, struck time.Time, waited time.Duration, holder string, err error) {
	s.Struck, s.Waited, s.Holder = e.since(struck), waited.Round(time.Millisecond), holder
	if err != nil {
		s.NotDone = notDone(err)
	}
	e.add(s)
}

// cutOff records the steps the end of the run phase came before.
func (e *executed) cutOff(steps []nemesis.Step) {
	for _, st := range steps {
		s := schedule.StepOf(st)
		s.NotDone = "the run phase ended first"
		e.add(s)
	}
}

// holderName names the holder an await found.
func holderName(p history.Process, key string) string {
	return fmt.Sprintf("process %d on %s", p, key)
}
