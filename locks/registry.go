package locks

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/lockharness/lockharness/registry"
	"github.com/lockharness/lockharness/sut"
)

// Options configures a lock instance. The zero value is completed by
// WithDefaults.
type Options struct {
	// TTL is the lease length for locks that expire.
	TTL time.Duration
	// Rand is the source of tokens and retry jitter, seeded from the run's
	// seed and the client number so a run can be replayed.
	Rand *rand.Rand
	// Failpoint, when set, is called at each named failpoint of the lock
	// (see the Failpoint… constants). A non-nil error aborts the operation
	// with that error, as if the client crashed there; the hook may also
	// block to pause the client. A lock's background renewer (a watchdog)
	// that reaches a failpoint passes a context marked by RenewerContext:
	// the hook then pauses that thread, not the client.
	Failpoint func(ctx context.Context, name string) error
	// RetryDelay is the upper bound of the random delay between attempts of
	// a blocking acquire. Default 10ms.
	RetryDelay time.Duration
	// OnRenew, when set, is told about every renewal a lock makes on its own
	// in the background (the reentrant lock's watchdog), so the workload can
	// record it in the history as a renew invoke and its completion. It is
	// called right before the renewal is sent (record the invoke there) and
	// returns the function to call with the result: the lease as extended
	// (ValidUntil = instant before sending + TTL) and nil, or the lease as it
	// was and the error (classify it with Outcome). Renewals a caller makes
	// through Renewer.Renew are not reported here. Both functions run on the
	// lock's background goroutine, concurrently with the client's own calls.
	OnRenew func(key string) func(Lease, error)
	// Dir is a directory the lock may write files into: the run's
	// directory. A lock whose client is a process of its own (an adapter,
	// package locks/adapter) keeps its program and its log there, so a run
	// records the exact client it tested. Empty: the lock chooses a
	// temporary directory.
	Dir string
	// Client is the process number of the client the instance belongs to
	// (a restarted client has a new one), for names in logs.
	Client int64
}

// WithDefaults fills in unset fields.
func (o Options) WithDefaults() Options {
	if o.TTL == 0 {
		o.TTL = time.Second
	}
	if o.Rand == nil {
		o.Rand = rand.New(rand.NewPCG(1, 1))
	}
	if o.RetryDelay == 0 {
		o.RetryDelay = 10 * time.Millisecond
	}
	return o
}

// renewerKey marks a context as a background renewer's (RenewerContext).
type renewerKey struct{}

// RenewerContext marks ctx as the context of a lock's background renewer
// (a watchdog thread), for the failpoints it reaches (Options.Failpoint):
// a pause there is a pause of that thread, and the harness records it so,
// not as one of the client, which goes on meanwhile.
func RenewerContext(ctx context.Context) context.Context {
	return context.WithValue(ctx, renewerKey{}, true)
}

// OnRenewer reports whether ctx is a background renewer's (RenewerContext).
func OnRenewer(ctx context.Context) bool {
	on, _ := ctx.Value(renewerKey{}).(bool)
	return on
}

// failpoint calls the hook if one is set.
func (o Options) failpoint(ctx context.Context, name string) error {
	if o.Failpoint == nil {
		return nil
	}
	return o.Failpoint(ctx, name)
}

// Factory builds one client's instance of a lock over that client's view of
// the nodes.
type Factory func(nodes []sut.ClientNode, opts Options) (Lock, error)

// Systems a lock can be for (Info.System). The run starts a deployment of
// the lock's system; the protected resource stays on a Redis storage node
// whatever the system, so the resource and fencing checks are the same.
const (
	SystemRedis     = "redis"
	SystemEtcd      = "etcd"
	SystemZooKeeper = "zookeeper"
	SystemMariaDB   = "mariadb"
)

