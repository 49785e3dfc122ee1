// Package sut is the seam between the harness and the system under test.
//
// A Deployment is a running system under test: its nodes, the network links
// that clients, replicas and sentinels reach them through, the storage node
// that holds the protected resource, the client nodes the locks are built
// over, and the heal, health check and teardown that bring it back to a
// known good state. It follows Jepsen's split of the database (DB: setup,
// teardown, kill, pause, primaries) from the network (Net: drop, slow,
// heal), and etcd robustness's failpoints, which ask Available() before
// they are injected: every fault a nemesis can cause is a Capability, and
// a nemesis asks for the capabilities it uses before the run starts, so
// that a deployment that cannot do it refuses with an *UnsupportedError
// naming what is missing and how to get it, instead of a run that silently
// tested nothing.
//
// Besides the interfaces, the seam holds what every backend and the
// harness share: the deployment request (Config, the topology, failover
// and persistence names), the client node a lock is built over
// (ClientNode, ClientOptions), a Backend, which starts a Deployment from
// a Config, and the System and Registry types that name the systems and
// their backends. It starts nothing itself: the backends live in the
// packages below it (sut/redis, sut/rediscluster, sut/etcd,
// sut/zookeeper, sut/mariadb: local processes built with the toolkit
// sut/local; sut/docker: containers; sut/target: a deployment the user
// runs), and sut/systems registers them all.
//
// Writing a backend: a Backend returns a Deployment (ClientNodes included)
// and leaves nothing running when it fails; the Deployment's nodes implement
// Node and, for each capability they claim, the interface behind it
// (Killer, Pauser, Clocked, Commander); a replicated deployment implements
// Replication, one whose persistence can change Persister, one that can
// cut its nodes off from each other in its own network NodePartitioner,
// one whose server can end a lock holder's session ConnectionKiller, and
// Hinter says how to get what it lacks. HealAll and CheckHealthy heal and
// check any deployment through these interfaces alone, so a backend's Heal
// and Healthy may be just them. A system of local server processes
// embeds sut/local's Group, which does most of it (start from sut/etcd);
// register the system in sut/systems.
//
// Names. Lock nodes are "n1"…"nN", sentinels "s1"…, client slots "c0"….
// A link is named "from->to" (LinkName): "c0->n1" is client 0's path to
// node 1, "n2->n1" replica n2's replication link to n1 (or, in a group of
// Peers, member n2's link to member n1), "sentinels->n1" the
// one path the sentinels and the replicas share to n1 when Sentinel runs.
package sut

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Deployment is a running system under test. Its methods may be called
// from several goroutines.
//
// Contract: after Up (whatever backend starts it) the deployment is
// healthy. Heal brings it back there from any fault a nemesis caused, and
// is idempotent; Healthy says whether it is there. Down tears everything
// down, on every exit path, and may be called more than once.
type Deployment interface {
	// Layout is the deployment's shape: node, sentinel and client names,
	// and how replicas and sentinels reach the nodes. It does not change
	// while the deployment runs.
	Layout() Layout
	// Capabilities are what the deployment as a whole can do to itself:
	// link faults, persistence changes, failover. What one node can
	// undergo is that node's Capabilities.
	Capabilities() Capabilities
	// Node returns a lock node or a sentinel by name.
	Node(name string) (Node, error)
	// Members are the lock nodes in name order, then the sentinels.
	Members() []Node
	// Network is the deployment's links.
	Network() Network
	// Endpoints are the lock nodes as client slot client reaches them:
	// through that client's own links, so one client can be cut off while
	// another is not.
	Endpoints(client int) []Endpoint
	// ClientNodes are the lock nodes as client slot client reaches them,
	// through that client's links (Addr), for the locks to be built over:
	// for Redis each with its own go-redis client, which the caller closes
	// (CloseClientNodes); a system other than Redis gives addresses only
	// (and o.Timeout as Timeout, AddressNodes).
	ClientNodes(client int, o ClientOptions) []ClientNode
	// StorageAddr is where the protected resource lives, as a client on
	// the harness's host reaches it; no fault ever reaches it. Whatever
	// the system, it is a Redis server.
	StorageAddr() string
	// Heal undoes every fault whatever caused it (links, paused and dead
	// nodes, clocks, replication roles) and says what it did, for the
	// history ("nothing to heal" when nothing was broken).
	Heal(ctx context.Context) (string, error)
	// Healthy reports what is still broken, or nil.
	Healthy(ctx context.Context) error
	// Down stops and removes everything the deployment started.
	Down() error
}

