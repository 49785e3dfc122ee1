package run

import (
	"time"

	"github.com/lockharness/lockharness/nemesis"
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
//     clock ran ahead, which its server keeps that much longer;
//   - the leases in force at the heal, which run out within one TTL (the
//     checker itself calls a stuck key unknown, not unavailable, in a
//     recovery shorter than the longest lease in the history, or than
//     minLeaseTerm for locks without expiry);
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
	term := max(c.Workload.TTL, minLeaseTerm)
	grant := max(term, c.Workload.AcquireTimeout)
	return c.slowestSettle() + term + grant
}

// slowestSettle is the longest aftermath of the faults c uses (those it
// composes and those its script names).
func (c Config) slowestSettle() time.Duration {
	ncfg := c.Nemesis.WithDefaults()
	var out time.Duration
	for _, n := range c.nemesisNames() {
		out = max(out, settle(n, ncfg, clientTimeout(c)))
	}
	return out
}

// settle is how long, after the final heal, fault name's aftermath may
// still keep a correct lock's key busy or its clients failing; ct is the
// lock clients' command timeout. A fault this package does not know (a
// user's) is given the schedule's interval, the longest a fault lasts.
func settle(name string, n nemesis.Config, ct time.Duration) time.Duration {
	switch name {
	case "client-crash", "data-loss", "script-flush":
		// A crashed holder's lease runs out within the lease term; a
		// flushed key or script is gone at once.
		return 0
	case "partition", "native-partition", "latency", "lose-replies", "kill-connection",
		"kill", "pause", "failover", "cluster-failover", "stale-replica", "memory-pressure":
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
