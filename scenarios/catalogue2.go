package scenarios

import (
	"slices"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/nemesis"
	lockrun "github.com/lockharness/lockharness/run"
	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/workloads"
)

// Catalogue returns every scenario: the literature's (catalogueOne), then
// the failures lock users report in issue trackers (catalogueTwo), then
// those of a Redis Cluster (catalogueCluster). It
// returns new values each time: callers may change them.
func Catalogue() []Scenario {
	all := slices.Concat(catalogueOne(), catalogueTwo(), catalogueCluster(), catalogueConsensus(), catalogueZooKeeper(), catalogueMariaDB())
	kinds := declaredKinds()
	for i := range all {
		all[i].Kinds = kinds[all[i].Name]
	}
	return all
}

// Sources of part two: public issue threads.
const (
	redissonIssue = "redisson/redisson#"
)

// catalogueTwo is the catalogue's second part: what goes wrong in
// production besides the Kleppmann/antirez debate, each scenario citing
// the public issue it reproduces.
func catalogueTwo() []Scenario {
	var extend []Scenario
	for _, l := range []struct {
		lock  string
		nodes int
		what  string
	}{
		{"token", 1, "its compare-and-PEXPIRE script finds no key (GET is nil, not A's token) and answers 0"},
		{"redislock", 1, "bsm/redislock's Refresh script finds no key and returns ErrNotObtained"},
		{"redlock", 3, "no node has A's token, so no quorum extends it"},
		{"redsync", 3, "go-redsync's Extend finds A's token on no node and fails"},
	} {
		extend = append(extend, Scenario{
			Name: "extend-after-expiry-" + l.lock, Lock: l.lock,
			Summary: "A's lease expires during a pause while nobody else can take the lock; A extends it before writing: " + l.lock + " must refuse",
			Source:  `redis-py#4279 and redlock-rb#36 (extending an expired lock reports success; PEXPIRE on a missing key)`,
			Explanation: `Each client extends its lease right before it writes, and writes only if the lock agrees (the ` +
				`check careful clients make). A is paused 1.5s (1.5 TTLs) inside its critical section while B is cut ` +
				`off from the lock's nodes: A's key expires and nobody takes it. A wakes up and extends: ` + l.what +
				`, so A skips its write, and B, healed, acquires normally. A lock whose extend reports success here ` +
				`(PEXPIRE of a missing key, "extended" by a client that does not check the reply, or a client-side ` +
				`check of the old deadline only) tells A it holds a lock that exists nowhere: B then acquires while ` +
				`A writes, and the checker reports two holders. The renew is recorded as A's own operation, so a ` +
				`success after the lease had lapsed counts as a new grant, and any overlap with B is a violation.`,
			Expect:   Expect{valid, valid, valid},
			Exposure: []checker.Requirement{pauseOutlivedLease("a pause of 1.5 TTLs, with nobody else able to acquire")},
			Run: func() lockrun.Config {
				links := allClientLinks(2, l.nodes)[l.nodes:] // c1's links
				w := workload(2, time.Second, 300*ms, time.Second)
				w.RenewBeforeWrite = true
				return lockrun.Config{
					Nodes:    l.nodes,
					Workload: w,
					Script: []nemesis.Step{
						at(0, "partition", "start", links, map[string]string{"pattern": nemesis.PatternIsolate, "groups": "c1 cut off from the lock's nodes"}),
						holderPause(100*ms, 1500*ms),
						at(2100*ms, "partition", "stop", links, nil),
					},
					TimeLimit: 3 * time.Second, Recovery: time.Second, Seed: 1,
				}
			}(),
		})
	}
	return append([]Scenario{
		{
			Name: "flushall-lock-vanishes", Lock: "token",
			Summary: "an operator's FLUSHALL deletes A's lock while A works; B acquires at once; both hold",
			Source:  redissonIssue + `3829 (lock keys lost on a shard switch); redis.io, FLUSHALL command page`,
			Explanation: `A holds the lock (TTL 2s) and works for 600ms. At 300ms an operator, a test script or another ` +
				`application runs FLUSHALL on the lock's node: A's key is gone, and nothing tells A. B, waiting, ` +
				`acquires at once and reads the counter A has not written yet; both write the same value: two holders ` +
				`and a lost update. A's release then finds B's token and is refused: the lock lost A's lease before ` +
				`its deadline. A lock is only as durable as its key: anything that deletes keys (FLUSHALL, a key ` +
				`eviction, a migration that drops them) breaks the promise. Fix: keep lock keys on a node nothing ` +
				`else writes to, rename FLUSHALL/FLUSHDB away (rename-command), and fence the resource.`,
			Expect:   Expect{invalid, invalid, valid},
			Exposure: []checker.Requirement{struck("the FLUSHALL", "flush")},
			Run: lockrun.Config{
				Workload:  workload(2, 2*time.Second, 600*ms, time.Second),
				Script:    []nemesis.Step{awaiting(at(300*ms, "data-loss", "flush", []string{"n1"}, nil), nemesis.Await{LeaseLeft: time.Second})},
				TimeLimit: 1500 * ms, Recovery: 1500 * ms, Seed: 1,
			},
		},
		{
			Name: "fence-counter-deleted", Lock: "fenced",
			Summary: "the fencing counter is deleted mid-run; the next grant's token goes back to 1; storage refuses every holder after it",
			Source:  redissonIssue + `6510 (RFencedLock: the fencing token goes backwards); ` + kleppmann + `, "Making the lock safe with fencing"`,
			Explanation: `The fenced lock numbers its grants with INCR on a counter beside the lock key. At 1.05s the ` +
				`counter is deleted (a FLUSHALL, an eviction or a failover to a replica that missed it does the same). ` +
				`The lock itself works on: one holder at a time. But the next grant's token starts again at 1, below ` +
				`the highest token the storage has seen, so the storage refuses that holder's write, and the next ` +
				`one's, until the tokens climb past the old ones. Fencing only works if the token never goes back: ` +
				`the resource checker flags every grant whose token is not greater than one granted before it. ` +
				`Fix: keep the counter where it cannot be lost (persisted, replicated synchronously, or derived ` +
				`from a consensus system's revision, as etcd's and ZooKeeper's locks do).`,
			Expect:   Expect{valid, invalid, valid},
			Exposure: []checker.Requirement{struck("the deleted fencing counter", "delete-keys")},
			Run: lockrun.Config{
				Workload: workload(2, time.Second, 300*ms, time.Second),
				Script: []nemesis.Step{at(1050*ms, "data-loss", "delete", []string{"n1"},
					map[string]string{"keys": locks.FenceKey(workloads.Key(0))})},
				TimeLimit: 2 * time.Second, Recovery: time.Second, Seed: 1,
			},
		},
		{
			Name: "failover-fence-repeats", Lock: "fenced",
			Summary: "the failover-lost-lock schedule with a fenced lock: the promoted replica hands out X's token again; both writes are accepted",
			Source:  redissonIssue + `6510 (RFencedLock: the fencing token goes backwards after a failover); ` + distlock + `, "Why Failover-based Implementations Are Not Enough"`,
			Explanation: `The failover of failover-lost-lock, with a lock that draws a fencing token from INCR on the ` +
				`master. X's grant (token 2) and its INCR never reach the replica, which is promoted: its counter ` +
				`still says 1. When the previous holder's replicated grant expires there, the other client acquires ` +
				`and gets token 2 again. Two holders with the same token: the storage, which accepts equal tokens ` +
				`(one holder may write twice), takes both writes and one update is lost. A fencing counter that ` +
				`lives in the lock's failover-based store is lost with it; the resource checker flags the repeated ` +
				`token. Fix: a fencing counter in a store that never loses an acknowledged write.`,
			Expect:   Expect{invalid, invalid, valid},
			Exposure: []checker.Requirement{struck("the promotion", "promote")},
			Run:      manualFailoverRun(1, 2*time.Second, 1400*ms, 1700*ms, 1200*ms),
		},
		{
			Name: "sentinel-wait-stale-replica-promoted", Lock: "token-wait",
			Summary: "WAIT 1 under Sentinel: n3 acknowledges X's grant, n2 (stale, and preferred for failover) is promoted without it; B acquires while X holds",
			Source:  redissonIssue + `2669 (why RedissonRedLock was deprecated); redis-doc#1864 (WAIT does not make failover safe)`,
			Explanation: `Master n1, replicas n2 and n3, three sentinels; the lock grants only when WAIT 1 says a replica ` +
				`has the SET. While A holds, n2 stops receiving n1's writes (its replication credentials are ` +
				`refused) but still reports itself a healthy replica, and an operator prefers it for failover ` +
				`(replica-priority 10 against 100). X's grant at 1s is acknowledged by n3: WAIT 1 returns 1. Then n1 ` +
				`is cut off from the sentinels and its replicas (clients still reach it) and X is paused in its ` +
				`critical section. Sentinel promotes the preferred replica, n2, which never saw X's grant or A's ` +
				`release; n3 resynchronises from it and loses the grant too. When A's old grant expires on n2, B ` +
				`acquires, and n3 acknowledges, while X's lease still runs: two holders. WAIT counts ` +
				`acknowledgements; it does not decide which replica Sentinel promotes (priority first, then the ` +
				`replication offset). Fix: a consensus system, or fencing tokens checked by the storage.`,
			Expect: Expect{invalid, invalid, valid},
			Exposure: []checker.Requirement{struck("the stale replica", "start-stale-replica"),
				struck("the isolation of the master", "start-partition"), pauseStruckHolder("the holder's pause")},
			Run: func() lockrun.Config {
				c := sentinelRun("")
				sentinels := []string{sut.LinkName(sut.SentinelsFrom, "n1")}
				c.Script = []nemesis.Step{
					awaiting(at(300*ms, "stale-replica", "start", []string{"n2"}, map[string]string{"priority": "10"}), nemesis.Await{}),
					// X's grant, not A's: A's lease has at most 5.4s left after
					// its release at 1s.
					awaiting(at(1300*ms, "partition", "start", sentinels,
						map[string]string{"pattern": nemesis.PatternIsolate, "groups": "n1 cut off from its replicas and the sentinels; clients reach every node"}),
						nemesis.Await{LeaseLeft: 5500 * ms}),
					holderPause(1500*ms, 5700*ms),
					at(6800*ms, "partition", "stop", sentinels, nil),
					at(6800*ms, "kill", "kill", []string{"n1"}, nil),
					at(6800*ms, "kill", "restart", []string{"n1"}, nil),
				}
				return c
			}(),
		},
		{
			Name: "script-flush-evalsha-falls-back", Lock: "reentrant",
			Summary: "SCRIPT FLUSH four times while the watchdog lock is in use: every EVALSHA gets NOSCRIPT, falls back to EVAL, nothing breaks",
			Source:  `nestjs-redis#15 and redlock-rb#27 (NOSCRIPT after a restart or failover); go-redis, Script.Run`,
			Explanation: `Every operation of the Redisson-style lock (acquire, release, the watchdog's renewals) is a Lua ` +
				`script sent by SHA with EVALSHA. Four times during the run the node's script cache is emptied with ` +
				`SCRIPT FLUSH, as a restart or a failover to a replica that never ran the scripts would. The next ` +
				`EVALSHA of each script gets NOSCRIPT; go-redis's Script.Run then sends the script's source with EVAL, ` +
				`which runs it and caches it again. The lock never notices: one holder at a time, no update lost. ` +
				`Every lock in the harness runs its scripts through Script.Run (redsync's adapter and bsm/redislock ` +
				`do the same fallback), so all of them recover; a client that only sends EVALSHA fails every ` +
				`scripted operation until it loads its scripts again, and one that treats that failure as "not ` +
				`held" gives up a lease it still has.`,
			Expect:   Expect{valid, valid, valid},
			Exposure: []checker.Requirement{struck("SCRIPT FLUSH", "script-flush")},
			Run: lockrun.Config{
				Workload: workload(2, time.Second, 400*ms, time.Second),
				Script: []nemesis.Step{
					at(250*ms, "script-flush", "flush", []string{"n1"}, nil),
					at(650*ms, "script-flush", "flush", []string{"n1"}, nil),
					at(1050*ms, "script-flush", "flush", []string{"n1"}, nil),
					at(1450*ms, "script-flush", "flush", []string{"n1"}, nil),
				},
				TimeLimit: 2 * time.Second, Recovery: time.Second, Seed: 1,
			},
		},
		{
			Name: "watchdog-stall-stale-write", Lock: "reentrant",
			Summary: "the holder's watchdog is starved for 1.5 TTLs while the holder keeps working; the lease runs out; B acquires; A's write loses B's update",
			Source:  redissonIssue + `5697 and #2515 (the watchdog stops renewing while the holder still works)`,
			Explanation: `A Redisson-style lock whose watchdog renews the 1s lease every third of a second while the ` +
				`holder works (3s here). At 0.5s the renewer thread is starved for 1.5s (1.5 TTLs): a busy thread ` +
				`pool, a reconnect, a scheduler that runs it late. The holder itself is not paused and goes on ` +
				`working. The last renewal was at about 0.33s, so the lease runs out at about 1.33s; B, waiting, ` +
				`acquires then, and reads the counter A has not written yet. When the watchdog runs again its ` +
				`renewal is refused (B owns the key) and it gives up, but nobody tells A: A writes at 3s, B at about ` +
				`4.3s, both the same value. The lock kept its promise (A's lease had ended); the holder outlived ` +
				`it without a single pause of its own. A watchdog makes long critical sections possible only as ` +
				`long as it runs on time. Fix: fencing tokens checked by the storage, or a holder that checks its ` +
				`lease before it writes.`,
			Expect:   Expect{valid, invalid, valid},
			Exposure: []checker.Requirement{struck("the stalled watchdog", "stall-renewers")},
			Run: lockrun.Config{
				Workload:  workload(2, time.Second, 3*time.Second, time.Second),
				Script:    []nemesis.Step{at(500*ms, "renewer-stall", "stall", nil, map[string]string{"duration": (1500 * ms).String()})},
				TimeLimit: 4500 * ms, Recovery: 1500 * ms, Seed: 1,
			},
		},
		{
			Name: "unlock-races-watchdog-renewal", Lock: "reentrant",
			Summary: "the holder unlocks while its watchdog's renewal is held up; the renewal lands after the unlock began; no orphan, no false overlap",
			Source:  redissonIssue + `7272 (a watchdog renewal that outlives unlock keeps an orphan lock alive)`,
			Explanation: `A Redisson-style lock whose watchdog renews the 1s lease every third of a second. From 0.2s to ` +
				`0.8s the watchdog's renewals are held up (renewer-stall), so A's renewal due at about 0.33s is still ` +
				`pending when A unlocks at about 0.4s. This lock's unlock stops the watchdog and waits for it before it ` +
				`deletes the key, so the late renewal lands while the unlock is in progress, extends A's own key for an ` +
				`instant, and the unlock then deletes it: B acquires at about 0.8s and nobody holds an orphan. The ` +
				`history has a renewal that succeeded after A asked to release; the checker must not read it as A ` +
				`holding the lock past its release (a false overlap with B) nor as someone else's renewal. In ` +
				`redisson#7272 the renewal is armed after the unlock has run, and renews a key nobody holds forever; ` +
				`this lock cannot do that, since it starts its watchdog before returning the grant and stops it ` +
				`before unlocking.`,
			Expect:   Expect{valid, valid, valid},
			Exposure: []checker.Requirement{struck("the stalled watchdog", "stall-renewers")},
			Run: lockrun.Config{
				Workload:  workload(2, time.Second, 400*ms, time.Second),
				Script:    []nemesis.Step{at(200*ms, "renewer-stall", "stall", nil, map[string]string{"duration": (600 * ms).String()})},
				TimeLimit: 2 * time.Second, Recovery: time.Second, Seed: 1,
			},
		},
		{
			Name: "abandoned-wait-orphan-lock", Lock: "reentrant-orphan-watchdog",
			Summary: "a waiter stops waiting, but its wait goes on; granted after it let go, its watchdog renews a lock nobody holds: the orphan blocks everyone",
			Source:  redissonIssue + `7272 (a watchdog renewal that outlives unlock keeps an orphan lock alive); #2714 and #4368 (an interrupted tryLock keeps renewing)`,
			Explanation: `A deliberately buggy Redisson-style lock (reentrant-orphan-watchdog): an acquire that may wait ` +
				`runs in the background, as Redisson's lockAsync does, and a caller that stops waiting (its 50ms are up, ` +
				`lockInterruptibly is interrupted) gets an unknown outcome while the wait goes on. Each acquire runs as ` +
				`its own owner (an async caller's pool thread). The holder crashes holding the lock, so the key stays ` +
				`until its lease runs out, up to a second later; meanwhile both clients' acquires give up one after ` +
				`another, and each time the client releases what it asked for, as a careful client does after an ` +
				`unknown outcome: the unlock finds no hold ("not held", true then) and no watchdog to cancel ` +
				`(cancelExpirationRenewal finds no entry). When the key expires, the abandoned waits try again, and ` +
				`one is granted; its completion callback arms a watchdog (scheduleExpirationRenewal), which renews the ` +
				`key every TTL/3, successfully, for an owner no caller knows of. Nobody acquires again until the ` +
				`client is closed at the end. The lock promise holds (one holder at a time, no false "not held": the ` +
				`client's "not held" answers are about its own other leases), and so does the resource. The liveness ` +
				`checker names the orphan: the release that let go, the renewal that kept the key, how many acquires ` +
				`were not granted. A watchdog renewal that the history shows after its client's release completed is ` +
				`a grant to a process that has let go; one concurrent with the release is absorbed by it (see ` +
				`unlock-races-watchdog-renewal, where the correct lock is immune). Fix (redisson PR #7277): arm the ` +
				`watchdog before the grant can be returned, cancel it before unlocking, and cancel the wait of a ` +
				`caller that stops waiting, unlocking what it may have been granted.`,
			Expect:   Expect{valid, valid, invalid},
			Exposure: []checker.Requirement{crashedHolding("the holder's crash, which leaves its key to expire")},
			Run:      abandonedWaitRun(),
		},
		{
			Name: "ghost-lock-retried-acquire", Lock: "reentrant",
			Summary: "the answer to B's granted lock script is lost; go-redis runs it again: hold count 2; every release B is told succeeded leaves the lock held, and A never gets it again",
			Source:  `etcd-io/etcd#22082 (a retried request runs twice); go-redis, Options.MaxRetries (3 by default; Redisson's retryAttempts, 3 as well)`,
			Explanation: `The lock clients' go-redis retries a command up to 3 times, on a network error or a timeout. ` +
				`The holder A is cut off at 0.5s, so its watchdog's renewals stall and its lease runs out by 1.5s. ` +
				`B waits, idle: subscribed to the lock's channel, with a timer on A's PTTL. From 0.8s to 2.0s the ` +
				`replies on B's link are lost (toxiproxy drops them; the commands run). When A's lease has run out ` +
				`B's timer fires: its lock script runs, creates the hash with B's hold count 1, and the answer is ` +
				`lost. At 2.0s the stalled connection is closed and go-redis, seeing a network error, runs the script ` +
				`again: the key is B's own, so the script counts a second hold and grants. B is told "acquired" ` +
				`(true). From then on B's hold count is one more than B knows: each release takes it from 2 to 1, the ` +
				`unlock answers "still held by you" and the lock reports a successful release while the key stays; ` +
				`B's next acquire re-enters it at once (same owner). A, let back at 2.5s, is refused to the end: a ` +
				`ghost hold that only B's client stopping (its key then expires) ends. The checkers' promises hold: ` +
				`one holder at a time, no stale write, and someone (B) acquires through the recovery period, so ` +
				`liveness is valid; starving one client is not a promise the liveness checker judges. A ` +
				`ghost-lock-retries-off run shows the difference: there A acquires at B's next release. With SET NX ` +
				`(the token lock) a retried grant answers nil instead: "not acquired" for a lock the client holds, ` +
				`blocking everyone for a TTL, and a definite refusal while no process holds a claim counts in the ` +
				`liveness checker's unavailable-ms. This harness cannot stage that one: a SET NX client polls, so ` +
				`its first try inside the window is a refusal, and a retry on a new connection stalls on the ` +
				`connection's handshake while replies are lost. Fix: no retries for lock commands, or commands whose ` +
				`second run means the same as the first.`,
			Expect:   Expect{valid, valid, valid},
			Exposure: []checker.Requirement{struck("the lost replies", "start-lose-replies")},
			Run:      ghostRun(3),
		},
		{
			Name: "ghost-lock-retries-off", Lock: "reentrant",
			Summary: "the same lost answer with go-redis retries off: B's acquire has an unknown outcome, B releases what it may hold, no ghost",
			Source:  `go-redis, Options.MaxRetries (-1 turns retries off); ` + distlock + `, "Correct Implementation with a Single Instance"`,
			Explanation: `The schedule of ghost-lock-retried-acquire with go-redis's retries off. B's lock script is granted ` +
				`once A's lease has run out, and its answer is lost; at 2.0s the stalled connection is closed and the ` +
				`lock reports the acquire's outcome as unknown, which is the truth. B then releases what it may hold, ` +
				`as a client does after an unknown outcome: the unlock finds B's hold count 1, deletes the key and ` +
				`wakes the waiters. A, let back at 2.5s, acquires at once. Nobody is told anything false, and no key ` +
				`outlives its owner's knowledge of it.`,
			Expect:   Expect{valid, valid, valid},
			Exposure: []checker.Requirement{struck("the lost replies", "start-lose-replies")},
			Run:      ghostRun(0),
		},
		{
			Name: "eviction-lock-vanishes", Lock: "token",
			Summary: "the lock's Redis doubles as a cache: under maxmemory with allkeys-lru, filling it evicts A's lock key; B acquires; both hold",
			Source:  `redis/redis#9105 and RedLock.net#101 (lock keys evicted under memory pressure)`,
			Explanation: `The lock's node is also used as a cache, with maxmemory and the allkeys-lru eviction policy. A ` +
				`holds the lock (TTL 2s) and works for 600ms. At 300ms the cache fills up: 16MB of other keys against a ` +
				`limit 1MB above what the node used. Redis evicts the least recently used keys to make room, and A's ` +
				`lock key, untouched since A set it, is among them. B acquires at once and reads the counter A has not ` +
				`written yet: two holders and a lost update. Any eviction policy that may pick the lock key does this; ` +
				`volatile-lru and volatile-ttl are worse, since lock keys are often the only keys with a TTL. Fix: a ` +
				`node (or at least maxmemory-policy noeviction) for locks alone; see eviction-refused-noeviction.`,
			Expect:   Expect{invalid, invalid, valid},
			Exposure: []checker.Requirement{struck("the memory pressure", "start-memory-pressure")},
			Run: lockrun.Config{
				Workload: workload(2, 2*time.Second, 600*ms, time.Second),
				Script: []nemesis.Step{
					awaiting(at(300*ms, "memory-pressure", "start", []string{"n1"}, map[string]string{"policy": "allkeys-lru"}), nemesis.Await{LeaseLeft: time.Second}),
					at(1000*ms, "memory-pressure", "stop", []string{"n1"}, nil),
				},
				TimeLimit: 1500 * ms, Recovery: 1500 * ms, Seed: 1,
			},
		},
		{
			Name: "eviction-refused-noeviction", Lock: "token",
			Summary: "the same memory pressure with maxmemory-policy noeviction: the node refuses writes (OOM) instead; nobody is told they hold a lock in error",
			Source:  `redis/redis#9105; redis.io, "Key eviction" (noeviction)`,
			Explanation: `The schedule of eviction-lock-vanishes, with maxmemory-policy noeviction. When the filler reaches ` +
				`the limit Redis refuses writes that need memory with an OOM error instead of evicting, and the node ` +
				`stays full until the fault stops at 1s. A's lock key stays: A keeps its lease and writes in time. ` +
				`A's release (DEL frees memory) still works, but every SET NX after it, A's and B's, is refused with ` +
				`OOM, a definite failure: nobody holds the lock until memory is freed. The lock is unavailable while ` +
				`memory is full, and safe.`,
			Expect: Expect{valid, valid, valid},
			Exposure: []checker.Requirement{struck("the memory pressure", "start-memory-pressure"),
				attempted("acquires asked for while the node was full", "start-memory-pressure")},
			Run: lockrun.Config{
				Workload: workload(2, 2*time.Second, 600*ms, time.Second),
				Script: []nemesis.Step{
					awaiting(at(300*ms, "memory-pressure", "start", []string{"n1"}, map[string]string{"policy": "noeviction"}), nemesis.Await{LeaseLeft: time.Second}),
					at(1000*ms, "memory-pressure", "stop", []string{"n1"}, nil),
				},
				TimeLimit: 1500 * ms, Recovery: 1500 * ms, Seed: 1,
			},
		},
		{
			Name: "retried-release-deletes-next-holder", Lock: "set-nx-ex",
			Summary: "A's DEL runs but its reply is lost; B acquires; go-redis retries the DEL, which deletes B's lock; A acquires while B holds",
			Source:  `etcd-io/etcd#22082 (a retried request runs twice); go-redis, Options.MaxRetries (3 by default)`,
			Explanation: `The lock clients' go-redis retries a command up to 3 times (its default; the harness turns retries ` +
				`off everywhere else). A holds the lock (B is kept off the node meanwhile) and, after a pause of 500ms past its ` +
				`write, releases it with DEL while the replies on A's link are being lost (for 1.2s from the start ` +
				`of that pause): the DEL runs, A's key is gone, and B acquires at once. When the window closes A's ` +
				`stalled connection is closed and go-redis, seeing a network error, sends the DEL again: it deletes ` +
				`B's key. A's release reports success, A's next acquire succeeds while B still works, and both write ` +
				`the same value. A retry is only safe for a command that means the same thing the second time; DEL ` +
				`of a key that someone else may hold by then does not. Fix: retries off for lock commands, and a ` +
				`release that deletes only its own token (retried-release-says-not-held shows what is left then).`,
			Expect:   Expect{invalid, invalid, valid},
			Exposure: []checker.Requirement{struck("the lost replies", "start-lose-replies")},
			Run:      retryRun(3),
		},
		{
			Name: "retried-release-says-not-held", Lock: "token",
			Summary: "the same lost reply with a token lock: the retried compare-and-delete finds B's token and tells A its lease was gone",
			Source:  `etcd-io/etcd#22082 (a retried request runs twice); go-redis, Options.MaxRetries (3 by default)`,
			Explanation: `The schedule of retried-release-deletes-next-holder with the token lock, whose release deletes the key ` +
				`only if it still holds the caller's token. A's first release runs and deletes A's key; its reply is ` +
				`lost; B acquires; go-redis sends the release again, which finds B's token and answers 0. B's lock is ` +
				`safe, but the lock now tells A "not held" about a lease that was A's until A released it: a definite ` +
				`answer that is false, which the checker reports as a lease lost before its deadline. A client that ` +
				`acts on it (alerts, compensates, retries its work) acts on a lie; the same retry of an acquire turns ` +
				`a granted lock into "not acquired" (a ghost lock that blocks everyone until it expires). Fix: no ` +
				`retries for lock commands; a lost reply is an unknown outcome (release-reply-lost-retries-off).`,
			Expect:   Expect{invalid, valid, valid},
			Exposure: []checker.Requirement{struck("the lost replies", "start-lose-replies")},
			Run:      retryRun(3),
		},
		{
			Name: "release-reply-lost-retries-off", Lock: "token",
			Summary: "the same lost reply with retries off: A's release has an unknown outcome, nobody is told anything false",
			Source:  `go-redis, Options.MaxRetries (-1 turns retries off); ` + distlock + `, "Correct Implementation with a Single Instance"`,
			Explanation: `The schedule of retried-release-says-not-held with go-redis's retries off. A's release runs and its ` +
				`reply is lost; when the connection is closed the client gets a network error and reports the release's ` +
				`outcome as unknown, which is the truth. B acquires once A's key is gone; A's next acquire waits for B. ` +
				`One holder at a time, and no definite answer that is false.`,
			Expect:   Expect{valid, valid, valid},
			Exposure: []checker.Requirement{struck("the lost replies", "start-lose-replies")},
			Run:      retryRun(0),
		},
	}, extend...)
}

