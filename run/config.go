package run

import (
	"io"
	"slices"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/nemesis"
	"github.com/lockharness/lockharness/sut"
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
	// AwaitHolders makes the random schedule's faults wait for a holder
	// before they strike (awaitHolders): whether a fault lands inside a
	// hold is then the schedule's doing, not the machine's timing, so a
	// seed gives one verdict (the nightly matrix's cells run so).
	AwaitHolders bool `json:"await_holders,omitempty"`
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
	// without faults, to measure liveness. Zero derives it from the TTL
	// and the faults the run uses (DerivedRecovery, docs/faults.md).
	Recovery time.Duration `json:"recovery"`
	// EndEarly lets the run phase of a script and the recovery end before
	// TimeLimit and Recovery once their evidence is in (evidence.go).
	EndEarly EndEarly `json:"end_early,omitzero"`
	// CheckTimeout bounds each porcupine check (unknown when it runs out);
	// WholeCheckBound of it bounds the whole check.
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

	// Given names the fields the caller set on purpose, by their path in
	// Config ("Workload.Clients"): a zero there is a mistake to point out,
	// not a request for the default. A command line sets every field it
	// has a flag for, so --clients 0 is refused there, while the zero
	// Clients of a Config literal means 5. The fields it can name are
	// those whose zero means a default: Lock, Workload.Clients,
	// Workload.Keys, Workload.TTL, TimeLimit, Nemesis.Interval,
	// CheckTimeout, Nemesis.ClientPause and Nemesis.Names (see Validate).
	Given []string `json:"-"`
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
	if c.Recovery == 0 {
		c.Recovery = c.DerivedRecovery()
	}
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
// need nothing here (NewPlan refuses them).
func (c Config) needs() sut.Needs {
	var out sut.Needs
	faults := c.Nemesis.Faults()
	for _, n := range c.nemesisNames() {
		if info, err := faults.Lookup(n); err == nil {
			out = out.Merge(info.Needs)
		}
	}
	return out
}

// Requirements is the exposure the run must reach: Require when given,
// else one requirement per named nemesis (it struck while a client held a
// lock), looked up in the run's fault registry. Nemesis names are checked
// by NewPlan; an unknown one adds none.
func (c Config) Requirements() []checker.Requirement {
	if len(c.Require) > 0 {
		return c.Require
	}
	return requirements(c.Nemesis.Faults(), c.Nemesis.Names)
}

// NemesisRequirements says, for each built-in nemesis, what in a history
// shows that it struck while a client held a lock.
func NemesisRequirements(names []string) []checker.Requirement {
	return requirements(nemesis.Builtin(), names)
}

// requirements are NemesisRequirements of the faults of faults.
func requirements(faults *nemesis.Registry, names []string) []checker.Requirement {
	var out []checker.Requirement
	for _, n := range names {
		info, err := faults.Lookup(n)
		if err != nil {
			continue
		}
		out = append(out, checker.Requirement{Name: "the " + n + " nemesis", Faults: info.Strikes,
			PauseStruck: info.StrikesClient == history.FPause, CrashStruck: info.StrikesClient == history.FCrash})
	}
	return out
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

// WholeCheckBound is how long a whole check may take, given the bound on
// each porcupine search: a check runs many searches (one per key and
// model) besides reading the history, so one search's bound alone leaves
// the whole unbounded (a history of a million keys ran for minutes under
// --check-timeout 20s). Four searches' worth is room for the reading and
// the other keys without waiting forever; the checkers that had not
// finished by then are unknown, and a violation already found stands.
func WholeCheckBound(checkTimeout time.Duration) time.Duration {
	return 4 * checkTimeout
}
