package scenarios

import (
	"fmt"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/nemesis"
	lockrun "github.com/lockharness/lockharness/run"
	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/workloads"
)

// How the schedules are made deterministic. The workload and the script
// start together at the beginning of the run phase, and the first acquire
// is granted within milliseconds, so every critical section starts at a
// known multiple of Hold: the first holder ("A") works from 0 to Hold,
// the next from Hold to 2·Hold, and so on. A client fault ("pause the
// holder", "crash the holder") is scripted in the middle of a known
// section, where there is exactly one holder, and takes effect at that
// holder's safe point (between its read and its write of the resource).
// Network, clock and process faults are scripted hundreds of milliseconds
// away from any section boundary. The other client ("B") waits for the
// lock with an acquire timeout, so it takes the lock the moment it is
// free. Only two or three clients and one key, seeds fixed.

const ms = time.Millisecond

func at(d time.Duration, nem, action string, targets []string, params map[string]string) nemesis.Step {
	return nemesis.Step{At: d, Nemesis: nem, Action: action, Targets: targets, Params: params}
}

// holderPause pauses the client holding the lock, at its safe point, for d.
func holderPause(when, d time.Duration) nemesis.Step {
	return at(when, "client-pause", "holder", nil, map[string]string{"duration": d.String()})
}

func holderCrash(when time.Duration) nemesis.Step {
	return at(when, "client-crash", "holder", nil, nil)
}

func failpointPause(when time.Duration, fp string, d time.Duration) nemesis.Step {
	return at(when, "client-pause", "failpoint", nil, map[string]string{"failpoint": fp, "duration": d.String()})
}

func failpointCrash(when time.Duration, fp string) nemesis.Step {
	return at(when, "client-crash", "failpoint", nil, map[string]string{"failpoint": fp})
}

// clientSplit is Kleppmann's asymmetric partition of five Redlock nodes:
// client c0 reaches n1, n2, n3 and client c1 reaches n3, n4, n5, so n3 is
// the only node they share and each sees a majority.
func clientSplit(when time.Duration) nemesis.Step {
	return at(when, "partition", "start",
		[]string{"c0->n4", "c0->n5", "c1->n1", "c1->n2"},
		map[string]string{"pattern": nemesis.PatternClientSplit, "groups": "c0 reaches n1+n2+n3, c1 reaches n3+n4+n5"})
}

func allClientLinks(clients, nodes int) []string {
	var out []string
	for c := 0; c < clients; c++ {
		for n := 1; n <= nodes; n++ {
			out = append(out, sut.LinkName(fmt.Sprintf("c%d", c), fmt.Sprintf("n%d", n)))
		}
	}
	return out
}

func workload(clients int, ttl, hold, acquireTimeout time.Duration) workloads.Config {
	return workloads.Config{Clients: clients, Keys: 1, TTL: ttl, Hold: hold, AcquireTimeout: acquireTimeout}
}

// Shared schedules, so that a scenario and its fix run the same script.

// crashRun: A works 0–500ms; the crash is asked for at 200ms and
// strikes at A's safe point (500ms). With a 1s TTL the lock, if it
// expires, is free at 1.0s; the run lasts long enough to see it. Nothing
// here faults a link, so the client commands get a second before they
// time out: on a loaded machine B's SETNX may take longer than the usual
// quarter TTL, and a timed-out acquire is given back with the lock's DEL,
// which for these naive locks deletes A's key (a real flaw, but not this
// scenario's).
func crashRun(steps ...nemesis.Step) lockrun.Config {
	return lockrun.Config{
		Workload:      workload(2, time.Second, 500*ms, 500*ms),
		Script:        steps,
		ClientTimeout: time.Second,
		TimeLimit:     2 * time.Second, Recovery: 1500 * ms, Seed: 1,
	}
}

// releaseRun: three clients, TTL 1s, sections of 600ms. A (0–600ms)
// writes in time and is then paused 800ms before its release (the pause
// point after the write): its lease runs out at 1.0s, B takes the lock at
// 1.0s, A wakes at 1.4s and releases while B still works (until 1.6s).
func releaseRun() lockrun.Config {
	return lockrun.Config{
		Workload: workload(3, time.Second, 600*ms, time.Second),
		Script: []nemesis.Step{at(200*ms, "client-pause", "holder", nil,
			map[string]string{"duration": (800 * ms).String(), "at": string(nemesis.PauseAfterWrite)})},
		TimeLimit: 2500 * ms, Recovery: 1500 * ms, Seed: 1,
	}
}

// gcPauseRun: two clients, TTL 1s, sections of 300ms. A (0–300ms) is
// paused 2.5s at its safe point; its lease ends at 1.0s; B takes the lock
// at 1.0s, reads, writes at 1.3s (and goes on); A writes at 2.8s. A's
// write must come after B's: a fencing token is checked when a write
// arrives, so a stale write that lands between B's read and B's write is
// accepted (the limit README describes). A wakes 1.5s after B's write is
// due, because a loaded machine was seen to stretch B's section from 0.3s
// to more than a second.
func gcPauseRun() lockrun.Config {
	return lockrun.Config{
		Workload:  workload(2, time.Second, 300*ms, time.Second),
		Script:    []nemesis.Step{holderPause(100*ms, 2500*ms)},
		TimeLimit: 3500 * ms, Recovery: 1500 * ms, Seed: 1,
	}
}

