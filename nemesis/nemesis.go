// Package nemesis injects faults into a running deployment: network
// partitions and latency on links, clock skew and drift on nodes, process
// pauses and crashes, failovers, and client pauses and crashes. Each fault
// lives in its own file with its generator (which targets, from the run's
// seed) and its heal, declares what it needs of the deployment (Info.Needs)
// and how a report draws it (Info.Kinds), and is registered by name. A
// Runner composes the named faults into one schedule, executes it, records
// every action in the history as the nemesis process (with what it means
// in structured fields: the fault it starts, those it ends, the clocks it
// set), and heals everything at the end.
//
// A user adds faults of their own: a Fault (its doc comment is the
// contract), registered in a Registry (Builtin returns one with every
// fault of this package), given to the Runner as Config.Registry.
//
// The nemeses reach the system under test only through the seam, package
// sut: they work on any backend that offers the capabilities they ask
// for, and are refused at Setup by one that does not.
package nemesis

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/registry"
	"github.com/lockharness/lockharness/sut"
)

// Config chooses the faults and tunes them. Zero fields take defaults.
type Config struct {
	// Names are the composed nemeses, e.g. {"partition", "clock"}; empty
	// means none. Each fault period picks one of them at random.
	Names []string
	// Interval is the quiet time before each fault and, for faults that
	// last, how long they last (default 5s).
	Interval time.Duration
	// Seed makes the schedule: same seed and topology, same schedule.
	Seed uint64
	// Topology is what the schedule targets. Zero: taken from the cluster
	// at Setup (or, before Setup, one independent node and one client).
	Topology Topology

	// PartitionPatterns limits partition to these patterns (default: every
	// pattern the topology allows; see Patterns).
	PartitionPatterns []string
	// Latency and Jitter of the latency fault (default 100ms and 25ms).
	Latency, Jitter time.Duration
	// ClockBump is the largest clock jump (default 1m); a bump is between a
	// tenth of it and all of it, forward or backward.
	ClockBump time.Duration
	// StrobePeriod is how often a strobed clock flips (default 50ms).
	StrobePeriod time.Duration
	// ClockModes limits the clock nemesis to these of its modes: bump,
	// strobe, drift (default: all three). A mode left out is drawn as
	// before and replaced by a bump of the same node by the same delta, so
	// a seed's other draws do not move.
	ClockModes []string
	// DriftRate is the rate of a drifting clock (default: 0.5 or 2, at
	// random).
	DriftRate float64
	// PauseDuration is how long a node stays paused (default Interval).
	PauseDuration time.Duration
	// Persistence, when set, switches the lock nodes to this persistence
	// mode at Setup (sut.PersistNone, PersistAOFEverysec,
	// PersistAOFAlways); otherwise kill keeps the cluster's.
	Persistence string
	// RestartDelay is how long a killed node stays down before it restarts
	// (antirez's "delayed restart"; default 0, at once).
	RestartDelay time.Duration
	// FailoverWindow is, for a manual failover, how long the replication
	// link stays frozen before the replica is promoted: writes in that
	// window are lost (default Interval/2).
	FailoverWindow time.Duration
	// SentinelFault is how a sentinel failover is provoked: "pause",
	// "isolate" or "" (either, at random).
	SentinelFault string
	// ClientPause is how long a paused client sleeps (default 1s).
	ClientPause time.Duration
	// Failpoints are lock failpoint names client-pause and client-crash may
	// arm instead of acting on a current holder.
	Failpoints []string
	// HealTimeout bounds the final heal (default 30s).
	HealTimeout time.Duration

	// Registry holds the faults Names may name, a user's among them; nil
	// means Builtin(). See Faults.
	Registry *Registry `json:"-"`
}

// Faults is the registry the names are looked up in: Registry, or
// Builtin() when it is nil.
func (c Config) Faults() *Registry {
	if c.Registry != nil {
		return c.Registry
	}
	return Builtin()
}

// WithDefaults fills in unset fields.
func (c Config) WithDefaults() Config {
	if c.Interval <= 0 {
		c.Interval = 5 * time.Second
	}
	if c.Latency == 0 {
		c.Latency = 100 * time.Millisecond
	}
	if c.Jitter == 0 {
		c.Jitter = c.Latency / 4
	}
	if c.ClockBump == 0 {
		c.ClockBump = time.Minute
	}
	if c.StrobePeriod == 0 {
		c.StrobePeriod = 50 * time.Millisecond
	}
	if c.PauseDuration == 0 {
		c.PauseDuration = c.Interval
	}
	if c.FailoverWindow == 0 {
		c.FailoverWindow = c.Interval / 2
	}
	if c.ClientPause == 0 {
		c.ClientPause = time.Second
	}
	if c.HealTimeout == 0 {
		c.HealTimeout = 30 * time.Second
	}
	return c
}