// Layout is the shape of a deployment, enough to draw a fault schedule
// before (or without) starting it.
type Layout struct {
	// Nodes are the lock nodes, "n1"….
	Nodes []string
	// Sentinels are the failure detectors of a replicated layout that
	// elects its master (Elected), "s1"….
	Sentinels []string
	// Clients is the number of client slots, c0….
	Clients int
	// Replicated: one master (Replication.Primary) with the other nodes
	// its replicas. Otherwise every node is an independent master.
	Replicated bool
	// Elected: a failure detector (Sentinel) elects a new master when the
	// master fails, and the replicas and sentinels reach node I through
	// one shared link, "sentinels->nI". Otherwise, in a replicated layout,
	// the harness moves the master and each node has its own link to each
	// other node, "nJ->nI".
	Elected bool
	// Peers: the nodes are the members of one group that talk among
	// themselves (a consensus group: etcd, ZooKeeper) and each node has
	// its own link to each other node, "nJ->nI", so one member can be cut
	// off from the others. Not Replicated: no master the harness moves.
	Peers bool
}

// Kind is what a node is for.
type Kind string

const (
	// KindLock is a node the lock under test writes to.
	KindLock Kind = "lock"
	// KindSentinel is a failure detector (a redis-sentinel).
	KindSentinel Kind = "sentinel"
)

// Node is one node of a deployment. What else it can do is in its
// Capabilities, each backed by one of the optional interfaces below; ask
// with As.
type Node interface {
	Name() string
	Kind() Kind
	Capabilities() Capabilities
}

// Killer is a node that can crash and restart (CanKill). Kill is a crash
// (kill -9, no clean shutdown); Start restarts it where it was, with
// whatever its persistence kept, and waits until it answers. Killing a
// dead node and starting a live one are no-ops.
type Killer interface {
	Kill(ctx context.Context) error
	Start(ctx context.Context) error
	Running() bool
}

// Pauser is a node whose process can be frozen and thawed (CanPause): it
// still accepts connections but answers nothing. Resuming a node that is
// not paused is a no-op.
type Pauser interface {
	Pause(ctx context.Context) error
	Resume(ctx context.Context) error
	Paused() bool
}

// Clocked is a node whose clock the harness sets (CanSetClock).
type Clocked interface {
	// Clock is the clock the node was last set to.
	Clock() Clock
	// SetClock makes the node's clock read real time + skew from now on,
	// running at rate (1: normal speed). It may take effect lazily:
	// ConfirmClock checks that it did.
	SetClock(skew time.Duration, rate float64) error
	// ConfirmClock polls the node's own clock until it reads what Clock
	// says it should (within tolerance plus the round trip), or timeout
	// passes, and returns the skew it observed. A clock fault counts only
	// once it is confirmed.
	ConfirmClock(ctx context.Context, tolerance, timeout time.Duration) (time.Duration, error)
}

// Commander is a node that takes an operator's command (CanCommand): sent
// over a direct connection that no fault reaches, as an administrator
// would ("FLUSHALL", "CONFIG SET maxmemory 1mb"), and answered as text.
// The command language is the system's; a fault that uses it belongs to
// that system.
type Commander interface {
	Command(ctx context.Context, args ...string) (string, error)
}

// Persister is a deployment whose lock nodes' persistence can be switched
// while they run (CanSetPersistence); it decides what a killed node
// remembers. Modes are the backend's ("none", "aof-everysec", …).
type Persister interface {
	Persistence() string
	SetPersistence(ctx context.Context, mode string) error
}

