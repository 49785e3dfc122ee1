package nemesis

import (
	"fmt"
	"reflect"
	"slices"
	"sync"

	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/registry"
	"github.com/lockharness/lockharness/sut"
)

// Registry holds the faults a Runner can compose, by name: a
// registry.Registry of fault constructors, which lists them by name, and
// the collection of how their faults are drawn (FaultKinds). Builtin
// returns one with every fault of this package; users add their own with
// Register and give it to the Runner (Config.Registry).
type Registry struct {
	mu    sync.Mutex // serialises Register: its checks and its additions
	reg   *registry.Registry[entry]
	kinds []history.FaultKind // in the order their faults were registered
}

// entry is one registered fault: its Info, read once, and its constructor.
type entry struct {
	info Info
	mk   func() Fault
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{reg: registry.New[entry]("nemesis")} }

// Builtin returns a new registry holding every fault of this package.
func Builtin() *Registry {
	r := NewRegistry()
	for _, mk := range builtins() {
		if err := r.Register(mk); err != nil {
			panic(err) // a programming error in this package, caught by its tests
		}
	}
	return r
}

// builtins are the built-in faults, one file each, in the order the
// record lists how they are drawn (FaultKinds): the network, the clocks,
// the nodes' processes, failover, the data, then the clients.
func builtins() []func() Fault {
	return []func() Fault{
		func() Fault { return &partition{} },
		func() Fault { return &nativePartition{} },
		func() Fault { return &latency{} },
		func() Fault { return &clock{} },
		func() Fault { return &pause{} },
		func() Fault { return &kill{} },
		func() Fault { return &failover{} },
		func() Fault { return &loseReplies{} },
		func() Fault { return &memoryPressure{} },
		func() Fault { return &staleReplica{} },
		func() Fault { return &clientPause{} },
		func() Fault { return &renewerStall{} },
		func() Fault { return &clientCrash{} },
		func() Fault { return &killConnection{} },
		func() Fault { return &dataLoss{} },
		func() Fault { return &scriptFlush{} },
		func() Fault { return clusterFailover{} },
	}
}

// Register adds the fault that mk makes; it calls mk once to read the
// fault's Info. It refuses a nil mk or fault, an empty name, a name
// already registered (see registry.Registry.Register), and a fault kind
// without a name or drawn otherwise than the same kind of a fault
// registered before (two faults may put one kind in force, as partition
// and native-partition do, if they draw it alike).
func (r *Registry) Register(mk func() Fault) error {
	if mk == nil {
		return fmt.Errorf("register nemesis: %w", registry.ErrNil)
	}
	f := mk()
	if f == nil {
		return fmt.Errorf("register nemesis: %w (its constructor made none)", registry.ErrNil)
	}
	info := f.Info()
	r.mu.Lock()
	defer r.mu.Unlock()
	var add []history.FaultKind
	if info.Name != "" {
		var err error
		if add, err = r.newKinds(info); err != nil {
			return err
		}
	}
	if err := r.reg.Register(info.Name, entry{info: info, mk: mk}); err != nil {
		return err
	}
	r.kinds = append(r.kinds, add...)
	return nil
}

// newKinds are the kinds of info that no fault registered before draws,
// or an error for one drawn otherwise than before.
func (r *Registry) newKinds(info Info) ([]history.FaultKind, error) {
	known := map[string]history.FaultKind{}
	for _, k := range r.kinds {
		known[k.Name] = k
	}
	var add []history.FaultKind
	for _, k := range info.Kinds {
		if k.Name == "" {
			return nil, fmt.Errorf("register nemesis %q: a fault kind without a name", info.Name)
		}
		if old, ok := known[k.Name]; ok {
			if !reflect.DeepEqual(old, k) {
				return nil, fmt.Errorf("register nemesis %q: fault kind %q is drawn otherwise by a nemesis registered before", info.Name, k.Name)
			}
			continue
		}
		known[k.Name] = k
		add = append(add, k)
	}
	return add, nil
}

// Lookup returns the Info of the fault called name, or an *UnknownError
// listing the known ones.
func (r *Registry) Lookup(name string) (Info, error) {
	e, err := r.reg.Lookup(name)
	return e.info, err
}

// Names lists the registered faults' names, sorted.
func (r *Registry) Names() []string { return r.reg.Names() }

// All lists the Info of every registered fault, sorted by name.
func (r *Registry) All() []Info {
	es := r.reg.All()
	out := make([]Info, len(es))
	for i, e := range es {
		out[i] = e.info
	}
	return out
}

// NeedsOf is what the named faults need together.
func (r *Registry) NeedsOf(names []string) (sut.Needs, error) {
	var out sut.Needs
	for _, n := range names {
		info, err := r.Lookup(n)
		if err != nil {
			return sut.Needs{}, err
		}
		out = out.Merge(info.Needs)
	}
	return out, nil
}

// FaultKinds are the kinds of fault the registered faults put in force,
// each once, with how a report draws them (Info.Kinds), in the order the
// faults were registered. A run writes them into its record, so that its
// report draws every fault the run could inject, a user's too, without
// knowing the nemeses.
func (r *Registry) FaultKinds() []history.FaultKind {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]history.FaultKind, len(r.kinds))
	for i, k := range r.kinds {
		out[i] = cloneKind(k)
	}
	return out
}

// cloneKind is k with slices of its own, so that a caller may change them.
func cloneKind(k history.FaultKind) history.FaultKind {
	k.StartedBy = slices.Clone(k.StartedBy)
	k.EndedBy = slices.Clone(k.EndedBy)
	k.Marks = slices.Clone(k.Marks)
	return k
}

// instances returns a new instance of each registered fault, by name.
func (r *Registry) instances() map[string]Fault {
	es := r.reg.All()
	out := make(map[string]Fault, len(es))
	for _, e := range es {
		out[e.info.Name] = e.mk()
	}
	return out
}