// Info describes a nemesis for `harness nemeses`, says what in the
// history shows that it struck, so that a run can require it to have
// struck while a client held a lock (checker.Requirement), and how a
// report draws the faults it puts in force.
type Info struct {
	Name, Description string
	// Strikes are the fs this nemesis records (as the nemesis process)
	// that mean a fault took effect: start-partition, kill, promote, …
	// Heals are not among them.
	Strikes []string
	// StrikesClient is the client f (history.FPause, history.FCrash) that
	// a client records when this nemesis strikes it; empty for faults on
	// nodes and links.
	StrikesClient string
	// Needs is what the nemesis needs of the deployment: a layout and the
	// capabilities it uses. A run provides them when its backend can
	// (sut.Config.Provide) and is refused before it starts when the
	// deployment cannot (sut.Check).
	Needs sut.Needs
	// Kinds say how a report draws each kind of fault this nemesis puts in
	// force (the Event.Fault of its actions, history.Value.Fault): what it
	// is called, its colour, whether it is an instant, and for histories
	// recorded before events said so, which fs started and ended it. A
	// kind two nemeses put in force (partition) is drawn alike by both.
	Kinds []history.FaultKind
}

// NeedsOf is what the named built-in nemeses need together (see
// Registry.NeedsOf).
func NeedsOf(names []string) (sut.Needs, error) { return Builtin().NeedsOf(names) }

// Lookup returns the Info of the built-in nemesis called name, or an
// *UnknownError listing the known ones.
func Lookup(name string) (Info, error) { return Builtin().Lookup(name) }

// Known lists every built-in nemesis, sorted by name.
func Known() []Info { return Builtin().All() }

// UnknownError is returned for a nemesis name that is not registered: the
// registries' one unknown-name error, of Kind "nemesis".
type UnknownError = registry.UnknownError

// Clients is the workload's side of client faults.
type Clients interface {
	// PauseHolder stops for d the next client that reaches point at of
	// its critical section while holding a lock (a GC pause), waiting
	// until ctx is done for one; returns its process, or false if none
	// came.
	PauseHolder(ctx context.Context, d time.Duration, at PausePoint) (history.Process, bool)
	// CrashHolder makes the next client inside its critical section die
	// without releasing, waiting like PauseHolder; it is replaced by a new
	// process. Returns the crashed process.
	CrashHolder(ctx context.Context) (history.Process, bool)
	// ArmFailpoint makes the next client that reaches the lock failpoint
	// name pause for d, or crash when crash is true.
	ArmFailpoint(name string, d time.Duration, crash bool)
	// AwaitHolder returns at once a client that is inside its critical
	// section holding a lease as want describes, or else waits until ctx
	// is done for the next client to begin one so (its read done, its work
	// about to start). It does not disturb that client. It returns its
	// process and key, or false if none came.
	AwaitHolder(ctx context.Context, want Await) (history.Process, string, bool)
}

// PausePoint is where in its critical section a paused holder stops.
type PausePoint string

const (
	// PauseBeforeWrite: after reading the resource, before writing it
	// (the pause of Kleppmann's GC example: the write comes late).
	PauseBeforeWrite PausePoint = "before-write"
	// PauseAfterWrite: after writing, before releasing (the write was in
	// time; only the release comes late).
	PauseAfterWrite PausePoint = "after-write"
)

// ParsePausePoint checks a pause point given as text; empty means
// PauseBeforeWrite.
func ParsePausePoint(s string) (PausePoint, error) {
	switch PausePoint(s) {
	case "", PauseBeforeWrite:
		return PauseBeforeWrite, nil
	case PauseAfterWrite:
		return PauseAfterWrite, nil
	}
	return "", fmt.Errorf("unknown pause point %q (want %s or %s)", s, PauseBeforeWrite, PauseAfterWrite)
}

// Env is what the nemesis acts on and records to.
type Env struct {
	// Deployment is the system under test. Every fault reaches it through
	// the seam (package sut): a nemesis asks for the capabilities it
	// uses at Setup and is refused there when the deployment lacks them.
	Deployment sut.Deployment
	Recorder   *history.Recorder // nil: actions are not recorded
	Clients    Clients           // client faults; may be nil when none is used
}

// Step is one scripted action: at At (from the start of Run), nemesis
// Nemesis performs Action on Targets. Targets are nodes ("n1"), links
// ("c0->n2") or roles resolved when the step runs ("master", "replica").
type Step struct {
	At      time.Duration
	Nemesis string
	Action  string
	Targets []string
	Params  map[string]string
	// Await, when set, makes the step wait from At until a client holds a
	// lock as described, and act then. A fault meant to strike a holder
	// then strikes one however late a loaded machine makes the grants,
	// instead of landing between two holds; if no such holder comes before
	// the run ends, the step does not happen. In a script the steps after
	// it keep their distance from the moment it acted.
	Await *Await `json:",omitempty"`
}