// Replication is a replicated deployment's master and replicas (Jepsen's
// Primary): CanPromote to move the master by hand, CanElect when a
// failure detector elects one.
type Replication interface {
	// Primary is the node the harness takes as master now.
	Primary() string
	// SetPrimary records node as the master and moves the clients that
	// follow the harness's master to it. It sends nothing to the nodes.
	SetPrimary(node string) error
	// Promote makes node a master (as an operator: never through a
	// faulted link).
	Promote(ctx context.Context, node string) error
	// Follow makes node a replica of primary, through its replication link.
	Follow(ctx context.Context, node, primary string) error
	// ReplicationLink is the link replica follows primary through.
	ReplicationLink(replica, primary string) (Link, error)
	// Role is node's replication role as the node itself reports it.
	Role(ctx context.Context, node string) (RoleInfo, error)
	// Elected is the master the failure detector names (the majority of
	// the sentinels that answered), with CanElect.
	Elected(ctx context.Context) (string, error)
}

// RoleInfo is a node's replication state as it reports it.
type RoleInfo struct {
	Role       string // "master" or "slave"
	MasterAddr string // a replica's master, as the replica dials it
	LinkUp     bool   // a replica's link to its master is up
	Replicas   int    // a master's connected replicas
}

// Network is a deployment's links.
type Network interface {
	// Links lists every link.
	Links() []Link
	// Link returns the link from → to.
	Link(from, to string) (Link, error)
}

// Link is one directed network path from a place (a client, a replica,
// the sentinels) to a node. Cut and Slow act in both directions; each has
// its own undo that removes what it added and nothing else, and Heal
// removes every fault.
type Link interface {
	Name() string // "c0->n1"
	From() string // "c0"
	To() string   // "n1"
	// Addr is the address to dial to use this link, as seen from From: a
	// client on the harness's host and a replica inside a container may
	// need different addresses for the same node.
	Addr() string
	// Cut stops all traffic (CanCutLinks): bytes are held, never
	// delivered, as a partition looks to TCP. Uncut closes the stalled
	// connections.
	Cut() error
	Uncut(ctx context.Context) error
	IsCut() bool
	// Slow delays every byte by latency ± jitter (CanSlowLinks).
	Slow(latency, jitter time.Duration) error
	Unslow(ctx context.Context) error
	// Heal removes every fault from the link.
	Heal(ctx context.Context)
	// Faults names the faults on the link; none means it is healthy.
	Faults() []string
}

// ReplyDropper is a link that can deliver what From sends and hold back
// every reply (CanDropReplies): commands run, their answers never arrive.
// Uncut undoes it and closes the stalled connections; IsCut reports it.
type ReplyDropper interface {
	DropReplies() error
}

// NodePartitioner is a deployment that cuts its members (lock nodes and
// sentinels) off from each other in its own network (CanPartitionNodes),
// the way Jepsen partitions nodes: packets between two cut members are
// dropped by the members' own kernels (iptables in a container's network
// namespace), whichever way they travel, directly or through the harness's
// proxies. It is a different fault from cutting a Link: a proxy holds the
// bytes of a connection it accepted, a dropped packet is never answered,
// not even a new connection's SYN; and it reaches paths no proxy fronts
// (a compose deployment's replicas dial their master directly). Clients on
// the harness's host, and the harness's own operator connections, are not
// cut: a client's path is its Link.
type NodePartitioner interface {
	// PartitionNodes cuts each pair of members off from each other, in
	// both directions, on top of what is cut already.
	PartitionNodes(ctx context.Context, pairs [][2]string) error
	// HealNodes removes every cut PartitionNodes made.
	HealNodes(ctx context.Context) error
	// PartitionedNodes are the members cut off from some other member now,
	// in name order; none when the network is whole.
	PartitionedNodes() []string
}

// ConnectionKiller is a deployment whose server can end the session that
// holds a lock (CanKillConnections), as an operator's KILL CONNECTION (or
// a server's idle timeout) does: the server rolls back the session's
// transaction and frees every lock it held at once, and the client learns
// it only at its next command. It is for systems whose locks live as long
// as a connection (a database row held FOR UPDATE, a named lock), not a
// lease.
type ConnectionKiller interface {
	// KillHolder ends the session that holds key's lock; it fails with an
	// error wrapping ErrNoHolder when no session holds it.
	KillHolder(ctx context.Context, key string) (KilledConnection, error)
}

