package scenarios

import "github.com/lockharness/lockharness/locks"

// declaredKinds are the kinds of lock catalogued scenarios apply to
// beyond the exact kind of their own lock, by scenario name, each with
// only what the scenario's mechanism forces on any lock of the kind that
// reaches its exposure. A prediction of "invalid" is made only where no
// correct lock of the kind can escape it (a pause past the lease with no
// fencing token loses the next holder's update whatever the lock), so that
// a user's lock never "misses" an expectation that was the catalogued
// lock's own flaw; "valid" where the kind's defining property (a fencing
// token, an expiring lease) must save the checker, so that a lock whose
// property fails is reported. A scenario not named here applies to locks
// of its own lock's kind, with no prediction: its verdicts are reported
// and judged as a run's (Kind.Expect).
func declaredKinds() map[string][]Kind {
	lease := func(sys string, e Expect, lacks ...Property) Kind {
		return Kind{System: sys, Has: []Property{Lease}, Lacks: lacks, Expect: e}
	}
	fenced := func(sys string, e Expect, lacks ...Property) Kind {
		return Kind{System: sys, Has: []Property{Lease, Fencing}, Lacks: lacks, Expect: e}
	}
	// The storage loses the next holder's update when a paused holder
	// writes late without a token; with one it refuses the late write.
	stale, refused := Expect{Resource: invalid}, Expect{Resource: valid}
	return map[string][]Kind{
		// A holder paused 2.5s past its 1s lease: any single-node Redis
		// lease without fencing loses B's update; with fencing, nothing
		// is lost.
		"gc-pause-stale-write": {lease(locks.SystemRedis, stale, Fencing, Quorum)},
		"gc-pause-fenced":      {fenced(locks.SystemRedis, refused, Quorum)},
		// A holder that crashes leaves a lease that expires: the others
		// go on, whatever else the lock does.
		"set-nx-ex-crash": {lease(locks.SystemRedis, Expect{Liveness: valid}, Quorum)},
		// Whether a late release deletes the next holder's lock is the
		// lock's own (its owner check): no prediction.
		"wrong-release": {lease(locks.SystemRedis, Expect{}, Fencing, Quorum)},
		"token-release": {lease(locks.SystemRedis, Expect{}, Fencing, Quorum)},
		// A process paused past its etcd lease or ZooKeeper session.
		"etcd-lease-expiry-gc-pause": {lease(locks.SystemEtcd, stale, Fencing)},
		"etcd-fenced-lease-expiry":   {fenced(locks.SystemEtcd, refused)},
		"zk-session-expiry-gc-pause": {lease(locks.SystemZooKeeper, stale, Fencing)},
		"zk-fenced-session-expiry":   {fenced(locks.SystemZooKeeper, refused)},
	}
}
