package scenarios

import (
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/nemesis"
	lockrun "github.com/lockharness/lockharness/run"
	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/sut/rediscluster"
	"github.com/lockharness/lockharness/workloads"
)

// The lock key's place in a Redis Cluster of 3 masters as it starts:
// "lock-0" hashes to slot 1955, which n1 serves, replicated to n4 through
// n1's announced link "peers->n1".
var (
	clusterKey    = workloads.Key(0)
	clusterMaster = rediscluster.InitialSlotMaster(rediscluster.KeySlot(clusterKey), 3)
)

// clusterFailoverRun: a Redis Cluster (3 masters + 3 replicas), two
// clients, TTL 3s, sections of 2s, a waiting client gives up after 2s.
// A holds 0–2s; once A holds, the replication link of the key's master
// is slowed by 1.5s (its replica lags 1.5s behind). The other client (X)
// takes the lock at 2s on the master; its grant reaches the replica at
// 3.5s. The failover strikes X right after its grant (it waits for a
// holder with 2.5s of its 3s lease left, however late a loaded machine
// makes the grant):
//   - FORCE: the replica takes over within tens of milliseconds, without
//     X's grant or A's release; A's replicated grant lives there until
//     3s, when the waiting client takes the lock while X works until 4s;
//   - graceful: the master stops taking writes and the replica takes over
//     once it has them all (about 1.5s later), X's grant included; X,
//     still working, is struck holding a lock that survived.
func clusterFailoverRun(mode string) lockrun.Config {
	return lockrun.Config{
		Workload: workload(2, 3*time.Second, 2*time.Second, 2*time.Second),
		Cluster:  sut.Config{Topology: sut.RedisCluster},
		Script: []nemesis.Step{
			awaiting(at(500*ms, "latency", "start", []string{sut.LinkName(rediscluster.PeersFrom, clusterMaster)},
				map[string]string{"latency": "1500ms", "jitter": "0s"}), nemesis.Await{}),
			awaiting(at(1700*ms, "cluster-failover", "failover", nil,
				map[string]string{"key": clusterKey, "mode": mode}), nemesis.Await{LeaseLeft: 2500 * ms}),
		},
		TimeLimit: 5500 * ms, Recovery: 2 * time.Second, Seed: 1,
	}
}

// catalogueCluster is the catalogue's third part: locks on a Redis
// Cluster, the failover and resharding of the slot a lock key lives in.
func catalogueCluster() []Scenario {
	const source = redissonIssue + `1200 and ` + redissonIssue + `4822 (locks lost when a Redis Cluster master fails over); redis.io, CLUSTER FAILOVER command page`
	return []Scenario{
		{
			Name: "cluster-failover-force-lost-lock", Lock: "token",
			Summary: "Redis Cluster: the lock key's master fails over by CLUSTER FAILOVER FORCE to a lagging replica without X's grant; another client acquires while X holds",
			Source:  source,
			Explanation: `A Redis Cluster of three masters, each with one replica; the lock key lock-0 lives in slot 1955, ` +
				`served by n1 and replicated to n4. The clients reach it through go-redis's ClusterClient. While A ` +
				`holds the lock, n1's replication stream to n4 is slowed by 1.5s (a busy network, a replica behind). ` +
				`X takes the lock at 2s; n1 acknowledges at once, since replication is asynchronous. Right after, an ` +
				`operator (or an orchestrator) runs CLUSTER FAILOVER FORCE on n4: it takes over the slot within ` +
				`milliseconds with what it has, which is A's grant and not X's (nor A's release). n1 learns it is ` +
				`demoted, resynchronises from n4 and drops X's key too. When A's grant expires on n4 the waiting ` +
				`client acquires while X still works: two holders, one lost update. FORCE does not wait for the ` +
				`replica to catch up; neither does the cluster's own failover when a master dies. Fix: a graceful ` +
				`CLUSTER FAILOVER for planned switches (cluster-failover-graceful), and fencing tokens, since an ` +
				`unplanned failover cannot wait.`,
			Expect:   Expect{invalid, invalid, valid},
			Exposure: []checker.Requirement{struck("the FORCE failover", "cluster-failover")},
			Run:      clusterFailoverRun(sut.FailoverForce),
		},
		{
			Name: "cluster-failover-graceful", Lock: "token",
			Summary: "the same lagging replica with a graceful CLUSTER FAILOVER: the master stops writes until the replica has X's grant; one holder at a time",
			Source:  source,
			Explanation: `The schedule of cluster-failover-force-lost-lock, with CLUSTER FAILOVER and no option. n4 asks n1 ` +
				`for a manual failover: n1 stops taking writes and tells n4 its replication offset; n4 waits until it ` +
				`has received everything up to it, X's grant included, 1.5s later, and only then takes over. ` +
				`Meanwhile clients' writes wait (some time out, with an unknown outcome). X's lock is on the new ` +
				`master, the other client keeps waiting, X releases there: one holder at a time, nothing lost. A ` +
				`graceful failover is safe for a lock; it needs the old master alive and answering, which a crash ` +
				`does not grant.`,
			Expect:   Expect{valid, valid, valid},
			Exposure: []checker.Requirement{struck("the graceful failover", "cluster-failover")},
			Run:      clusterFailoverRun(sut.FailoverGraceful),
		},
		{
			Name: "cluster-slot-move", Lock: "token",
			Summary: "Redis Cluster: the lock key's slot is moved to another master twice while clients hold the lock; the key moves with its TTL, clients follow ASK and MOVED",
			Source:  redissonIssue + `3829 (lock keys on a shard switch); redis.io, "Scale with Redis Cluster" (resharding: MIGRATING, IMPORTING, MIGRATE, ASK)`,
			Explanation: `A Redis Cluster of three masters; lock-0's slot is on n1. While A holds the lock, the slot is ` +
				`resharded to the next master as redis-cli --cluster reshard does: the target is marked importing, the ` +
				`source migrating, the key is moved with MIGRATE (which keeps its TTL), and the slot is assigned to the ` +
				`target. A client asking for the key during the move gets ASK and asks the target; after it, MOVED. ` +
				`The waiting client's SET NX finds the key wherever it is and is refused; A's release finds its token ` +
				`and deletes it. Later, while the next holder works, the slot moves on again. One holder at a time: ` +
				`a slot move does not lose a lock (a failover does: cluster-failover-force-lost-lock).`,
			Expect:   Expect{valid, valid, valid},
			Exposure: []checker.Requirement{struck("the slot move", "move-slot")},
			Run: lockrun.Config{
				Workload: workload(2, 2*time.Second, time.Second, 2*time.Second),
				Cluster:  sut.Config{Topology: sut.RedisCluster},
				Script: []nemesis.Step{
					awaiting(at(300*ms, "cluster-failover", "move-slot", nil, map[string]string{"key": clusterKey}), nemesis.Await{LeaseLeft: time.Second}),
					awaiting(at(1500*ms, "cluster-failover", "move-slot", nil, map[string]string{"key": clusterKey}), nemesis.Await{LeaseLeft: time.Second}),
				},
				TimeLimit: 3500 * ms, Recovery: 1500 * ms, Seed: 1,
			},
		},
	}
}
