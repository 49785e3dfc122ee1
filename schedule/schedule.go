// Package schedule is the schedule file: one YAML document that says what
// a run is (the lock, its deployment, the workload, the time limit, the
// seed) and which faults strike when (each step at a time from the start
// of the run phase, or awaiting a holder in the state its fault is about),
// and, for a scenario, the verdict each checker must give, the exposure
// the run must reach for that verdict to be evidence, what happens in
// plain words and where the argument comes from. The catalogue, a user's
// own scenario and the record of what a run executed (schedule.yaml in
// its run directory) are all schedule files, so any of them replays with
// `harness run --schedule FILE`.
//
// The package is pure: Parse reads from an io.Reader (bounded), Write
// writes to an io.Writer, and Validate checks a schedule against the
// registries it is given. Every error of Parse names the line at fault.
package schedule

import (
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/nemesis"
)

// Schedule is one schedule file. Durations are written in human units
// ("1s", "200ms"); a zero field takes the run's default.
type Schedule struct {
	// Name and Summary name a scenario (the catalogue's file name is its
	// name) and say in one line what happens.
	Name    string `yaml:"name,omitempty"`
	Summary string `yaml:"summary,omitempty"`
	// Lock is the lock under test; Registry, when "deliberate-bugs", looks
	// it up among the built-in locks and the deliberately buggy variants
	// the catalogue reproduces library bugs with.
	Lock     string `yaml:"lock"`
	Registry string `yaml:"registry,omitempty"`
	// Seed makes the run's choices (tokens, keys, random faults).
	Seed uint64 `yaml:"seed,omitempty"`
	// Nodes is the number of independent lock nodes (0: the lock's
	// minimum); Deployment shapes the rest.
	Nodes      int        `yaml:"nodes,omitempty"`
	Deployment Deployment `yaml:"deployment,omitempty"`
	Workload   Workload   `yaml:"workload,omitempty"`
	// TimeLimit is the length of the run phase, Recovery the fault-free
	// time after the final heal.
	TimeLimit time.Duration `yaml:"time_limit,omitempty"`
	Recovery  time.Duration `yaml:"recovery,omitempty"`
	// EndEarly lets the run phase and the recovery end before time_limit
	// and recovery, once the evidence their verdicts rest on is in (the
	// times stay the upper bounds; docs/schedules.md#ending-early).
	EndEarly EndEarly `yaml:"end_early,omitempty,flow"`
	// ClientTimeout is each lock command's read timeout (0: from the TTL);
	// ClientRetries lets go-redis retry a command (0: off).
	ClientTimeout time.Duration `yaml:"client_timeout,omitempty"`
	ClientRetries int           `yaml:"client_retries,omitempty"`
	// Nemesis composes random faults and tunes every fault; Steps, when
	// given, replace the random schedule.
	Nemesis Nemesis `yaml:"nemesis,omitempty"`
	Steps   []Step  `yaml:"steps,omitempty"`
	// Expect is the verdict each checker must give ("lock-promise":
	// "invalid"); Exposure what the run must reach for a verdict to be
	// evidence. Empty Exposure: each random nemesis must strike a holder.
	Expect   map[string]string `yaml:"expect,omitempty"`
	Exposure []Requirement     `yaml:"exposure,omitempty"`
	// Kinds are the kinds of lock a scenario applies to besides its own
	// lock's, each with what its mechanism predicts (see package
	// scenarios).
	Kinds []Kind `yaml:"kinds,omitempty"`
	// Explanation says what happens, why, and what fixes it; Sources
	// where the argument comes from (paper, blog, upstream issue).
	Explanation string   `yaml:"explanation,omitempty"`
	Sources     []string `yaml:"sources,omitempty"`
}

// EndEarly says which phases may end early (run.EndEarly): Run, the run
// phase of a script once its steps are done, their faults over, what was
// open then ended and Grants acquires granted after that (0: the
// default, 2); Recovery, once every key is granted again after the final
// heal.
type EndEarly struct {
	Run      bool `yaml:"run,omitempty"`
	Grants   int  `yaml:"grants,omitempty"`
	Recovery bool `yaml:"recovery,omitempty"`
}