// abandonedWaitRun: two clients, TTL 1s, sections of 300ms, acquires that
// wait 50ms. The holder crashes at its safe point, so its key stays until
// its lease runs out (up to a second later), while both clients' acquires
// give up one after another, leaving a background wait each. When the key
// expires those waits try at once (their PTTL timers end together), and
// one of them is granted: an abandoned one, unless the one a caller still
// waits for wins (a few percent: two among dozens), and then the next
// crash, of that holder, tries again. A release is no such chance: the
// releaser's next acquire gets the key before any waiter hears of it.
// The lock is a deliberately buggy variant, in a registry of its own.
func abandonedWaitRun() lockrun.Config {
	return lockrun.Config{
		Registry: locks.WithDeliberateBugs(),
		Workload: workload(2, time.Second, 300*ms, 50*ms),
		Script: []nemesis.Step{
			holderCrash(100 * ms),
			holderCrash(1700 * ms),
			holderCrash(3300 * ms),
		},
		TimeLimit: 4 * time.Second, Recovery: 1500 * ms, Seed: 1,
	}
}

// ghostRun: two clients of the reentrant lock, TTL 1s, sections of 1.2s,
// acquires that wait 2.5s, go-redis's read timeout 1.5s and MaxRetries
// retries (0: off). c1 is cut off at first, so c0 (A) holds. At 0.5s A is
// cut off: its watchdog's renewals stall, and its lease runs out at its
// last renewal plus the TTL, between 1.17s and 1.5s. c1 (B) is let back at
// 0.55s: its first refusal comes after A's last renewal, so its timer (on
// A's PTTL) fires when A's lease has run out, not before; B waits idle
// until then (a subscription and a timer). From 0.8s to 2.0s the replies
// on B's link are lost: B's lock script, when its timer fires, runs on the
// idle connection, is granted, and its answer is lost. At 2.0s the
// stalled connection is closed; the read timeout (1.5s) has not passed, so
// the grant is B's only try inside the window (a new connection made in
// the window would stall on its handshake anyway). A is let back at 2.5s.
func ghostRun(retries int) lockrun.Config {
	w := workload(2, time.Second, 1200*ms, 2500*ms)
	c0, c1 := []string{"c0->n1"}, []string{"c1->n1"}
	return lockrun.Config{
		Workload:      w,
		ClientRetries: retries,
		ClientTimeout: 1500 * ms,
		Script: []nemesis.Step{
			at(0, "partition", "start", c1, map[string]string{"pattern": nemesis.PatternIsolate, "groups": "c1 cut off from n1, so that c0 holds"}),
			at(500*ms, "partition", "start", c0, map[string]string{"pattern": nemesis.PatternIsolate, "groups": "the holder c0 cut off from n1: its lease runs out"}),
			at(550*ms, "partition", "stop", c1, nil),
			at(800*ms, "lose-replies", "start", c1, map[string]string{"duration": (1200 * ms).String()}),
			at(2500*ms, "partition", "stop", c0, nil),
		},
		TimeLimit: 4500 * ms, Recovery: 1500 * ms, Seed: 1,
	}
}

