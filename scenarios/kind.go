package scenarios

import (
	"fmt"
	"slices"
	"strings"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/locks"
)

// Property is something a lock is or does that a scenario's mechanism
// depends on: whether a pause can outlive its lease, whether a fencing
// token makes the storage refuse a late write, and so on. Each one is read
// from the lock's registration (locks.Info), so that a lock of a user's
// registry has them as a built-in one does.
type Property string

// Properties a scenario may need of its lock.
const (
	// Lease: the hold ends by itself one TTL after the grant unless it is
	// renewed (not locks.Info.NoLease), so a pause can outlive it.
	Lease Property = "expiring lease"
	// Fencing: every grant carries a fencing token the storage checks
	// (locks.Info.Fenced).
	Fencing Property = "fencing"
	// Quorum: a Redis lock over several independent masters, granted by
	// a majority (locks.Info.MaxNodes other than 1: Redlock's kind).
	Quorum Property = "quorum"
	// Session: the hold lasts as long as the client's session with the
	// server (a database connection; an etcd lease or a ZooKeeper session
	// the client keeps alive), and the server ends it with the session.
	Session Property = "session"
)

// properties are every property, in the order they are named.
var properties = []Property{Lease, Fencing, Quorum, Session}

// PropertiesOf are the properties lock info has.
func PropertiesOf(info locks.Info) []Property {
	var out []Property
	for _, p := range properties {
		if has(info, p) {
			out = append(out, p)
		}
	}
	return out
}

// has reports whether the lock has property p.
func has(info locks.Info, p Property) bool {
	sys := info.SystemName()
	switch p {
	case Lease:
		return !info.NoLease
	case Fencing:
		return info.Fenced
	case Quorum:
		return sys == locks.SystemRedis && info.MaxNodes != 1
	case Session:
		return info.NoLease || sys == locks.SystemEtcd || sys == locks.SystemZooKeeper
	}
	return false
}

// Kind is a kind of lock a scenario applies to: its system, the
// properties it must have and those it must not, and what the scenario's
// mechanism predicts of every lock of that kind.
type Kind struct {
	// System is the lock's system (locks.SystemRedis, …): the scenario's
	// deployment and faults are that system's.
	System string
	Has    []Property
	Lacks  []Property
	// Expect is the verdict the mechanism predicts, checker by checker,
	// for any lock of this kind that reaches the scenario's exposure; a
	// checker left empty has no prediction: its verdict is reported and
	// judged as a run's is (an invalid one is a finding). Only what the
	// mechanism forces is declared, so that a lock of the kind never
	// "misses" an expectation that was its own lock's alone.
	Expect Expect
}

// Fits reports whether info is a lock of kind k.
func (k Kind) Fits(info locks.Info) bool {
	if info.SystemName() != k.System {
		return false
	}
	for _, p := range k.Has {
		if !has(info, p) {
			return false
		}
	}
	for _, p := range k.Lacks {
		if has(info, p) {
			return false
		}
	}
	return true
}

// String names the kind: "redis lock with expiring lease, without fencing".
func (k Kind) String() string {
	s := k.System + " lock"
	if len(k.Has) > 0 {
		s += " with " + joinProps(k.Has, " and ")
	}
	if len(k.Lacks) > 0 {
		if len(k.Has) > 0 {
			s += ","
		}
		s += " without " + joinProps(k.Lacks, " or ")
	}
	return s
}

// joinProps names ps: "a, b and c" (or "a, b or c").
func joinProps(ps []Property, last string) string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = string(p)
	}
	if len(out) < 2 {
		return strings.Join(out, "")
	}
	return strings.Join(out[:len(out)-1], ", ") + last + out[len(out)-1]
}

// kindOf is the kind of lock info exactly: its system, every property it
// has and every one it lacks; no prediction.
func kindOf(info locks.Info) Kind {
	k := Kind{System: info.SystemName()}
	for _, p := range properties {
		if p == Quorum && k.System != locks.SystemRedis {
			continue // a property of Redis locks alone
		}
		if has(info, p) {
			k.Has = append(k.Has, p)
		} else {
			k.Lacks = append(k.Lacks, p)
		}
	}
	return k
}