// Deployment is the shape of the system under test.
type Deployment struct {
	// Topology is "independent" (default), "replicated" (a master and
	// replicas) or "cluster" (a Redis Cluster).
	Topology string `yaml:"topology,omitempty"`
	Replicas int    `yaml:"replicas,omitempty"`
	Masters  int    `yaml:"masters,omitempty"`
	// Failover of a replicated topology: "sentinel" (default) or "manual".
	Failover  string `yaml:"failover,omitempty"`
	Sentinels int    `yaml:"sentinels,omitempty"`
	// ExtraConfig is appended to every lock node's configuration.
	ExtraConfig string `yaml:"extra_config,omitempty"`
	// Faketime runs the nodes under libfaketime (clock faults need it).
	Faketime bool `yaml:"faketime,omitempty"`
	// Persistence of the lock nodes: none, aof-everysec or aof-always.
	Persistence             string        `yaml:"persistence,omitempty"`
	ClusterNodeTimeout      time.Duration `yaml:"cluster_node_timeout,omitempty"`
	SentinelDownAfter       time.Duration `yaml:"sentinel_down_after,omitempty"`
	SentinelFailoverTimeout time.Duration `yaml:"sentinel_failover_timeout,omitempty"`
}

// Workload is what the clients do.
type Workload struct {
	Clients int           `yaml:"clients,omitempty"`
	Keys    int           `yaml:"keys,omitempty"`
	TTL     time.Duration `yaml:"ttl,omitempty"`
	// Hold is how long a holder works; AcquireTimeout how long an acquire
	// waits for a held lock (0: it tries once).
	Hold           time.Duration `yaml:"hold,omitempty"`
	AcquireTimeout time.Duration `yaml:"acquire_timeout,omitempty"`
	OpTimeout      time.Duration `yaml:"op_timeout,omitempty"`
	// ClientPause is the workload's own random pause inside the critical
	// section, at ClientPauseRate per section.
	ClientPause      time.Duration `yaml:"client_pause,omitempty"`
	ClientPauseRate  float64       `yaml:"client_pause_rate,omitempty"`
	RenewBeforeWrite bool          `yaml:"renew_before_write,omitempty"`
}

// Nemesis composes random faults (Names) and tunes every fault; see
// nemesis.Config for each field.
type Nemesis struct {
	Names             []string      `yaml:"names,omitempty,flow"`
	Interval          time.Duration `yaml:"interval,omitempty"`
	PartitionPatterns []string      `yaml:"partition_patterns,omitempty,flow"`
	Latency           time.Duration `yaml:"latency,omitempty"`
	Jitter            time.Duration `yaml:"jitter,omitempty"`
	ClockBump         time.Duration `yaml:"clock_bump,omitempty"`
	StrobePeriod      time.Duration `yaml:"strobe_period,omitempty"`
	DriftRate         float64       `yaml:"drift_rate,omitempty"`
	PauseDuration     time.Duration `yaml:"pause_duration,omitempty"`
	Persistence       string        `yaml:"persistence,omitempty"`
	RestartDelay      time.Duration `yaml:"restart_delay,omitempty"`
	FailoverWindow    time.Duration `yaml:"failover_window,omitempty"`
	SentinelFault     string        `yaml:"sentinel_fault,omitempty"`
	ClientPause       time.Duration `yaml:"client_pause,omitempty"`
	Failpoints        []string      `yaml:"failpoints,omitempty,flow"`
	HealTimeout       time.Duration `yaml:"heal_timeout,omitempty"`
}

// Step is one fault: at At from the start of the run phase (or, with
// Await, from the moment a holder as described is there), nemesis Nemesis
// performs Action on Targets (nodes "n1", clients "c0", links "c0->n2",
// roles "master" and "replica"; empty: chosen when it runs) with Params
// (a pause's "duration", a clock's "delta", …).
//
// Struck, Waited and Holder are what a run recorded of the step it
// executed (schedule.yaml in the run directory): when it acted, how long
// its await waited, and the holder the await found. A replay runs the step
// as scripted and ignores them.
type Step struct {
	At      time.Duration     `yaml:"at"`
	Nemesis string            `yaml:"nemesis"`
	Action  string            `yaml:"action"`
	Targets []string          `yaml:"targets,omitempty,flow"`
	Params  map[string]string `yaml:"params,omitempty,flow"`
	Await   *Await            `yaml:"await,omitempty,flow"`

	Struck time.Duration `yaml:"struck,omitempty"`
	Waited time.Duration `yaml:"waited,omitempty"`
	Holder string        `yaml:"holder,omitempty"`
	// NotDone says why a recorded step did not act (its await never held,
	// or the fault failed).
	NotDone string `yaml:"not_done,omitempty"`
}

