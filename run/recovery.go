package run

import (
	"time"

	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/nemesis"
	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/sut/systems"
)

// The recovery period is where liveness is judged: after the final heal
// the workload goes on without faults, and a key none of whose acquires
// was granted there, some refused while nobody held it, is unavailable
// (checker/liveness.go). To judge that truly the period must outlast
// everything that may still keep a correct lock's key busy after the
// heal, and then leave room for a grant:
//
//   - the fault's aftermath (settle): what the final heal cannot undo at
//     once, such as a command stuck on a cut link until its timeout, a
//     client pause that outlasts the heal, or a lease a node set while its
//     clock ran ahead, which its server keeps that much longer; and, on a
//     system that elects a leader (sut.System.Aftermath), after a fault
//     that restarts a member or changes the leader, the election before
//     the group serves again and the lease extension of the new leader:
//     etcd's promoted leader and ZooKeeper's new one re-arm every lease
//     (session) they restore for its whole term, counted from the
//     election, so a killed holder's key lives a full term past it;
//   - the leases in force at the heal, which run out within one lease term
//     (the checker itself calls a stuck key unknown, not unavailable, in a
//     recovery shorter than the longest lease in the history, or than
//     minLeaseTerm for locks without expiry): the TTL, raised to the
//     system's shortest lease (etcd grants 2s for a TTL of 1s);
//   - one more lease term for the acquires after them to be granted, or,
//     when acquires wait, the acquire timeout if it is longer.
//
// A shorter period risks calling a correct lock unavailable (or, at best,
// unknown); a longer one only costs time. An explicit Recovery wins.

// minLeaseTerm is the shortest lease term the recovery counts, as the
// checker's minRecovery (1s) for locks whose leases never expire.
const minLeaseTerm = time.Second

// DerivedRecovery is the recovery period of c when Recovery is not given:
// the slowest settle of the faults c uses, plus one lease term for the
// leases in force at the final heal to run out, plus one more (or the
// acquire timeout, if longer) for the acquires after them to be granted.
// c's Workload and Nemesis defaults are applied first.
func (c Config) DerivedRecovery() time.Duration {
	c.Workload = c.Workload.WithDefaults()
	after := c.aftermath()
	term := max(c.Workload.TTL, after.MinLease, minLeaseTerm)
	grant := max(term, c.Workload.AcquireTimeout)
	return c.slowestSettle(after) + term + grant
}

// aftermath is what the faults leave behind on the system c's lock runs
// on (sut.System.Aftermath); nothing for a lock or system not found, which
// NewPlan refuses.
func (c Config) aftermath() sut.Aftermath {
	reg := c.Registry
	if reg == nil {
		reg = locks.Builtin()
	}
	info, err := reg.Lookup(c.Lock)
	if err != nil {
		return sut.Aftermath{}
	}
	s, err := systems.Builtin().Lookup(info.SystemName())
	if err != nil {
		return sut.Aftermath{}
	}
	return s.Aftermath
}

// slowestSettle is the longest aftermath of the faults c uses (those it
// composes and those its script names), on a system whose faults leave
// after behind.
func (c Config) slowestSettle(after sut.Aftermath) time.Duration {
	ncfg := c.Nemesis.WithDefaults()
	var out time.Duration
	for _, n := range c.nemesisNames() {
		out = max(out, settle(n, ncfg, clientTimeout(c), after))
	}
	return out
}

// settle is how long, after the final heal, fault name's aftermath may
// still keep a correct lock's key busy or its clients failing; ct is the
// lock clients' command timeout, after what the system leaves behind. A
// fault this package does not know (a user's) is given the schedule's
// interval, the longest a fault lasts.
func settle(name string, n nemesis.Config, ct time.Duration, after sut.Aftermath) time.Duration {
	switch name {
	case "client-crash", "data-loss", "script-flush":
		// A crashed holder's lease runs out within the lease term; a
		// flushed key or script is gone at once.
		return 0
	case "partition", "native-partition", "kill", "pause", "failover", "cluster-failover":
		// These restart a member or cut it off, which may change the
		// leader: besides a command stuck until the client timeout, the
		// group serves again only after an election, and the new leader
		// re-arms the leases in force, each for its whole term plus the
		// extension (the term is counted by DerivedRecovery). Both run at
		// once, from the heal: the longer counts.
		return max(ct, after.Serve+after.LeaseExtension)
	case "latency", "lose-replies", "kill-connection", "stale-replica", "memory-pressure":
		// The heal restores links and nodes and waits for them itself; a
		// command sent before it ends within the client timeout, and the
		// client reconnects at its next command.
		return ct
	case "client-pause", "renewer-stall":
		// A pause or a stall that began just before the heal goes on for
		// its length: the heal does not cut it.
		return n.ClientPause
	case "clock":
		return clockSettle(n)
	}
	return n.Interval
}

// clockSettle is how much longer than its lease a node may keep a key
// after its clock is reset: Redis (and every server that expires by its
// wall clock) stores a key's expiry as its clock's now plus the TTL, so a
// key set while the clock ran ahead by up to ClockBump lives that much
// longer once it is set back. A drifting clock (rate above 1) gets ahead
// by (rate-1) per second of the fault, which lasts up to Interval; the
// default rate is 2 or 0.5 at random.
func clockSettle(n nemesis.Config) time.Duration {
	rate := n.DriftRate
	if rate == 0 {
		rate = 2
	}
	drift := time.Duration(float64(n.Interval) * max(rate-1, 0))
	return max(n.ClockBump, drift)
}