// manualFailoverRun: master n1 with replicas; TTL and Hold as given. A
// takes the lock at 0 (replicated everywhere) and releases at hold; the
// replication link of n2 is frozen at 500ms, so the grant at hold (to X)
// and A's release reach n1 only; n2 is promoted at promote. On n2 A's old
// grant lives until ttl; the other client takes it then, while X works
// until 2·hold. When X's grant is the point (leaseLeft > 0), the promotion
// waits for a holder with leaseLeft of its lease to run: on a loaded
// machine X's grant may come after promote (a WAIT that timed out is
// retried), and a promotion before it would test nothing.
func manualFailoverRun(replicas int, ttl, hold, promote, leaseLeft time.Duration) lockrun.Config {
	promotion := at(promote, "failover", "promote", []string{"n2"}, nil)
	limit := 2*hold + 700*ms
	if leaseLeft > 0 {
		promotion = awaiting(promotion, nemesis.Await{LeaseLeft: leaseLeft})
		limit += time.Second
	}
	return lockrun.Config{
		Workload: workload(2, ttl, hold, time.Second),
		Cluster:  sut.Config{Topology: sut.Replicated, Failover: sut.FailoverManual, Replicas: replicas},
		Script: []nemesis.Step{
			at(500*ms, "failover", "cut", []string{"n2"}, nil),
			promotion,
		},
		TimeLimit: limit, Recovery: 2 * time.Second, Seed: 1,
	}
}

// sentinelRun: master n1, replicas n2 and n3, three sentinels. A works
// 0–1s (its grant, with a 6.4s TTL, replicated). At 0.6s n1 is cut off
// from the sentinels and its replicas (one proxy carries both), not from
// the clients. X takes the lock on n1 at 1.0s: the write never leaves n1.
// X is paused at its safe point (2.0s) for 5.7s, as a GC pause would; its
// lease lasts until 7.4s. Sentinel promotes a replica 2.3s after the cut,
// or about 6.3s after it when its first election splits the vote (it
// retries after twice the failover timeout, 2s here); either way before
// A's old grant, the only one the promoted replica has, expires at 6.4s.
// Then B takes the lock on the new master while X's lease has a second
// left. At 6.8s the partition ends and the old master is restarted, as an
// operator would, so that it rejoins as a replica at once instead of
// waiting for Sentinel to demote it (Sentinel waits 8s or more, which
// would make the final heal slow).
func sentinelRun(extra string) lockrun.Config {
	n1 := []string{"n1"}
	return lockrun.Config{
		Workload: workload(2, 6400*ms, time.Second, time.Second),
		Cluster: sut.Config{Topology: sut.Replicated, Failover: sut.FailoverSentinel, ExtraConfig: extra,
			SentinelFailoverTimeout: 2 * time.Second},
		Script: []nemesis.Step{
			at(600*ms, "partition", "start", []string{sut.LinkName(sut.SentinelsFrom, "n1")},
				map[string]string{"pattern": nemesis.PatternIsolate, "groups": "n1 cut off from its replicas and the sentinels; clients reach every node"}),
			holderPause(1500*ms, 5700*ms),
			at(6800*ms, "partition", "stop", []string{sut.LinkName(sut.SentinelsFrom, "n1")}, nil),
			at(6800*ms, "kill", "kill", n1, nil),
			at(6800*ms, "kill", "restart", n1, nil),
		},
		TimeLimit: 7200 * ms, Recovery: 1200 * ms, Seed: 1,
	}
}

// redlockRun: five nodes, two clients split as Kleppmann's example, TTL
// 2s, sections of 1.4s. Grants made before the split are gone by 2.0s; the
// section from 1.4s to 2.8s belongs to a client holding n3 and its own two
// nodes; the fault strikes n3 at 2.3s, in the middle of it. On a loaded
// machine grants come late, so the first fault waits, from 2.3s, for a
// holder on a bare quorum that includes n3 with 1.5s of its lease left
// (so at least 0.9s of its work: a loaded machine was seen to take 0.5s to
// kill a node and as long again for the other client's next try), and the
// steps after it keep their distance from it; the run is long enough for
// the next section to be the one struck.
func redlockRun(fault ...nemesis.Step) lockrun.Config {
	if len(fault) > 0 {
		fault[0] = awaiting(fault[0], nemesis.Await{LeaseLeft: 1500 * ms, Granted: []string{"n3"}, BareQuorum: true})
	}
	return lockrun.Config{
		Nodes:     5,
		Workload:  workload(2, 2*time.Second, 1400*ms, time.Second),
		Script:    append([]nemesis.Step{clientSplit(0)}, fault...),
		TimeLimit: 5 * time.Second, Recovery: 1500 * ms, Seed: 1,
	}
}

