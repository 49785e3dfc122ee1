package scenarios

import (
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/nemesis"
	lockrun "github.com/lockharness/lockharness/run"
)

// Sources of the ZooKeeper part.
const (
	zkRecipes    = `Apache ZooKeeper, "ZooKeeper Recipes and Solutions", "Locks"`
	zkSessions   = `Apache ZooKeeper, "ZooKeeper Programmer's Guide", "ZooKeeper Sessions"`
	jepsenZK     = `Kingsbury, Jepsen: "ZooKeeper" (2013)`
	curatorNotes = `Apache Curator, "Tech Note 10" (a lost session is a lost lock) and InterProcessMutex`
)

// catalogueZooKeeper is the catalogue's part on ZooKeeper, the other
// consensus system the critics of Redlock recommend: its lock recipe on a
// real three-server ensemble, every client and server link a proxy,
// tested as the Redis and etcd locks are.
func catalogueZooKeeper() []Scenario {
	return []Scenario{
		{
			Name: "zk-session-expiry-gc-pause", Lock: "zk",
			Summary: "A's whole process stops past its 2s ZooKeeper session; the ensemble expires it, B acquires and writes; A's late write loses B's update",
			Source:  zkRecipes + `; ` + curatorNotes + `; ` + kleppmann + `, "Protecting a resource with a lock"`,
			Explanation: `ZooKeeper's lock recipe: each client creates an ephemeral sequential node under the lock's node, ` +
				`the lowest holds, the others watch the node just below theirs. An ephemeral node lives as long as the ` +
				`client's session, which the client keeps alive with pings (timeout 2s, a ping or a check every ` +
				`667ms). A reads the counter, then its process stops for 7s, as in a stop-the-world GC pause: its ` +
				`critical section and its connection alike (client-pause and renewer-stall together: nothing, not even ` +
				`a ping, leaves the client meanwhile). The leader is right to expire the session 2s after it last ` +
				`heard from A, and to delete A's node with it; B's watch fires, B holds, reads and writes. A wakes up: ` +
				`its client reconnects, is told the session has expired ("not held", in the history), but A's write ` +
				`is already on its way, and B's update is lost. Consensus does not save the resource: ZooKeeper kept ` +
				`its promise (A's session had ended when B's node became the lowest), the client outlived it. ` +
				`Curator's tech notes say as much: a client must treat a lost session as a lost lock, and it cannot ` +
				`while it is stopped. Fix: a fencing token, the node's sequence number (zk-fenced-session-expiry).`,
			Expect: Expect{valid, invalid, valid},
			Exposure: []checker.Requirement{pauseOutlivedLease("a process pause longer than the session timeout"),
				struck("the client's connection held back with the process", "stall-renewers")},
			Run: zkPauseRun(),
		},
		{
			Name: "zk-fenced-session-expiry", Lock: "zk-fenced",
			Summary: "the same process pause with the lock node's sequence number as fencing token: the storage rejects A's late write",
			Source:  zkRecipes + `; ` + kleppmann + `, "Making the lock safe with fencing"`,
			Explanation: `The schedule of zk-session-expiry-gc-pause, but each grant carries the sequence number ZooKeeper ` +
				`gave the holder's node. Sequence numbers under the lock's node only grow, and the lock goes to the ` +
				`lowest live node, so B's token is higher than A's. The storage accepts a write only with a token at ` +
				`least as high as any it has seen: B's write is accepted, A's late write is rejected, nothing is lost. ` +
				`(The node's czxid would do as well: it grows with every write to the ensemble.)`,
			Expect: Expect{valid, valid, valid},
			Exposure: []checker.Requirement{pauseOutlivedLease("a process pause longer than the session timeout"),
				struck("the client's connection held back with the process", "stall-renewers")},
			Run: zkPauseRun(),
		},
		{
			Name: "zk-leader-partitioned", Lock: "zk",
			Summary: "the ZooKeeper leader is cut off from everyone while A holds the lock; the other two elect a leader and go on, one holder at a time",
			Source:  jepsenZK + `; ` + zkSessions,
			Explanation: `n1 leads the three-server ensemble when the run starts. At 500ms, while A holds the lock ` +
				`(session timeout 2s, sections of 1.5s), every link to and from n1 is cut: the clients' and the other ` +
				`servers'. A client connected to n1 hears nothing more and moves to another server after 2/3 of its ` +
				`session timeout; n2 and n3 stop hearing from their leader, give it up after syncLimit (4s), elect a ` +
				`leader between them and serve again; n1, without a quorum, stops serving and can commit nothing, not ` +
				`even the expiry of a session. The new leader gives every session a fresh timeout, so A's session, ` +
				`and its node, may outlive the deadline A was given; A's release may get no answer while there is no ` +
				`leader, and the client then deletes its node in the background (Curator's guaranteed delete) until ` +
				`it succeeds. Then a client acquires through n2 and n3 while n1 is still cut off. At 9.5s n1 is back ` +
				`and rejoins as a follower. Jepsen found ZooKeeper linearizable across partitions in 2013; here too, ` +
				`cutting off the leader, a minority, costs seconds of availability, never safety: one holder at a ` +
				`time, no update lost.`,
			Expect: Expect{valid, valid, valid},
			Exposure: []checker.Requirement{struck("the leader's partition", "start-partition"),
				attempted("acquires asked for while the leader was cut off", "start-partition")},
			Run: lockrun.Config{
				Workload: workload(2, 2*time.Second, 1500*ms, 2*time.Second),
				Script: []nemesis.Step{
					// At 500ms, or once a client holds when a loaded
					// machine makes the first grant later (a new client
					// first opens its session).
					awaiting(at(500*ms, "partition", "start", isolate("n1", 2, 3),
						map[string]string{"pattern": nemesis.PatternIsolate, "groups": "n1 (the leader) alone"}), nemesis.Await{}),
					at(9500*ms, "partition", "stop", isolate("n1", 2, 3), nil),
				},
				// Room after the heal: a client whose release got no
				// answer deletes its node once it reaches a leader.
				ClientTimeout: time.Second,
				TimeLimit:     10500 * ms, Recovery: 5 * time.Second, Seed: 1,
			},
		},
		{
			Name: "zk-clock-jump", Lock: "zk",
			Summary: "every ZooKeeper server's wall clock jumps 30s ahead while A holds the lock on a 2s session: nothing expires, one holder at a time",
			Source:  zkSessions + `; ` + kleppmann + `, "Breaking Redlock with bad timings"`,
			Explanation: `The fault that breaks Redlock (redlock-clock-jump): at 500ms, while A holds the lock (session ` +
				`timeout 2s, sections of 1.5s), the wall clock of all three servers, the leader and the one A talks ` +
				`to among them, jumps 30s forward, as an operator or a stepping NTP would make it (libfaketime; the ` +
				`jump is confirmed on each server's own log stamps before it counts). Had ZooKeeper timed sessions ` +
				`by the wall clock, A's session would have expired at once and B taken the lock in the middle of A's ` +
				`section. It does not: the leader counts a session's silence on the monotonic clock ` +
				`(System.nanoTime), which a wall-clock step leaves alone, so A keeps the lock until it releases it, ` +
				`and B gets it after. Only the times stamped on znodes move. A lock whose safety rests on a ` +
				`monotonic timeout on the server is immune to clock jumps; Redlock, which lets each node expire keys ` +
				`by its own wall clock, is not.`,
			Expect:   Expect{valid, valid, valid},
			Exposure: []checker.Requirement{struck("the clock jump", "bump-clock")},
			Run: func() lockrun.Config {
				c := lockrun.Config{
					Workload: workload(2, 2*time.Second, 1500*ms, 3*time.Second),
					Script: []nemesis.Step{
						awaiting(at(500*ms, "clock", "bump", []string{"n1", "n2", "n3"}, map[string]string{"delta": "+30s"}), nemesis.Await{LeaseLeft: time.Second}),
					},
					ClientTimeout: time.Second,
					TimeLimit:     5 * time.Second, Recovery: 2 * time.Second, Seed: 1,
				}
				c.Cluster.Faketime = true
				return c
			}(),
		},
	}
}

