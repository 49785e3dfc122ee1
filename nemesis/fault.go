package nemesis

import (
	"context"
	"math/rand/v2"

	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/sut"
)

// Fault is one kind of nemesis: how it is drawn from the seed, how it
// acts, and what it leaves for the final heal. The built-in faults are
// Faults, one file each; a user adds their own to a Registry (Register)
// and gives the registry to the Runner (Config.Registry). A Fault value
// belongs to one Runner, which makes it from the registered constructor,
// and may keep state between its actions (a strobing clock, the node a
// failover promoted).
//
// The contract, in the order a run calls the methods:
//
//   - Info is called when the fault is registered and by every Runner; it
//     returns the same Info each time. Its Name is the fault's name, its
//     Needs what it needs of the deployment, its Strikes what in the
//     history shows that it took effect, and its Kinds how a report draws
//     each kind of fault its actions put in force (see Info).
//   - Generate draws one fault period: its steps, with At relative to the
//     start of the period; the last step ends the fault. It is a function
//     of its arguments only (same rng state, config and topology, same
//     steps) and never acts: the schedule is drawn before the run and
//     replayed from the seed.
//   - Setup is called once, for each fault the run composes
//     (Config.Names), before the workload starts. It may assume a healthy
//     deployment (nothing broken, every node up, every link whole) that
//     has what Info.Needs declares (the layout and the capabilities:
//     sut.Check refused the run otherwise). It prepares what the fault
//     needs (kill sets the persistence) and returns an error wrapping
//     sut.ErrUnsupported when the deployment cannot support it.
//   - Do performs one step and records it (Exec.Record): an invoke and a
//     completion as the nemesis process, whose structured fields (Event)
//     say which fault it puts in force and which it ends. A step may name
//     no targets: Do then chooses them as Generate would, with Exec.Rand.
//     Do is never called concurrently with another Do or the heal. It
//     returns an error wrapping ErrNotDone when it certainly did nothing
//     (nothing to act on), any other error when the fault may be half
//     applied. A scripted step may call Do on a registered fault the run
//     did not compose: Setup has then not been called.
//   - Reset is called for every fault of the Runner before the final
//     heal: it stops the fault's background work and drops its state.
//   - The final heal then restores the deployment: first the Heal of each
//     fault that is a Healer (in name order), then the deployment's own
//     (sut.Deployment.Heal: links whole, nodes resumed and restarted,
//     clocks reset, one master followed by every replica). A fault that
//     acts only through the seam's capabilities needs no Heal; one that
//     changes what the deployment's heal cannot see (a node's memory
//     limit) must undo it there. After the final heal the deployment is
//     healthy again (sut.Deployment.Healthy), whatever the fault did and
//     however its last step ended.
type Fault interface {
	Info() Info
	Generate(rng *rand.Rand, cfg Config, topo Topology) []Step
	Setup(ctx context.Context, x *Exec) error
	Do(ctx context.Context, x *Exec, s Step) error
	Reset()
}

// Healer is a Fault with state of its own on the nodes that the
// deployment's heal cannot see, which it undoes itself in the final heal:
// Heal returns what it did ("" for nothing) and must be idempotent. It
// runs with the final heal's own bounded context, after Reset.
type Healer interface {
	Heal(ctx context.Context, x *Exec) (string, error)
}

// Exec is what a fault's Setup, Do and Heal run with: the deployment, the
// history's recorder, the workload's clients, the run's configuration,
// the topology the schedule was drawn for, and a random source from the
// run's seed for the choices a step leaves open.
type Exec struct {
	env  Env
	cfg  Config
	topo Topology
	rng  *rand.Rand
}

// Deployment is the system under test; nil only when the Runner was given
// none.
func (x *Exec) Deployment() sut.Deployment { return x.env.Deployment }

// Recorder is the history's recorder; nil when actions are not recorded
// (Record then only acts).
func (x *Exec) Recorder() *history.Recorder { return x.env.Recorder }

// Clients is the workload's side of client faults; nil when the run gave
// none.
func (x *Exec) Clients() Clients { return x.env.Clients }

// Config is the Runner's configuration, defaults filled in.
func (x *Exec) Config() Config { return x.cfg }

// Topology is the layout the schedule is drawn for.
func (x *Exec) Topology() Topology { return x.topo }

// Rand is the source for the choices a step leaves open (which node when
// it names none), seeded from the run's seed so a run can be replayed.
// Use it only in Do, which the Runner serialises.
func (x *Exec) Rand() *rand.Rand { return x.rng }

// Nodes resolves node targets: node names, or the roles "master" and
// "replica" (the first replica) of a replicated deployment.
func (x *Exec) Nodes(targets []string) ([]sut.Node, error) { return x.nodes(targets) }

// Event is what a nemesis action means, in the history's structured
// fields: the kind of fault it puts in force and the kinds it ends. An
// action that does neither is a mark (a moment worth drawing, such as a
// wait for a promotion). The kinds are those of the fault's Info.Kinds, so
// that a report knows how to draw them.
type Event struct {
	Fault string   // the kind of fault the action puts in force
	Ends  []string // the kinds of fault it ends
}

// Record runs act between an invoke of f and its completion in the
// history, as the nemesis process, with targets and ev in the event's
// structured fields; act returns the completion's detail. The completion
// is ok when act succeeds, fail when its error wraps ErrNotDone, info
// otherwise (the fault may be half applied). Record returns act's error.
func (x *Exec) Record(f string, ev Event, targets []string, act func() (detail string, err error)) error {
	return x.record(f, event{fault: ev.Fault, ends: ev.Ends}, targets, act)
}