// awaiting makes step s wait for the holder want describes (see
// nemesis.Step.Await).
func awaiting(s nemesis.Step, want nemesis.Await) nemesis.Step {
	s.Await = &want
	return s
}

// Exposure a scenario declares: what must have happened, while a client
// held the lock, for its verdicts to be evidence.
func struck(what string, fs ...string) checker.Requirement {
	return checker.Requirement{Name: what, Faults: fs}
}

// attempted: a client tried to acquire while the fault was in force (the
// exposure of a lock that must refuse to grant under it).
func attempted(what string, fs ...string) checker.Requirement {
	return checker.Requirement{Name: what, Faults: fs, Attempted: true}
}

func pauseOutlivedLease(what string) checker.Requirement {
	return checker.Requirement{Name: what, PauseStruck: true, PauseOutlived: true}
}

func pauseStruckHolder(what string) checker.Requirement {
	return checker.Requirement{Name: what, PauseStruck: true}
}

func pausedAtFailpoint(what string) checker.Requirement {
	return checker.Requirement{Name: what, Paused: true}
}

func crashedHolding(what string) checker.Requirement {
	return checker.Requirement{Name: what, CrashStruck: true}
}

func crashedAtFailpoint(what string) checker.Requirement {
	return checker.Requirement{Name: what, Crashed: true}
}

const (
	kleppmann = `Kleppmann, "How to do distributed locking" (2016)`
	antirez   = `antirez, "Is Redlock safe?" (2016)`
	distlock  = `redis.io, "Distributed Locks with Redis"`
	jepsen    = `Kingsbury, Jepsen: "Redis" (2013)`
)