// KilledConnection is the session KillHolder ended.
type KilledConnection struct {
	ID   int64  // the server's connection id
	From string // the client address the server saw (a link's proxy)
	Key  string // the lock it held
}

// ErrNoHolder is wrapped when a fault that strikes a lock's holder finds
// nobody holding it: the fault did not happen.
var ErrNoHolder = errors.New("no session holds the lock")

// Endpoint is one lock node as one client reaches it.
type Endpoint struct {
	Node string // node name, "n1"…
	Addr string // host:port to dial: the client's own link to that node
}

// Capability is one thing a deployment, or one of its nodes, can undergo.
type Capability string

// Node capabilities.
const (
	// CanKill: the node crashes and restarts (Killer).
	CanKill Capability = "kill"
	// CanPause: the node's process freezes and thaws (Pauser).
	CanPause Capability = "pause"
	// CanSetClock: the node's clock can be set, jumped and made to drift
	// (Clocked).
	CanSetClock Capability = "clock"
	// CanCommand: the node takes an operator's command (Commander).
	CanCommand Capability = "command"
)

// Deployment capabilities.
const (
	// CanCutLinks: links can be cut (Link.Cut).
	CanCutLinks Capability = "partition"
	// CanSlowLinks: links can be slowed (Link.Slow).
	CanSlowLinks Capability = "latency"
	// CanDropReplies: links can deliver requests and drop the replies
	// (ReplyDropper).
	CanDropReplies Capability = "drop-replies"
	// CanSetPersistence: the lock nodes' persistence can change while
	// they run (Persister).
	CanSetPersistence Capability = "persistence"
	// CanPromote: the harness can promote a replica and move the clients
	// (Replication).
	CanPromote Capability = "promote"
	// CanElect: a failure detector elects a master (Replication.Elected).
	CanElect Capability = "elect"
	// CanPartitionNodes: nodes can be cut off from each other inside the
	// deployment's own network, beneath the harness's proxies
	// (NodePartitioner).
	CanPartitionNodes Capability = "native-partition"
	// CanKillConnections: the server can end the session that holds a
	// lock (ConnectionKiller).
	CanKillConnections Capability = "kill-connection"
)

var capabilityWords = map[Capability]string{
	CanKill:            "crashing and restarting nodes",
	CanPause:           "pausing nodes",
	CanSetClock:        "setting nodes' clocks",
	CanCommand:         "sending nodes an operator's command",
	CanCutLinks:        "cutting network links",
	CanSlowLinks:       "slowing network links",
	CanDropReplies:     "dropping the replies on network links",
	CanSetPersistence:  "changing the nodes' persistence",
	CanPromote:         "promoting a replica",
	CanElect:           "electing a master with a failure detector",
	CanPartitionNodes:  "cutting nodes off from each other in the deployment's own network",
	CanFailoverShard:   "failing over a Redis Cluster master to its replica",
	CanMoveSlots:       "moving hash slots between Redis Cluster masters",
	CanKillConnections: "ending the session that holds a lock",
}

// String says what the capability lets a fault do ("pausing nodes").
func (c Capability) String() string {
	if w, ok := capabilityWords[c]; ok {
		return w
	}
	return string(c)
}

// Capabilities is a set of capabilities.
type Capabilities []Capability

// Has reports whether c is in the set.
func (cs Capabilities) Has(c Capability) bool { return slices.Contains(cs, c) }

// ErrUnsupported is wrapped by every UnsupportedError.
var ErrUnsupported = errors.New("not supported by this deployment")

// UnsupportedError says that a fault needs a capability the deployment, or
// one of its nodes, does not have, and how to get it.
type UnsupportedError struct {
	// Capability is what is missing.
	Capability Capability
	// Target is the node that lacks it, or "" for the deployment.
	Target string
	// Need is who asked ("the clock nemesis"), when known.
	Need string
	// Hint says how to get it ("start the nodes under libfaketime").
	Hint string
}