// Await is the holder a step waits for: the state in which its fault
// does what the scenario is about.
type Await struct {
	// LeaseLeft is how much of the holder's lease must still run (0: any;
	// a lease without expiry always has enough).
	LeaseLeft time.Duration `json:",omitempty"`
	// Granted are nodes that must be among those that granted the lease
	// (a multi-node lock such as Redlock), and BareQuorum asks that the
	// lease rest on exactly its quorum of nodes: then one of them
	// forgetting the lock (a clock jump, a restart) gives it away.
	Granted    []string `json:",omitempty"`
	BareQuorum bool     `json:",omitempty"`
}

func (a Await) String() string {
	var w []string
	if a.LeaseLeft > 0 {
		w = append(w, fmt.Sprintf("%v of its lease left", a.LeaseLeft))
	}
	if len(a.Granted) > 0 {
		w = append(w, "granted by "+strings.Join(a.Granted, ", "))
	}
	if a.BareQuorum {
		w = append(w, "on a bare quorum")
	}
	if len(w) == 0 {
		return "a holder"
	}
	return "a holder with " + strings.Join(w, ", ")
}

func (s Step) String() string {
	var p []string
	for k, v := range s.Params {
		p = append(p, k+"="+v)
	}
	sort.Strings(p)
	if s.Await != nil {
		p = append(p, "await="+s.Await.String())
	}
	return fmt.Sprintf("%v %s %s %v %s", s.At, s.Nemesis, s.Action, s.Targets, strings.Join(p, " "))
}

// Runner runs the composed nemeses of one run. Its methods may be called
// from different goroutines; actions are serialised.
type Runner struct {
	cfg    Config
	faults map[string]Fault // the composed ones, by name
	all    map[string]Fault // every registered one, for Do and Heal
	reg    *Registry
	topo   Topology

	mu  sync.Mutex
	rng *rand.Rand // choices Do makes for scripted steps that leave them open
}

// New checks the names against the configuration's registry (Faults:
// the built-in faults unless Config.Registry says otherwise) and builds a
// Runner with its own instance of every registered fault.
func New(cfg Config) (*Runner, error) {
	cfg = cfg.WithDefaults()
	reg := cfg.Faults()
	r := &Runner{cfg: cfg, faults: map[string]Fault{}, all: reg.instances(), reg: reg, topo: cfg.Topology,
		rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x646f))}
	for _, n := range cfg.Names {
		f, ok := r.all[n]
		if !ok {
			return nil, reg.reg.Unknown(n)
		}
		r.faults[n] = f
	}
	if r.topo.empty() {
		r.topo = Topology{Nodes: []string{"n1"}, Clients: 1}
	}
	return r, nil
}

// Config is the runner's configuration, defaults filled in.
func (r *Runner) Config() Config { return r.cfg }

// Setup adopts the deployment's layout (unless Config.Topology was given)
// and lets each composed nemesis check and prepare what it needs: the
// layout and capabilities its Info declares (sut.Check: clock faults
// need nodes whose clocks can be set, failover a master with replicas),
// then its own (kill sets the persistence). A deployment that cannot
// support a nemesis is refused with an error wrapping
// sut.ErrUnsupported. It assumes a healthy deployment.
func (r *Runner) Setup(ctx context.Context, env Env) error {
	if env.Deployment == nil {
		return fmt.Errorf("nemesis setup: no deployment")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cfg.Topology.empty() {
		r.topo = TopologyOf(env.Deployment.Layout())
	}
	for _, name := range r.cfg.Names {
		f := r.faults[name]
		if err := sut.Check(env.Deployment, "the "+name+" nemesis", f.Info().Needs); err != nil {
			return fmt.Errorf("nemesis %s setup: %w", name, err)
		}
		if err := f.Setup(ctx, r.exec(env)); err != nil {
			return fmt.Errorf("nemesis %s setup: %w", name, err)
		}
	}
	return nil
}

// Schedule is the random schedule of the composed nemeses up to limit: a
// quiet Interval, a fault drawn from the seed (which nemesis, which targets,
// which parameters), its heal, and again. The same seed and topology always
// give the same schedule.
func (r *Runner) Schedule(limit time.Duration) []Step {
	var out []Step
	g := r.generator()
	for {
		s, ok := g()
		if !ok || s.At >= limit {
			return out
		}
		out = append(out, s)
	}
}

// generator returns the schedule one step at a time, forever (or nothing,
// with no nemesis).
func (r *Runner) generator() func() (Step, bool) {
	rng := rand.New(rand.NewPCG(r.cfg.Seed, r.cfg.Seed^0x6e656d65736973))
	var pending []Step
	t := time.Duration(0)
	return func() (Step, bool) {
		if len(r.cfg.Names) == 0 {
			return Step{}, false
		}
		for len(pending) == 0 {
			t += r.cfg.Interval
			name := r.cfg.Names[rng.IntN(len(r.cfg.Names))]
			steps := r.faults[name].Generate(rng, r.cfg, r.topo)
			last := t
			for _, s := range steps {
				s.Nemesis = name
				s.At += t
				if s.At > last {
					last = s.At
				}
				pending = append(pending, s)
			}
			t = last
		}
		s := pending[0]
		pending = pending[1:]
		return s, true
	}
}

// Run executes the schedule, each step at its time from now, until ctx is
// done; then it returns nil. A step that fails once it has begun acting is
// recorded as info (fail when there was nothing to act on) and the run goes
// on: a fault that could not be applied is not a reason to stop measuring.
// Run does not heal: call Heal.
func (r *Runner) Run(ctx context.Context, env Env) error {
	start := time.Now()
	g := r.generator()
	for {
		s, ok := g()
		if !ok {
			<-ctx.Done()
			return nil
		}
		wait := time.Until(start.Add(s.At))
		if wait > 0 {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(wait):
			}
		}
		if ctx.Err() != nil {
			return nil
		}
		_ = r.Do(ctx, env, s) // recorded as info by Do
	}
}

