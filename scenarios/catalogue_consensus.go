package scenarios

import (
	"fmt"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/nemesis"
	lockrun "github.com/lockharness/lockharness/run"
	"github.com/lockharness/lockharness/sut"
)

// Sources of the consensus part.
const (
	jepsenEtcd = `Kingsbury, Jepsen: "etcd 3.4.3" (2020), "Locks"`
	etcdDocs   = `etcd, "clientv3/concurrency" (Mutex over a Session) and "Lease"`
)

// catalogueConsensus is the catalogue's part on the alternatives the
// critics of Redlock recommend: locks on a consensus system (etcd), run on
// a real three-member group, every client and peer link a proxy. They are
// tested the way the Redis locks are: the same workload, storage and
// checkers.
func catalogueConsensus() []Scenario {
	return []Scenario{
		{
			Name: "etcd-lease-expiry-gc-pause", Lock: "etcd",
			Summary: "A's whole process stops past its 2s etcd lease; etcd expires it, B acquires and writes; A's late write loses B's update",
			Source:  jepsenEtcd + `; ` + kleppmann + `, "Protecting a resource with a lock"`,
			Explanation: `etcd's own lock: a Mutex over a session whose lease (TTL 2s, etcd's shortest with its default ` +
				`election timeout) the client keeps alive every 667ms. A reads the counter, then its process stops ` +
				`for 4.5s, as in a stop-the-world GC pause: its critical section and its keep-alives alike (client-pause ` +
				`and renewer-stall together). etcd is right to expire the lease 2s after the last keep-alive and to ` +
				`delete A's key with it; B, waiting on the mutex, acquires and writes. A wakes up: its held-back ` +
				`keep-alive learns that the lease is gone ("not held", in the history), but A's write is already on ` +
				`its way, and B's update is lost. Consensus does not save the resource: the lock kept its promise ` +
				`(A's lease had ended when B's began), the client outlived it, exactly as with a Redis lease. This ` +
				`is what the etcd Jepsen analysis found of etcd's locks. Fix: the fencing token etcd already has, ` +
				`the key's create revision (etcd-fenced-lease-expiry).`,
			Expect: Expect{valid, invalid, valid},
			Exposure: []checker.Requirement{pauseOutlivedLease("a process pause longer than the lease"),
				struck("the keep-alives held back with the process", "stall-renewers")},
			Run: etcdPauseRun(),
		},
		{
			Name: "etcd-fenced-lease-expiry", Lock: "etcd-fenced",
			Summary: "the same process pause with the lock key's create revision as fencing token: the storage rejects A's late write",
			Source:  jepsenEtcd + `; ` + kleppmann + `, "Making the lock safe with fencing"`,
			Explanation: `The schedule of etcd-lease-expiry-gc-pause, but each grant carries the create revision of the ` +
				`holder's key under the lock prefix. Revisions only grow, and the mutex goes to the lowest live one, ` +
				`so B's token is higher than A's. The storage accepts a write only with a token at least as high as ` +
				`any it has seen: B's write is accepted, A's late write is rejected, nothing is lost.`,
			Expect: Expect{valid, valid, valid},
			Exposure: []checker.Requirement{pauseOutlivedLease("a process pause longer than the lease"),
				struck("the keep-alives held back with the process", "stall-renewers")},
			Run: etcdPauseRun(),
		},
		{
			Name: "etcd-leader-partitioned", Lock: "etcd",
			Summary: "the etcd leader is cut off from everyone while A holds the lock; the majority elects another and goes on, one holder at a time",
			Source:  jepsenEtcd + `; ` + etcdDocs,
			Explanation: `n1 leads the three-member group when the run starts. At 500ms, while A holds the lock (TTL ` +
				`2s, sections of 1.5s), every link to and from n1 is cut: the clients' and the other members'. ` +
				`Requests that go to n1 time out (gRPC gives the connection up only after its keep-alive pings, ` +
				`10s apart at the least, go unanswered), and so do those a follower forwards to n1 before the new ` +
				`election: A's keep-alives, perhaps its release, and then A's key stays. n2 and n3 elect a leader after an election timeout, and the new ` +
				`leader extends every lease by one, so A's key outlives the deadline A was given and goes only when ` +
				`its lease runs out. Then a client acquires through n2 and n3 while n1 is still cut off, and works ` +
				`under a lease the checkers hold it to (on a loaded machine the clients' requests may all time out ` +
				`until the heal: in 8 of 20 runs with both cores busy nobody acquired before it). At 9.5s n1 is back and rejoins as a follower (pre-vote keeps it from deposing the new leader). Cutting off the ` +
				`leader, a minority, costs etcd seconds of availability, never safety: one holder at a time, no ` +
				`update lost.`,
			Expect: Expect{valid, valid, valid},
			Exposure: []checker.Requirement{struck("the leader's partition", "start-partition"),
				attempted("acquires asked for while the leader was cut off", "start-partition")},
			Run: lockrun.Config{
				Workload: workload(2, 2*time.Second, 1500*ms, 2*time.Second),
				Script: []nemesis.Step{
					at(500*ms, "partition", "start", isolate("n1", 2, 3),
						map[string]string{"pattern": nemesis.PatternIsolate, "groups": "n1 (the leader) alone"}),
					at(9500*ms, "partition", "stop", isolate("n1", 2, 3), nil),
				},
				// Room for a loaded machine: a client's requests still go to
				// n1 until gRPC gives its connection up (its keep-alive pings
				// are 10s apart at the least), each timing out after 1s.
				ClientTimeout: time.Second,
				// Three members whatever the lock's own default (a library
				// that dials one endpoint defaults to one member, and then
				// there is no leader to cut off).
				Nodes:     3,
				TimeLimit: 10500 * ms, Recovery: 5 * time.Second, Seed: 1,
			},
		},
	}
}

// etcdPauseRun: two clients, TTL 2s, sections of 300ms. A (0–300ms) has
// its renewals held back from 100ms (or from its grant, when a loaded
// machine makes it later: the stall waits for a holder, before A's first
// keep-alive at 667ms) and is paused 4.5s at its safe point (300ms): its lease, last confirmed at its grant, ends at 2.0s (etcd
// revokes expired leases every 500ms); B, waiting on the mutex, takes the
// lock by 2.5s, reads, writes by 2.8s. A wakes at 4.8s and writes: 2s
// after B's write is due, room for a loaded machine. No link is faulted,
// so commands get 1s before they time out.
func etcdPauseRun() lockrun.Config {
	return lockrun.Config{
		Workload: workload(2, 2*time.Second, 300*ms, time.Second),
		Script: []nemesis.Step{
			awaiting(at(100*ms, "renewer-stall", "stall", nil, map[string]string{"duration": (4500 * ms).String()}), nemesis.Await{}),
			holderPause(100*ms, 4500*ms),
		},
		ClientTimeout: time.Second,
		TimeLimit:     6 * time.Second, Recovery: 2 * time.Second, Seed: 1,
	}
}

// isolate is every link to and from node in a group of peers: the
// clients' links to it and its links with the other members.
func isolate(node string, clients, members int) []string {
	var out []string
	for c := 0; c < clients; c++ {
		out = append(out, sut.LinkName(sut.ClientName(c), node))
	}
	for m := 1; m <= members; m++ {
		o := fmt.Sprintf("n%d", m)
		if o != node {
			out = append(out, sut.LinkName(node, o), sut.LinkName(o, node))
		}
	}
	return out
}