// Await is the holder a step waits for (nemesis.Await): at least LeaseLeft
// of its lease to run, granted by the nodes Granted, on a bare quorum.
// An empty Await ("await: {}") waits for any holder.
type Await struct {
	LeaseLeft  time.Duration `yaml:"lease_left,omitempty"`
	Granted    []string      `yaml:"granted,omitempty,flow"`
	BareQuorum bool          `yaml:"bare_quorum,omitempty"`
}

// Requirement is one exposure the run must reach (checker.Requirement).
type Requirement struct {
	Name          string   `yaml:"name"`
	Faults        []string `yaml:"faults,omitempty,flow"`
	Attempted     bool     `yaml:"attempted,omitempty"`
	Paused        bool     `yaml:"paused,omitempty"`
	PauseStruck   bool     `yaml:"pause_struck,omitempty"`
	PauseOutlived bool     `yaml:"pause_outlived,omitempty"`
	Crashed       bool     `yaml:"crashed,omitempty"`
	CrashStruck   bool     `yaml:"crash_struck,omitempty"`
}

// Kind is a kind of lock a scenario applies to: its system, the properties
// it has and lacks ("expiring lease", "fencing", "quorum", "session"), and
// the verdicts the scenario's mechanism predicts for it.
type Kind struct {
	System string            `yaml:"system"`
	Has    []string          `yaml:"has,omitempty,flow"`
	Lacks  []string          `yaml:"lacks,omitempty,flow"`
	Expect map[string]string `yaml:"expect,omitempty,flow"`
}

// NemesisStep is the step as the nemesis runs it.
func (s Step) NemesisStep() nemesis.Step {
	out := nemesis.Step{At: s.At, Nemesis: s.Nemesis, Action: s.Action,
		Targets: append([]string(nil), s.Targets...), Params: copyMap(s.Params)}
	if s.Await != nil {
		out.Await = &nemesis.Await{LeaseLeft: s.Await.LeaseLeft, Granted: append([]string(nil), s.Await.Granted...), BareQuorum: s.Await.BareQuorum}
	}
	return out
}

// StepOf is the schedule's step of a nemesis step.
func StepOf(s nemesis.Step) Step {
	out := Step{At: s.At, Nemesis: s.Nemesis, Action: s.Action,
		Targets: append([]string(nil), s.Targets...), Params: copyMap(s.Params)}
	if s.Await != nil {
		out.Await = &Await{LeaseLeft: s.Await.LeaseLeft, Granted: append([]string(nil), s.Await.Granted...), BareQuorum: s.Await.BareQuorum}
	}
	return out.normal()
}

// CheckerRequirement is r as the checker takes it.
func (r Requirement) CheckerRequirement() checker.Requirement {
	return checker.Requirement{Name: r.Name, Faults: append([]string(nil), r.Faults...), Attempted: r.Attempted,
		Paused: r.Paused, PauseStruck: r.PauseStruck, PauseOutlived: r.PauseOutlived, Crashed: r.Crashed, CrashStruck: r.CrashStruck}
}

// RequirementOf is the schedule's requirement of a checker's.
func RequirementOf(r checker.Requirement) Requirement {
	out := Requirement{Name: r.Name, Faults: append([]string(nil), r.Faults...), Attempted: r.Attempted,
		Paused: r.Paused, PauseStruck: r.PauseStruck, PauseOutlived: r.PauseOutlived, Crashed: r.Crashed, CrashStruck: r.CrashStruck}
	if len(out.Faults) == 0 {
		out.Faults = nil
	}
	return out
}

func copyMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
