package sut

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/lockharness/lockharness/registry"
)

// Backend starts a deployment of the system under test from cfg: local
// processes, containers, or a deployment the user runs. On error it
// leaves nothing running.
type Backend func(ctx context.Context, cfg Config) (Deployment, error)

// System is one system under test (Redis, etcd, …) and the backends that
// start it. A lock names the system it runs on (locks.Info.System); the
// run starts that system's Local backend, or for Redis the backend the
// user chose among Backends.
type System struct {
	// Name is the system's name, as a lock names it ("redis", "etcd").
	Name string
	// Local starts the system as processes on this host: every link a
	// proxy, every fault available. Required.
	Local Backend
	// Backends are the system's other backends by name ("docker",
	// "target"), each made from the argument the user gave it (an image,
	// a file describing a deployment).
	Backends map[string]BackendFactory
	// Validate refuses a Config (defaults filled in) for what only this
	// system can judge (a Redis Cluster's masters); nil judges nothing.
	// Check runs it before Config.Validate.
	Validate func(Config) error
	// Aftermath is what the system's own faults leave behind after the
	// final heal, for the run's recovery period (run.DerivedRecovery);
	// the zero value is nothing beyond a client timeout (Redis, MariaDB).
	Aftermath Aftermath
}

// Aftermath is how long a system may keep a correct lock's key busy after
// a heal that restarted a member or changed its leader, beyond what every
// system does (a command stuck until its client timeout), and the
// shortest lease it grants. Each is read from the system's own settings
// (its sut/<system> package), not measured.
type Aftermath struct {
	// Serve bounds how long, after a member restarts or loses its leader,
	// the group takes to serve again: an election.
	Serve time.Duration
	// LeaseExtension is how long, beyond a full lease term counted from
	// the new leader's election, a lease in force may live: a new leader
	// re-arms the leases (sessions) it restores, each for its whole term
	// again plus this.
	LeaseExtension time.Duration
	// MinLease is the shortest lease the system grants: a lock's shorter
	// TTL is raised to it, and its holder's key lives that long.
	MinLease time.Duration
}

// BackendFactory makes a Backend from the argument the user gave it ("" for
// the default).
type BackendFactory func(arg string) (Backend, error)

// Check refuses a Config (defaults filled in) the system cannot start:
// what the system judges (Validate), then what every backend does
// (Config.Validate).
func (s System) Check(cfg Config) error {
	if s.Validate != nil {
		if err := s.Validate(cfg); err != nil {
			return err
		}
	}
	return cfg.Validate()
}

// Backend is the system's backend called name, made from arg.
func (s System) Backend(name, arg string) (Backend, error) {
	f, ok := s.Backends[name]
	if !ok {
		return nil, &UnknownError{Kind: "backend of " + s.Name, Name: name, Known: slices.Sorted(maps.Keys(s.Backends))}
	}
	return f(arg)
}

// Registry holds the systems a harness can start, by name, in the order
// they were registered (a registry.Registry made InOrder: the first is the
// default, Redis in the built-in one). Package sut/systems builds the one
// with every built-in system.
type Registry struct {
	reg *registry.Registry[System]
}

// NewRegistry is an empty registry.
func NewRegistry() *Registry {
	return &Registry{reg: registry.New[System]("system", registry.InOrder())}
}

// Register adds s. It refuses a system without a name or a local backend,
// and a name already registered.
func (r *Registry) Register(s System) error {
	if s.Name != "" && s.Local == nil {
		return fmt.Errorf("register system %q: no local backend", s.Name)
	}
	return r.reg.Register(s.Name, s)
}

// Lookup returns the system registered as name, or an *UnknownError that
// lists the known ones.
func (r *Registry) Lookup(name string) (System, error) { return r.reg.Lookup(name) }

// Names are the registered systems' names, in the order they were
// registered.
func (r *Registry) Names() []string { return r.reg.Names() }

// All are the registered systems, in the order they were registered.
func (r *Registry) All() []System { return r.reg.All() }

// UnknownError is returned for a name nothing is registered under: the
// registries' one unknown-name error, of Kind "system" or "backend of
// redis".
type UnknownError = registry.UnknownError