// ownRegistry is the registry of the scenario's own lock.
func (s Scenario) ownRegistry() *locks.Registry {
	if s.Run.Registry != nil {
		return s.Run.Registry
	}
	return locks.Builtin()
}

// AppliesTo is the kinds of lock the scenario applies to: those it
// declares, or else the kind of its own lock exactly (its system, and
// every property as its lock has it or lacks it), with no prediction.
func (s Scenario) AppliesTo() ([]Kind, error) {
	if len(s.Kinds) > 0 {
		return s.Kinds, nil
	}
	info, err := s.ownRegistry().Lookup(s.Lock)
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", s.Name, err)
	}
	return []Kind{kindOf(info)}, nil
}

// failpoints are the failpoints the scenario's script arms: its lock must
// honour each.
func (s Scenario) failpoints() []string {
	var out []string
	for _, st := range s.Run.Script {
		if fp := st.Params["failpoint"]; fp != "" && !slices.Contains(out, fp) {
			out = append(out, fp)
		}
	}
	return append(out, s.Run.Nemesis.Failpoints...)
}

// KindError is the error of a scenario asked to run a lock it does not
// apply to: it names the kinds the scenario needs and the locks of the
// registry that fit.
type KindError struct {
	Scenario, Lock string
	Kinds          []Kind
	Failpoints     []string
	Fit            []string
}

func (e *KindError) Error() string {
	kinds := make([]string, len(e.Kinds))
	for i, k := range e.Kinds {
		kinds[i] = k.String()
	}
	need := strings.Join(kinds, "; or ")
	if len(e.Failpoints) > 0 {
		need += ", honouring failpoints " + strings.Join(e.Failpoints, ", ")
	}
	fit := "none of the registered locks"
	if len(e.Fit) > 0 {
		fit = strings.Join(e.Fit, ", ")
	}
	return fmt.Sprintf("scenario %s does not apply to lock %s: it needs a %s; locks that fit: %s", e.Scenario, e.Lock, need, fit)
}

// kindFor is the first kind the scenario applies to that info is, and
// whether the lock honours the failpoints the script arms.
func (s Scenario) kindFor(info locks.Info, kinds []Kind) (Kind, bool) {
	for _, fp := range s.failpoints() {
		if !slices.Contains(info.Failpoints, fp) {
			return Kind{}, false
		}
	}
	for _, k := range kinds {
		if k.Fits(info) {
			return k, true
		}
	}
	return Kind{}, false
}

// WithLock is the scenario run with lock name of registry reg instead of
// its own: same script, workload and exposure, the lock's registry, and
// the expectation the kind it fits declares (Kind.Expect; the scenario's
// own Expect holds for its own lock alone). A lock of no kind the
// scenario applies to is a *KindError. Its own lock gives the scenario
// back as it is, expectation and all (the catalogue's lock of that name,
// whatever reg holds under it).
func (s Scenario) WithLock(name string, reg *locks.Registry) (Scenario, error) {
	if name == s.Lock {
		return s, nil // its own lock, as catalogued
	}
	info, err := reg.Lookup(name)
	if err != nil {
		return s, err
	}
	kinds, err := s.AppliesTo()
	if err != nil {
		return s, err
	}
	k, ok := s.kindFor(info, kinds)
	if !ok {
		e := &KindError{Scenario: s.Name, Lock: name, Kinds: kinds, Failpoints: s.failpoints()}
		for _, l := range reg.All() {
			if _, fits := s.kindFor(l, kinds); fits {
				e.Fit = append(e.Fit, l.Name)
			}
		}
		return s, e
	}
	s.Instead, s.Lock, s.Run.Registry, s.Expect, s.Kinds = s.Lock, name, reg, k.Expect, []Kind{k}
	s.Run.Command = "harness scenario run " + s.Name + " --lock " + name
	return s, nil
}

// Judged is the verdict a checker's observed verdict is held to: the
// expectation where the scenario declares one, else valid (a checker
// without a prediction is judged as a run is).
func (e Expect) Judged(name string) checker.Verdict {
	if v := e.Of(name); v != "" {
		return v
	}
	return checker.Valid
}