// Info describes a registered lock.
type Info struct {
	Name        string
	Description string
	// System is the system under test the lock runs on: "" or SystemRedis
	// for Redis (the nodes then carry go-redis clients), or another one
	// (SystemEtcd, …), whose lock dials its own client at the nodes'
	// addresses. See SystemName.
	System string
	// MinNodes and MaxNodes bound how many independent nodes the lock uses
	// (MaxNodes 0 = no upper bound).
	MinNodes, MaxNodes int
	// Fenced is true when leases carry a fencing token.
	Fenced bool
	// NoLease is true for a lock without a TTL, held as long as its
	// holder's session lasts (a database row lock): the workload's TTL
	// means nothing to it, so faults are not measured against it.
	NoLease bool
	// NeedsReplicas is true for a lock that only works against a master
	// with replicas (WAIT): the harness runs it on a replicated topology.
	NeedsReplicas bool
	// Failpoints lists the failpoint names the lock honours.
	Failpoints []string
	// Drift, when set, is the clock drift the lock allows for at a TTL
	// (Redlock's RedlockDrift): its validity is the TTL less the time its
	// acquire took less this, and the report measures clock faults
	// against it. Nil for a lock that allows for none.
	Drift func(ttl time.Duration) time.Duration
	// Cluster is true for a lock that keeps all it writes under its one
	// key, so that it runs on a Redis Cluster through one ClusterClient
	// (see RunsOnCluster for the built-in ones).
	Cluster bool
	// CheckOptions, when set, says what the lock refuses of its options
	// (set-nx-ex: a TTL that is not whole seconds), so that a run refuses it
	// before anything starts. It is asked instead of building an instance:
	// a factory may dial its nodes or start a process.
	CheckOptions func(Options) error
	New          Factory
}

// SystemName is the lock's system, SystemRedis when none is named.
func (i Info) SystemName() string {
	if i.System == "" {
		return SystemRedis
	}
	return i.System
}

// Registry maps lock names to factories. Builtin returns one with every lock
// of this package; users add their own with Register. It is a
// registry.Registry of Info: it lists the locks by name.
type Registry struct {
	reg *registry.Registry[Info]
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{reg: registry.New[Info]("lock", registry.KnownAs("known locks"))}
}

// Register adds a lock. It rejects an empty name, a missing factory and a
// name that is already taken (see registry.Registry.Register). A MinNodes
// of 0 is taken as 1.
func (r *Registry) Register(info Info) error {
	if info.Name != "" && info.New == nil {
		return fmt.Errorf("register lock %q: no factory", info.Name)
	}
	if info.MinNodes == 0 {
		info.MinNodes = 1
	}
	return r.reg.Register(info.Name, info)
}

// UnknownError is the error of a lookup of a lock that is not registered:
// the registries' one unknown-name error, of Kind "lock".
type UnknownError = registry.UnknownError

// Lookup returns the lock registered as name, or an *UnknownError listing
// the known locks.
func (r *Registry) Lookup(name string) (Info, error) { return r.reg.Lookup(name) }

// Names lists the registered names, sorted.
func (r *Registry) Names() []string { return r.reg.Names() }

// All lists every registered lock, sorted by name.
func (r *Registry) All() []Info { return r.reg.All() }

// Builtin returns a new registry holding every lock of this package.
func Builtin() *Registry {
	r := NewRegistry()
	for _, info := range builtins() {
		if err := r.Register(info); err != nil {
			panic(err) // a programming error in this package, caught by its tests
		}
	}
	return r
}

// newToken returns a random 128-bit token in hex from the lock's source.
func newToken(rng *rand.Rand) string {
	return fmt.Sprintf("%016x%016x", rng.Uint64(), rng.Uint64())
}

// retry runs try until it succeeds, fails with something other than
// ErrNotAcquired, or o.Wait has passed, or o.Stop is closed; between
// attempts it sleeps a random delay up to max. With wait 0 it tries once.
func retry(ctx context.Context, o AcquireOptions, max time.Duration, rng *rand.Rand, try func() (Lease, error)) (Lease, error) {
	wait := o.Wait
	deadline := time.Now().Add(wait)
	for {
		lease, err := try()
		if err == nil || wait <= 0 || !errors.Is(err, ErrNotAcquired) {
			return lease, err
		}
		d := time.Duration(rng.Int64N(int64(max))) + time.Millisecond
		if time.Now().Add(d).After(deadline) {
			return lease, err
		}
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return lease, err
		case <-o.Stop:
			t.Stop()
			return lease, err
		case <-t.C:
		}
	}
}