// retryRun: two clients, TTL 5s, sections of 1.2s, acquires that wait
// 3s, go-redis's MaxRetries for the lock clients set to retries (0: off).
// The schedule follows the holder rather than the clock, so that it holds
// on a loaded machine. c1 (B) is kept off the node, so c0 (A) holds,
// section after section. A is paused 50ms after its first write (its
// release then puts the release script in the node's cache: the release
// that matters must be an EVALSHA that runs, not one that gets NOSCRIPT),
// and 500ms after its second; as that second pause begins, the replies on
// A's link start to be lost, for 1.2s, and B is let back. A releases 500ms
// later: the release runs, its reply is lost, B takes the lock; when the
// window closes A's stalled connection is closed and a client with
// retries sends its release again, 700ms into B's 1.2s section. The
// margins are for a loaded machine: A's release may reach the node up to
// 700ms late and still run inside the window, and the window may close up
// to 500ms late and still find B holding (with sections of 300ms, B had
// let go by then in 2 of 20 soak runs under stress-ng, and A's next grant
// no longer overlapped B's); B's acquire outwaits both. The TTL is long so
// that A's lease certainly outlasts the retried release's answer (a
// "not held" after the deadline is no evidence): with 3s a section
// stretched by load left it 60ms short in 1 of 20. The lock clients'
// read timeout (3s) outlasts the cut: B's first acquire stays stalled
// until B is let back, and is then sent again (a network error), instead
// of timing out into an unknown outcome whose give-back a naive lock's DEL
// would send, deleting A's key, when the cut ends.
func retryRun(retries int) lockrun.Config {
	c1 := []string{"c1->n1"}
	c0 := []string{"c0->n1"}
	afterWrite := func(d time.Duration) nemesis.Step {
		return at(100*ms, "client-pause", "holder", nil,
			map[string]string{"duration": d.String(), "at": string(nemesis.PauseAfterWrite)})
	}
	return lockrun.Config{
		Workload:      workload(2, 5*time.Second, 1200*ms, 3*time.Second),
		ClientRetries: retries,
		ClientTimeout: 3 * time.Second,
		Script: []nemesis.Step{
			at(0, "partition", "start", c1, map[string]string{"pattern": nemesis.PatternIsolate, "groups": "c1 cut off from n1, so that c0 holds"}),
			afterWrite(50 * ms),
			afterWrite(500 * ms),
			at(100*ms, "lose-replies", "start", c0, map[string]string{"duration": (1200 * ms).String()}),
			at(100*ms, "partition", "stop", c1, nil),
		},
		TimeLimit: 4 * time.Second, Recovery: 1500 * ms, Seed: 1,
	}
}