func (e *UnsupportedError) Error() string {
	who := "this deployment"
	if e.Target != "" {
		who = "node " + e.Target
	}
	var msg string
	if e.Need != "" {
		msg = fmt.Sprintf("%s needs %s (%s), which %s does not support", e.Need, e.Capability, string(e.Capability), who)
	} else {
		msg = fmt.Sprintf("%s does not support %s (%s)", who, e.Capability, string(e.Capability))
	}
	if e.Hint != "" {
		msg += ": " + e.Hint
	}
	return msg
}

// Unwrap makes errors.Is(err, ErrUnsupported) true.
func (e *UnsupportedError) Unwrap() error { return ErrUnsupported }

// Hinter is implemented by a deployment that can say how to get a
// capability it lacks ("set sut.Config.Faketime"), for the message of
// an UnsupportedError.
type Hinter interface {
	Hint(c Capability) string
}

// As returns node n's implementation of T, the interface behind
// capability c, or an *UnsupportedError when n lacks c.
func As[T any](n Node, c Capability) (T, error) {
	var zero T
	if n.Capabilities().Has(c) {
		if t, ok := n.(T); ok {
			return t, nil
		}
	}
	return zero, &UnsupportedError{Capability: c, Target: n.Name()}
}

// Needs is what a fault needs of a deployment: a layout and capabilities.
// Node capabilities are needed of every lock node.
type Needs struct {
	// Replicated: a master with replicas.
	Replicated bool
	// Capabilities the fault uses.
	Capabilities []Capability
}

// Merge is the needs of both.
func (n Needs) Merge(o Needs) Needs {
	out := Needs{Replicated: n.Replicated || o.Replicated}
	for _, c := range append(append([]Capability(nil), n.Capabilities...), o.Capabilities...) {
		if !slices.Contains(out.Capabilities, c) {
			out.Capabilities = append(out.Capabilities, c)
		}
	}
	return out
}

// Has reports whether c is among the needed capabilities.
func (n Needs) Has(c Capability) bool { return slices.Contains(n.Capabilities, c) }

// nodeCapabilities are the capabilities asked of nodes, not of the
// deployment.
var nodeCapabilities = []Capability{CanKill, CanPause, CanSetClock, CanCommand}

// Check refuses, with an *UnsupportedError, needs the deployment does not
// meet: a layout it does not have, a deployment capability it lacks, or a
// node capability one of its lock nodes lacks. who names the asker for
// the message ("the clock nemesis").
func Check(d Deployment, who string, needs Needs) error {
	hint := func(c Capability) string {
		if h, ok := d.(Hinter); ok {
			return h.Hint(c)
		}
		return ""
	}
	if needs.Replicated && !d.Layout().Replicated {
		return fmt.Errorf("%s needs a master with replicas, and this deployment has independent nodes: %w", orDefault(who, "this fault"), ErrUnsupported)
	}
	for _, c := range needs.Capabilities {
		if slices.Contains(nodeCapabilities, c) {
			for _, n := range d.Members() {
				if n.Kind() == KindLock && !n.Capabilities().Has(c) {
					return &UnsupportedError{Capability: c, Target: n.Name(), Need: who, Hint: hint(c)}
				}
			}
			continue
		}
		if !d.Capabilities().Has(c) {
			return &UnsupportedError{Capability: c, Need: who, Hint: hint(c)}
		}
	}
	return nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// LinkName is the name of the link from → to.
func LinkName(from, to string) string { return from + "->" + to }

// SplitLinkName is the inverse of LinkName.
func SplitLinkName(name string) (from, to string, ok bool) { return strings.Cut(name, "->") }

// ClientName is the name of client slot i as a link's From: "c0".
func ClientName(i int) string { return fmt.Sprintf("c%d", i) }

// SentinelsFrom is the From of the links the sentinels (and, with
// Sentinel, the replicas) share: "sentinels->n1".
const SentinelsFrom = "sentinels"

// Faulted reports whether link l has any fault on it.
func Faulted(l Link) bool { return len(l.Faults()) > 0 }