// Do performs one step (scenarios script these). Targets left empty are
// chosen as the nemesis's generator would.
func (r *Runner) Do(ctx context.Context, env Env, s Step) error {
	f, ok := r.all[s.Nemesis]
	if !ok {
		return r.reg.reg.Unknown(s.Nemesis)
	}
	// Wait outside the lock: Heal must not wait behind a step that waits
	// for a holder.
	if s.Await != nil {
		p, _, err := r.AwaitHolder(ctx, env, s)
		if err != nil {
			return err
		}
		s = s.WithHolder(p)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := f.Do(ctx, r.exec(env), s); err != nil {
		return fmt.Errorf("nemesis %s %s: %w", s.Nemesis, s.Action, err)
	}
	return nil
}

// Await waits for the holder step s awaits, if any (Do calls it first; a
// script calls it itself to know when the step really acted). When none
// comes before ctx ends the step must not happen at all: the error wraps
// ErrNotDone, and a scenario that requires the step to strike says that it
// never did.
func (r *Runner) Await(ctx context.Context, env Env, s Step) error {
	_, _, err := r.AwaitHolder(ctx, env, s)
	return err
}

// AwaitHolder is Await, returning the holder it found (its process and
// key; zero when the step awaits none), so that a run can record what
// each step waited for.
func (r *Runner) AwaitHolder(ctx context.Context, env Env, s Step) (history.Process, string, error) {
	if s.Await == nil {
		return 0, "", nil
	}
	if env.Clients == nil {
		return 0, "", fmt.Errorf("nemesis %s %s: await a holder: no clients to watch", s.Nemesis, s.Action)
	}
	if p, key, ok := env.Clients.AwaitHolder(ctx, *s.Await); ok {
		return p, key, nil
	}
	return 0, "", fmt.Errorf("nemesis %s %s: %w: %s never came before the run ended", s.Nemesis, s.Action, ErrNotDone, s.Await)
}

// Heal undoes every fault, whatever nemesis caused it: links healed,
// paused nodes resumed, killed nodes restarted, clocks reset, a replicated
// topology back to one master followed by every replica. Then it records
// final-heal. It uses its own bounded context, so it works after ctx is
// cancelled, and it is idempotent.
func (r *Runner) Heal(ctx context.Context, env Env) error {
	hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.HealTimeout)
	defer cancel()
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.exec(env)
	return e.record(history.FFinalHeal, mark, nil, func() (string, error) {
		// Every nemesis drops its own state (stops strobes, forgets
		// pending restarts) before the deployment-wide heal.
		for _, name := range r.known() {
			r.all[name].Reset()
		}
		if env.Deployment == nil {
			return "", fmt.Errorf("heal: no deployment")
		}
		own, oerr := healOwn(hctx, e, r.all, r.known())
		d, err := env.Deployment.Heal(hctx)
		switch {
		case own != "" && d == nothingToHeal:
			d = own
		case own != "":
			d = own + "; " + d
		}
		return d, errors.Join(oerr, err)
	})
}

// known are the names of every registered fault, sorted.
func (r *Runner) known() []string { return slices.Sorted(maps.Keys(r.all)) }

func (r *Runner) exec(env Env) *Exec {
	return &Exec{env: env, cfg: r.cfg, topo: r.topo, rng: r.rng}
}