// catalogueOne returns the scenarios of the literature, in the order of the
// catalogue: single node recipes, then client pauses, failover, Sentinel,
// Redlock, and the real libraries.
func catalogueOne() []Scenario {
	redlockClock := func() lockrun.Config {
		c := redlockRun(at(2300*ms, "clock", "bump", []string{"n3"}, map[string]string{"delta": "+10s"}))
		c.Cluster.Faketime = true
		return c
	}
	restart := func(persistence string, delay time.Duration) lockrun.Config {
		c := redlockRun(
			at(2300*ms, "kill", "kill", []string{"n3"}, nil),
			at(2300*ms+delay, "kill", "restart", []string{"n3"}, nil))
		c.Cluster.Persistence = persistence
		if delay > 0 {
			c.TimeLimit += delay
		}
		return c
	}
	return []Scenario{
		{
			Name: "setnx-crash-deadlock", Lock: "setnx",
			Summary: "the holder crashes; with no expiry nobody ever acquires again",
			Source:  `redis.io, SETNX command page, "Design pattern: Locking with SETNX"`,
			Explanation: `A takes the lock with SETNX and crashes inside its critical section without releasing it. ` +
				`The key has no expiry, so it stays forever: B asks for the lock again and again and never gets it, ` +
				`through the whole recovery period. The lock never lied (nobody else held it), it just stopped working. ` +
				`Fix: give the key an expiry in the same command, SET key value NX PX ttl (see set-nx-ex-crash).`,
			Expect:   Expect{valid, valid, invalid},
			Exposure: []checker.Requirement{crashedHolding("the holder's crash")},
			Run:      crashRun(holderCrash(200 * ms)),
		},
		{
			Name: "setnx-expire-crash-gap", Lock: "setnx-expire",
			Summary: "a crash between SETNX and EXPIRE leaves a lock that never expires",
			Source:  `redis.io, SET command page, "Patterns" (SET … NX EX replaces SETNX + EXPIRE)`,
			Explanation: `The lock is taken in two commands, SETNX then EXPIRE. A client crashes between them (failpoint ` +
				locks.FailpointAfterSetNX + `): the key exists and has no expiry, so nobody acquires it again. The expiry only ` +
				`protects against crashes if it is set atomically with the key. ` +
				`Fix: one command, SET key value NX PX ttl (see set-nx-ex-crash).`,
			Expect:   Expect{valid, valid, invalid},
			Exposure: []checker.Requirement{crashedAtFailpoint("the crash at " + locks.FailpointAfterSetNX)},
			Run:      crashRun(failpointCrash(200*ms, locks.FailpointAfterSetNX)),
		},
		{
			Name: "set-nx-ex-crash", Lock: "set-nx-ex",
			Summary: "the holder crashes; SET NX EX set the expiry atomically, so the lock expires and others go on",
			Source:  distlock + `, "Correct Implementation with a Single Instance"`,
			Explanation: `A crashes inside its critical section holding a lock taken with SET key 1 NX EX 1. ` +
				`The expiry was set in the same command as the key, so there is no moment when the key exists ` +
				`without it: one TTL after A's grant the key is gone and B acquires. (SET NX EX is atomic, so a ` +
				`crash "between SETNX and EXPIRE" cannot happen; the nearest equivalent is a crash while holding.)`,
			Expect:   Expect{valid, valid, valid},
			Exposure: []checker.Requirement{crashedHolding("the holder's crash")},
			Run:      crashRun(holderCrash(200 * ms)),
		},
		{
			Name: "wrong-release", Lock: "set-nx-ex",
			Summary: "A pauses after its write, its lock expires, B acquires, A's DEL deletes B's lock, C acquires while B holds",
			Source:  distlock + `, "Correct Implementation with a Single Instance" (why the value must be random)`,
			Explanation: `A writes in time, then is paused for 800ms before it releases; its lease (1s) runs out and B ` +
				`takes the lock. A wakes up and releases with DEL, which deletes whatever is at the key: B's lock. C ` +
				`acquires at once, while B is still working: two holders, and the lock promise is broken by the ` +
				`release itself. B and C both read the counter before either wrote it, so an update is lost too: ` +
				`that is the lock's fault here, not a late write (A's write was in time). ` +
				`Fix: a random token per holder and a release that deletes only its own token (token-release).`,
			Expect:   Expect{invalid, invalid, valid},
			Exposure: []checker.Requirement{pauseOutlivedLease("a pause after the write, longer than the lease")},
			Run:      releaseRun(),
		},
		{
			Name: "token-release", Lock: "token",
			Summary: "the wrong-release schedule with a random token: A's late release is refused",
			Source:  distlock + `, "Correct Implementation with a Single Instance"`,
			Explanation: `The same schedule as wrong-release, but each grant has a random token and the release is a Lua ` +
				`script that deletes the key only if it still holds the caller's token. A's late release finds B's token ` +
				`and is refused; B keeps the lock, C waits its turn: one holder at a time, no update lost. (A late ` +
				`write, rather than a late release, is another matter: see gc-pause-stale-write.)`,
			Expect:   Expect{valid, valid, valid},
			Exposure: []checker.Requirement{pauseOutlivedLease("a pause after the write, longer than the lease")},
			Run:      releaseRun(),
		},
		{
			Name: "gc-pause-stale-write", Lock: "token",
			Summary: "A pauses past its TTL inside its critical section; B acquires and writes; A's write loses B's update",
			Source:  kleppmann + `, "Protecting a resource with a lock"`,
			Explanation: `A reads the counter, then stops for 2.5s (a stop-the-world GC pause) with a 1s lease. The lock ` +
				`expires, as it must, and B acquires, reads the same value, writes value+1. A wakes up believing it ` +
				`still holds the lock and writes value+1 as well: B's update is lost. The lock kept its promise ` +
				`(A's lease had ended before B's began); the client outlived its lease, and no lock can prevent that ` +
				`by itself, because A cannot notice its own pause. Fix: fencing tokens, checked by the storage ` +
				`(gc-pause-fenced).`,
			Expect:   Expect{valid, invalid, valid},
			Exposure: []checker.Requirement{pauseOutlivedLease("a GC pause longer than the TTL")},
			Run:      gcPauseRun(),
		},
		{
			Name: "gc-pause-fenced", Lock: "fenced",
			Summary: "the same pause with a fencing token: the storage rejects A's stale write",
			Source:  kleppmann + `, "Making the lock safe with fencing"`,
			Explanation: `The same pause as gc-pause-stale-write, but every grant carries a fencing token from INCR (A got ` +
				`n, B got n+1) and the storage accepts a write only with a token at least as high as any it has seen, ` +
				`atomically in a Lua script. B's write with n+1 is accepted; A's late write with n is rejected. ` +
				`Nothing is lost, however long the pause.`,
			Expect:   Expect{valid, valid, valid},
			Exposure: []checker.Requirement{pauseOutlivedLease("a GC pause longer than the TTL")},
			Run:      gcPauseRun(),
		},
		{
			Name: "failover-lost-lock", Lock: "token",
			Summary: "replication frozen, X acquires on the master, the replica is promoted without it, B acquires",
			Source:  distlock + `, "Why Failover-based Implementations Are Not Enough"`,
			Explanation: `A master n1 with one replica n2. The replication link to n2 is frozen at 0.5s; at 1.4s X takes ` +
				`the lock on n1, which acknowledges at once (replication is asynchronous), but the write never reaches ` +
				`n2. n2 is promoted at 1.7s and the clients move to it: the lock is not there. As soon as the previous ` +
				`holder's grant (which had been replicated) expires, the other client acquires while X still holds: ` +
				`two holders, and one lost update. Fix: wait for a replica to acknowledge the grant (failover-wait), ` +
				`or don't rely on a single failover-based master for safety.`,
			Expect:   Expect{invalid, invalid, valid},
			Exposure: []checker.Requirement{struck("the promotion", "promote")},
			Run:      manualFailoverRun(1, 2*time.Second, 1400*ms, 1700*ms, 1200*ms),
		},
		{
			Name: "failover-wait", Lock: "token-wait",
			Summary: "the same failover with WAIT 1: the acquisition nobody replicated fails closed",
			Source:  `redis.io, WAIT command page; ` + distlock + `, "Why Failover-based Implementations Are Not Enough"`,
			Explanation: `The same failover as failover-lost-lock, but the lock sends WAIT 1 after its SET, on the same ` +
				`connection, and grants the lock only if a replica acknowledged it. With the replication link frozen no ` +
				`replica does: the SET is undone and the acquire fails. Nobody is told they hold a lock the promoted ` +
				`replica does not have. The price is availability: while no replica acknowledges, nobody gets the lock.`,
			Expect:   Expect{valid, valid, valid},
			Exposure: []checker.Requirement{attempted("the frozen replication link", "cut-replication")},
			Run:      manualFailoverRun(1, 2*time.Second, 1400*ms, 1700*ms, 0),
		},
		{
			Name: "failover-wait-wrong-replica", Lock: "token-wait",
			Summary: "WAIT 1 with two replicas: replica n3 acknowledges, replica n2 (which missed it) is promoted",
			Source:  `redis.io, WAIT command page ("WAIT does not make Redis a strongly consistent store")`,
			Explanation: `A master with two replicas. n2's replication link is frozen; X's grant is acknowledged by n3, ` +
				`so WAIT 1 returns 1 and X holds the lock. Then n2, the replica that missed it, is promoted and n3 ` +
				`resynchronises from it, losing the grant too. When the previous holder's grant expires on n2 the ` +
				`other client acquires while X still holds. WAIT counts acknowledgements; it does not choose which ` +
				`replica is promoted. Fix: a failover that only promotes a replica with every acknowledged write (a ` +
				`consensus system), or fencing tokens.`,
			Expect:   Expect{invalid, invalid, valid},
			Exposure: []checker.Requirement{struck("the promotion", "promote")},
			Run:      manualFailoverRun(2, 3*time.Second, 2*time.Second, 2500*ms, 2*time.Second),
		},
		{
			Name: "sentinel-split-brain", Lock: "token",
			Summary: "the master is cut off from its replicas and Sentinel; X acquires on it; Sentinel promotes; B acquires",
			Source:  jepsen + `; ` + distlock + `, "Why Failover-based Implementations Are Not Enough"`,
			Explanation: `Master n1, replicas n2 and n3, three sentinels. At 0.6s n1 is cut off from its replicas and the ` +
				`sentinels, but clients still reach it: X takes the lock on n1 at 1.0s and the write never leaves n1. ` +
				`The sentinels see n1 down, agree, and promote a replica within a few seconds; the clients follow them ` +
				`to the new master, where X's grant does not exist. When the previous holder's (replicated) grant ` +
				`expires there, B acquires while X's lease on the old master still runs: split brain, two holders. ` +
				`Sentinel's failover is not a consensus on the lock's state. Fix: not a failover-based lock for safety; ` +
				`min-replicas-to-write narrows the window but does not close it (sentinel-min-replicas).`,
			Expect:   Expect{invalid, invalid, valid},
			Exposure: []checker.Requirement{struck("the isolation of the master", "start-partition"), pauseStruckHolder("the holder's pause")},
			Run:      sentinelRun(""),
		},
		{
			Name: "sentinel-min-replicas", Lock: "token",
			Summary: "the same split brain with min-replicas-to-write 1: the old master refuses writes, too late",
			Source:  jepsen + `; redis.io, "High availability with Redis Sentinel" (min-replicas-to-write)`,
			Explanation: `The same partition as sentinel-split-brain, with min-replicas-to-write 1 and ` +
				`min-replicas-max-lag 2 on every node. The old master stops accepting writes once no replica has ` +
				`acknowledged for 2 seconds, so it accepts writes for a while after the cut, and X's grant 0.4s after ` +
				`the cut is accepted. The setting bounds how long the isolated master keeps writing; it does nothing ` +
				`about a lease it already granted: X's lease is still running when B acquires on the promoted replica. ` +
				`Two holders again.`,
			Expect:   Expect{invalid, invalid, valid},
			Exposure: []checker.Requirement{struck("the isolation of the master", "start-partition"), pauseStruckHolder("the holder's pause")},
			Run:      sentinelRun("min-replicas-to-write 1\nmin-replicas-max-lag 2\n"),
		},
		{
			Name: "redlock-clock-jump", Lock: "redlock",
			Summary: "5 nodes; c0 reaches 1–3, c1 reaches 3–5; node 3's clock jumps past the TTL; both hold",
			Source:  kleppmann + `, "Breaking Redlock with bad timings"; ` + antirez + ` (on clock jumps)`,
			Explanation: `Redlock over five nodes, the clients partitioned as in Kleppmann's example: c0 reaches n1, n2, n3 ` +
				`and c1 reaches n3, n4, n5. One of them holds the lock on its three nodes. Node 3's clock jumps 10s ` +
				`forward: its copy of the lock expires at once. The other client now gets n3 and its own two nodes, a ` +
				`majority, and is told it holds the lock while the first still does. Redlock's safety assumes clocks ` +
				`that advance at about the same rate; a jump (an administrator, NTP stepping) breaks it. antirez's ` +
				`answer is to forbid clock steps (slew only); Kleppmann's is that a lock's safety should not depend on ` +
				`timing at all. The lock promise breaks, and a lost update follows.`,
			Expect:   Expect{invalid, invalid, valid},
			Exposure: []checker.Requirement{struck("the clock jump", "bump-clock")},
			Run:      redlockClock(),
		},
		{
			Name: "redlock-crash-restart", Lock: "redlock",
			Summary: "the same split; node 3 crashes and restarts at once without persistence; both hold",
			Source:  distlock + `, "Performance, crash-recovery and fsync"; ` + kleppmann + `, "Breaking Redlock with bad timings"`,
			Explanation: `The same split as redlock-clock-jump. Node 3 is killed and restarted at once, with no ` +
				`persistence: it comes back empty, having forgotten the holder's key. The other client gets n3 and ` +
				`its own two nodes, a majority, while the first still holds. A node that forgets a lock is as bad as a ` +
				`clock that jumps. Fixes: keep the node down longer than the longest TTL (redlock-delayed-restart) or ` +
				`fsync every write (redlock-aof-always).`,
			Expect:   Expect{invalid, invalid, valid},
			Exposure: []checker.Requirement{struck("the node crash", "kill")},
			Run:      restart(sut.PersistNone, 0),
		},
		{
			Name: "redlock-delayed-restart", Lock: "redlock",
			Summary: "the same crash, but node 3 stays down longer than the TTL before it restarts",
			Source:  distlock + `, "Performance, crash-recovery and fsync" (delayed restarts)`,
			Explanation: `The same crash as redlock-crash-restart, but node 3 restarts only after 2.2s, longer than the ` +
				`2s TTL. While it is down neither client reaches a majority (each sees two live nodes), so nobody is ` +
				`told they hold the lock; by the time n3 returns, empty, every lease it could have forgotten has ` +
				`expired. antirez's delayed restart works, at the price of availability; it relies on the node's ` +
				`notion of time again, and on the restart really waiting.`,
			Expect:   Expect{valid, valid, valid},
			Exposure: []checker.Requirement{struck("the node crash", "kill")},
			Run:      restart(sut.PersistNone, 2200*ms),
		},
		{
			Name: "redlock-aof-always", Lock: "redlock",
			Summary: "the same immediate restart with appendfsync always: node 3 remembers the lock",
			Source:  distlock + `, "Performance, crash-recovery and fsync"`,
			Explanation: `The same crash and immediate restart as redlock-crash-restart, but the nodes write every command ` +
				`to an append-only file with fsync always. Node 3 comes back with the holder's key and its expiry, so ` +
				`the other client still cannot reach a majority until the holder releases. Note what a SIGKILL can ` +
				`and cannot show: the kernel keeps written data across a process kill even without fsync, so here ` +
				`aof-everysec would survive too; fsync always matters for a power loss or a kernel crash, which loses ` +
				`up to a second of writes with everysec.`,
			Expect:   Expect{valid, valid, valid},
			Exposure: []checker.Requirement{struck("the node crash", "kill")},
			Run:      restart(sut.PersistAOFAlways, 0),
		},
		{
			Name: "redlock-pause-before-check", Lock: "redlock",
			Summary: "A pauses after winning the majority, before the validity check, past the TTL: the check refuses",
			Source:  antirez + `; ` + distlock + `, "Safety arguments"`,
			Explanation: `A client wins a majority of the five nodes, then stops for 1.5s (failpoint ` +
				locks.FailpointAfterMajority + `) before computing how much of its 1s lease is left. When it resumes, ` +
				`the elapsed time exceeds the TTL: Redlock's validity check refuses the lock and releases the keys. ` +
				`Meanwhile the keys had expired and the other client acquired: nobody was told they hold a lock they ` +
				`do not. This is antirez's point: delays during acquisition are caught by measuring time after it.`,
			Expect:   Expect{valid, valid, valid},
			Exposure: []checker.Requirement{pausedAtFailpoint("the pause at " + locks.FailpointAfterMajority)},
			Run: lockrun.Config{
				Nodes:     5,
				Workload:  workload(2, time.Second, 500*ms, time.Second),
				Script:    []nemesis.Step{failpointPause(200*ms, locks.FailpointAfterMajority, 1500*ms)},
				TimeLimit: 3 * time.Second, Recovery: 1500 * ms, Seed: 1,
			},
		},
		{
			Name: "redlock-pause-after-check", Lock: "redlock",
			Summary: "A pauses after the validity check, before using the lock: its write loses B's update",
			Source:  kleppmann + `, "Protecting a resource with a lock"; ` + antirez,
			Explanation: `A client passes Redlock's validity check and then stops for 1.4s (failpoint ` +
				locks.FailpointAfterValidityCheck + `) with a 1s lease, before it starts its critical section. By the ` +
				`time it reads and writes the counter its lease has ended, and the other client, which acquired after ` +
				`the expiry, has read the same value: one update is lost. No check inside the lock can catch a pause ` +
				`that happens after the check; antirez concedes this case and it is the same for every lock with a ` +
				`lease. The lock promise holds (the late grant promised nothing); the resource does not. Fix: fencing ` +
				`(redlock-fenced).`,
			Expect:   Expect{valid, invalid, valid},
			Exposure: []checker.Requirement{pausedAtFailpoint("the pause at " + locks.FailpointAfterValidityCheck)},
			Run: lockrun.Config{
				Nodes: 5,
				// The first section runs 0–0.8s; the next grant (s = 0.8s) pauses
				// 1.4s after the check and returns at 2.2s; its keys expired at
				// 1.8s, when the other client took the lock; that one writes at
				// 2.6s, after the late client has read the same value.
				Workload:  workload(2, time.Second, 800*ms, time.Second),
				Script:    []nemesis.Step{failpointPause(200*ms, locks.FailpointAfterValidityCheck, 1400*ms)},
				TimeLimit: 3500 * ms, Recovery: 1500 * ms, Seed: 1,
			},
		},
		{
			Name: "redlock-fenced", Lock: "fenced",
			Summary: "the same late use of a lease with a fencing token checked by the storage: rejected",
			Source:  kleppmann + `, "Making the lock safe with fencing"`,
			Explanation: `The schedule of redlock-pause-after-check: a client's lease runs out before it uses it (here it ` +
				`stops 1.4s inside its critical section), the other client acquires and writes. The lock hands out a ` +
				`fencing token that grows with every grant, and the storage refuses a write whose token is older than ` +
				`one it has seen: the late write is rejected and nothing is lost. Redlock itself produces no such ` +
				`number (its token is random, and its five counters are not a consensus), which is Kleppmann's ` +
				`objection; the fix needs a lock with a monotonic token, here the single-node fenced lock.`,
			Expect:   Expect{valid, valid, valid},
			Exposure: []checker.Requirement{pauseOutlivedLease("a pause longer than the TTL")},
			Run: lockrun.Config{
				// The second section runs 0.8–1.6s; its holder is paused 1.4s at
				// its safe point; its lease ends at 1.8s, the other client
				// takes the lock and writes at 2.6s; the late write comes at 3.0s.
				Workload:  workload(2, time.Second, 800*ms, time.Second),
				Script:    []nemesis.Step{holderPause(time.Second, 1400*ms)},
				TimeLimit: 3500 * ms, Recovery: 1500 * ms, Seed: 1,
			},
		},
		{
			Name: "redlock-slow-network", Lock: "redlock",
			Summary: "200ms of latency on every client link: no node answers within Redlock's timeout, acquisition fails",
			Source:  distlock + `, "The Redlock Algorithm" (step 2) and "Safety arguments"; ` + kleppmann + `, "Using time to solve consensus"`,
			Explanation: `Every client link gets 200ms of latency each way. Redlock asks each node with a timeout much ` +
				`smaller than the TTL (a twentieth: 50ms for 1s), so no node answers in time, no majority is reached, ` +
				`and the acquisition fails (or its outcome is unknown) rather than granting a lease that the delay has ` +
				`already eaten. Late SETs that still land on the nodes leave keys nobody was told about; they expire. ` +
				`Nobody holds the lock in error; the lock is unavailable while the network is slow.`,
			Expect:   Expect{valid, valid, valid},
			Exposure: []checker.Requirement{struck("the slow network", "start-latency")},
			Run: lockrun.Config{
				Nodes:    5,
				Workload: workload(2, time.Second, 300*ms, 500*ms),
				Script: []nemesis.Step{
					at(500*ms, "latency", "start", allClientLinks(2, 5), map[string]string{"latency": "200ms", "jitter": "0s"}),
					at(2*time.Second, "latency", "stop", allClientLinks(2, 5), nil),
				},
				TimeLimit: 2500 * ms, Recovery: 2 * time.Second, Seed: 1,
			},
		},
		{
			Name: "watchdog-partition", Lock: "reentrant",
			Summary: "the holder is cut off; its watchdog cannot renew; the lock expires; B acquires; A still writes",
			Source:  `Redisson, "Distributed locks and synchronizers" (lock watchdog); ` + kleppmann + `, "Protecting a resource with a lock"`,
			Explanation: `A Redisson-style lock whose watchdog renews the 1s lease every third of a second while the holder ` +
				`works (3s here). c1 is kept off the node at first, so c0 (A) holds; at 1.3s A is cut off from the ` +
				`node instead. Its watchdog's renewals time out, the lease expires about a second later, and B ` +
				`acquires. A knows nothing of this: it finishes its work and writes, over B's update. A watchdog makes ` +
				`long critical sections possible but cannot keep a partitioned holder's lease alive, and the holder ` +
				`does not learn that it lost it. Fix: fencing tokens checked by the storage.`,
			Expect:   Expect{valid, invalid, valid},
			Exposure: []checker.Requirement{struck("the holder's partition", "start-partition")},
			Run: lockrun.Config{
				Workload: workload(2, time.Second, 3*time.Second, time.Second),
				Script: []nemesis.Step{
					at(0, "partition", "start", []string{"c1->n1"}, map[string]string{"pattern": "isolate", "groups": "c1 cut off from n1"}),
					at(1300*ms, "partition", "stop", []string{"c1->n1"}, nil),
					at(1300*ms, "partition", "start", []string{"c0->n1"}, map[string]string{"pattern": "isolate", "groups": "c0 (the holder) cut off from n1"}),
				},
				TimeLimit: 4 * time.Second, Recovery: 1500 * ms, Seed: 1,
			},
		},
		{
			Name: "redsync-clock-jump", Lock: "redsync",
			Summary: "the real go-redsync library under redlock-clock-jump: both hold",
			Source:  kleppmann + `, "Breaking Redlock with bad timings"`,
			Explanation: `The split of redlock-clock-jump against github.com/go-redsync/redsync, a widely used Redlock ` +
				`implementation, instead of the harness's own. As soon as one client holds the lock on n3 and its own ` +
				`two nodes, node 3's clock jumps forward, its copy of the lock expires, and the other client gets a ` +
				`majority while the first still holds. redsync waits for every node's answer, so through the ` +
				`partition each of its tries lasts as long as the client's read timeout on the two nodes it cannot ` +
				`reach (500ms, then as long again to release): the lease (4s) and the work under it (3.5s) are long ` +
				`enough for the other client's next try. The flaw is the algorithm's, not an implementation's.`,
			Expect:   Expect{invalid, invalid, valid},
			Exposure: []checker.Requirement{struck("the clock jump", "bump-clock")},
			Run: func() lockrun.Config {
				c := lockrun.Config{
					Nodes:    5,
					Workload: workload(2, 4*time.Second, 3500*ms, 2*time.Second),
					Script: []nemesis.Step{clientSplit(0), awaiting(
						at(0, "clock", "bump", []string{"n3"}, map[string]string{"delta": "+10s"}),
						nemesis.Await{LeaseLeft: 3 * time.Second, Granted: []string{"n3"}, BareQuorum: true})},
					TimeLimit: 6 * time.Second, Recovery: 1500 * ms, Seed: 1,
				}
				c.Cluster.Faketime = true
				return c
			}(),
		},
		{
			Name: "redlock-bare-majority-clock-jump", Lock: "redlock",
			Summary: "A gets only n1–3 while n4, n5 are cut off; healed, every client reaches every node; n3's clock jumps; both hold",
			Source:  kleppmann + `, "Breaking Redlock with bad timings"`,
			Explanation: `Five nodes. While A acquires, n4 and n5 are cut off from both clients, so A's grant rests on ` +
				`n1, n2 and n3: exactly the quorum, a bare majority (under contention the same happens without any ` +
				`partition, when other clients win the other nodes for an instant and then let them go). At 1.5s the ` +
				`partition heals: from then on every client reaches every node. At 2s node 3's clock jumps 10s ` +
				`forward and A's key there expires at once. B, retrying, gets n3, n4 and n5, a majority, while A still ` +
				`holds. One clock jump on one node is enough whenever the holder has exactly a majority; Redlock's ` +
				`validity check times only the client, so it cannot notice. The lock promise breaks, and a lost ` +
				`update follows.`,
			Expect:   Expect{invalid, invalid, valid},
			Exposure: []checker.Requirement{struck("the clock jump", "bump-clock")},
			Run: func() lockrun.Config {
				cut := []string{"c0->n4", "c0->n5", "c1->n4", "c1->n5"}
				c := lockrun.Config{
					Nodes: 5,
					// A's grant needs all of n1–n3, which the two clients may
					// split for a while: 1.5s of partition leaves room for
					// retries, and A's 3.5s hold outlasts the jump at 2s
					// even when it is granted at once.
					Workload: workload(2, 5*time.Second, 3500*ms, time.Second),
					// On a loaded machine A's grant may come late, or
					// before the cut (on all five nodes): the heal waits
					// for a holder on a bare quorum with n3, the jump for
					// one still holding, and the run is long enough for
					// the next grant to be the one struck.
					Script: []nemesis.Step{
						at(0, "partition", "start", cut, map[string]string{"pattern": nemesis.PatternIsolate, "groups": "n4+n5 cut off from the clients"}),
						awaiting(at(1500*ms, "partition", "stop", cut, map[string]string{"pattern": nemesis.PatternIsolate}),
							nemesis.Await{LeaseLeft: 2 * time.Second, Granted: []string{"n3"}, BareQuorum: true}),
						awaiting(at(2*time.Second, "clock", "bump", []string{"n3"}, map[string]string{"delta": "+10s"}),
							nemesis.Await{LeaseLeft: time.Second, Granted: []string{"n3"}, BareQuorum: true}),
					},
					TimeLimit: 6 * time.Second, Recovery: 1500 * ms, Seed: 1,
				}
				c.Cluster.Faketime = true
				return c
			}(),
		},
	}
}