// zkPauseRun: two clients, session timeout 2s, sections of 300ms. A
// (0–300ms) has its renewals held back from 100ms (or from its grant on a
// loaded machine) for 7s: its keep-alive, due at 667ms, then shuts its
// connection until the stall ends. A is paused 7s at its safe point
// (300ms). The leader last heard from A by its keep-alive or go-zookeeper's
// ping, at most 667ms after the grant, and expires the session 2s later
// (rounded up to its 200ms tick); B, watching A's node, holds by about
// 3s, reads, writes by 3.3s. A wakes at 7.3s and writes. The margin is
// wide because a leader change (a loaded two-core machine starves a
// server past syncLimit now and then) gives every session a fresh
// timeout: a run was seen where A's session outlived its 4.5s pause that
// way and B took the lock only after A's write. No link is faulted, so
// requests get 1s before they time out.
func zkPauseRun() lockrun.Config {
	return lockrun.Config{
		Workload: workload(2, 2*time.Second, 300*ms, 4*time.Second),
		Script: []nemesis.Step{
			awaiting(at(100*ms, "renewer-stall", "stall", nil, map[string]string{"duration": (7 * time.Second).String()}), nemesis.Await{}),
			holderPause(100*ms, 7*time.Second),
		},
		ClientTimeout: time.Second,
		TimeLimit:     8500 * ms, Recovery: 2 * time.Second, Seed: 1,
	}
}
