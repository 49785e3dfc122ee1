package scenarios

import (
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/nemesis"
	lockrun "github.com/lockharness/lockharness/run"
	"github.com/lockharness/lockharness/sut"
)

// Sources of the MariaDB part.
const (
	mariadbForUpdate = `MariaDB Knowledge Base, "SELECT ... FOR UPDATE" and "InnoDB Lock Modes"`
	mariadbKill      = `MariaDB Knowledge Base, "KILL [CONNECTION | QUERY]" (the session's transaction is rolled back and its locks freed)`
	mariadbGetLock   = `MariaDB Knowledge Base, "GET_LOCK" (a named lock is released when its session ends)`
	mariadbWait      = `MariaDB Knowledge Base, "innodb_lock_wait_timeout" (error 1205 ends the wait, and only the statement)`
)

// catalogueMariaDB is the catalogue's part on the lock the critics of
// Redlock point at first, a database row held with SELECT … FOR UPDATE
// (the seeds' "MySQL FOR UPDATE"), on one real MariaDB server, every
// client through its own proxy. It has no lease: it lasts as long as the
// holder's connection. What ends a connection under a working holder, and
// what a holder that stops keeps, is what these scenarios show.
func catalogueMariaDB() []Scenario {
	return []Scenario{
		{
			Name: "mysql-killed-connection", Lock: "mysql-for-update",
			Summary: "A's connection is killed (KILL CONNECTION) while A works; the server frees A's row, B takes it and writes; A's late write loses B's update",
			Source:  mariadbForUpdate + `; ` + mariadbKill + `; ` + kleppmann + `, "Protecting a resource with a lock"`,
			Explanation: `The lock is a transaction holding the key's row with SELECT … FOR UPDATE, released by COMMIT; ` +
				`B waits on the row. At 300ms, while A is in its critical section (it has read the counter), an ` +
				`operator ends A's session with KILL CONNECTION (wait_timeout, a proxy's idle timeout or a server ` +
				`restart do the same). The server rolls A's transaction back and frees the row at once; B's waiting ` +
				`SELECT returns, B reads the counter, works and writes. A knows nothing: it is between two ` +
				`commands, and nothing reaches a client that sends nothing. It then stops for 2s before its write ` +
				`(a GC pause), writes what it computed from its old read, and B's update is lost. Its COMMIT never ` +
				`goes out: the lock's release finds the connection closed ("not held", in the history). A row lock ` +
				`has no deadline, so the lock promised A the row until A's COMMIT; the server broke that promise, ` +
				`and both held it at once (lock-promise invalid), unlike a lease that runs out: the holder had no ` +
				`deadline it could have checked. Fix: a fencing token (mysql-fenced-killed-connection), or doing ` +
				`the protected write inside the same transaction, where the COMMIT that fails takes it back.`,
			Expect:   Expect{invalid, invalid, valid},
			Exposure: killedHolderExposure(),
			Run:      killedConnectionRun(),
		},
		{
			Name: "mysql-fenced-killed-connection", Lock: "mysql-fenced",
			Summary: "the same killed connection with a fencing token from an AUTO_INCREMENT column: the storage rejects A's late write",
			Source:  mariadbForUpdate + `; ` + mariadbKill + `; ` + kleppmann + `, "Making the lock safe with fencing"`,
			Explanation: `The schedule of mysql-killed-connection, but once the row is held each holder takes a token ` +
				`from an AUTO_INCREMENT column inside its transaction (INSERT INTO fences () VALUES (); ` +
				`LAST_INSERT_ID()). InnoDB never hands a value out twice, even when the transaction that took it ` +
				`rolls back, as A's does when its connection is killed; B takes its token after A's, so it is ` +
				`higher. The storage accepts a write only with a token at least as high as any it has seen: B's ` +
				`write is accepted, A's late write is rejected, nothing is lost. The lock still broke its promise ` +
				`(A and B held the row "at once" as far as A knew): fencing makes that harmless, it does not ` +
				`prevent it.`,
			Expect:   Expect{invalid, valid, valid},
			Exposure: killedHolderExposure(),
			Run:      killedConnectionRun(),
		},
		{
			Name: "mysql-lock-wait-timeout", Lock: "mysql-for-update",
			Summary: "A stops 3s holding its row; B, willing to wait 5s, is refused after innodb_lock_wait_timeout (1s) again and again; nothing is lost",
			Source:  mariadbForUpdate + `; ` + mariadbWait + `; ` + kleppmann + ` (on leases)`,
			Explanation: `The server runs with innodb_lock_wait_timeout=1. A holds the row and stops for 3s before ` +
				`its write (a GC pause). A row lock has no lease, so nothing takes the row from a stopped holder: ` +
				`B's SELECT … FOR UPDATE waits, and after 1s the server gives up with error 1205 ("Lock wait ` +
				`timeout exceeded"), a definite refusal, although B would have waited 5s; B asks again, and is ` +
				`refused again, until A wakes, writes and commits. One holder at a time, no update lost, and the ` +
				`key was never free and refused (liveness valid): the price of having no lease is paid in ` +
				`availability, never in safety, for as long as the holder's connection lives. A lease-based lock ` +
				`would have expired and let B in, and A's late write would have lost B's update ` +
				`(gc-pause-stale-write).`,
			Expect:   Expect{valid, valid, valid},
			Exposure: []checker.Requirement{pauseStruckHolder("a holder paused while another waited")},
			Run: lockrun.Config{
				Workload:      workload(2, time.Second, 300*ms, 5*time.Second),
				Script:        []nemesis.Step{holderPause(100*ms, 3*time.Second)},
				Cluster:       sut.Config{ExtraConfig: "innodb_lock_wait_timeout=1"},
				ClientTimeout: time.Second,
				TimeLimit:     5 * time.Second, Recovery: 2 * time.Second, Seed: 1,
			},
		},
		{
			Name: "mysql-clock-jump", Lock: "mysql-for-update",
			Summary: "the server's clock jumps an hour ahead, then back, while A holds its row: a row lock reads no clock, one holder at a time",
			Source:  mariadbForUpdate + `; ` + kleppmann + `, "Breaking Redlock with bad timings"`,
			Explanation: `mariadbd reads the time through libc, so the harness runs it under libfaketime and moves its ` +
				`wall clock: NOW() reads an hour ahead while A holds the row (B waiting), then an hour behind ` +
				`that. A row lock has no expiry to compute from the clock: it lasts until COMMIT or the end of ` +
				`the session, so the jump changes nothing. Redlock's keys expire by the clock of each node, and ` +
				`the same jump on one node gives two holders (redlock-clock-jump). (The clock is not wholly ` +
				`irrelevant to MariaDB: a lock wait's innodb_lock_wait_timeout runs on the wall clock, so a jump ` +
				`can make a waiter give up early or late. That is availability, not safety.)`,
			Expect:   Expect{valid, valid, valid},
			Exposure: []checker.Requirement{struck("the clock jumps while a client held the row", "bump-clock")},
			Run: lockrun.Config{
				Workload: workload(2, time.Second, time.Second, 3*time.Second),
				Script: []nemesis.Step{
					awaiting(at(300*ms, "clock", "bump", []string{"n1"}, map[string]string{"delta": "+1h"}), nemesis.Await{}),
					awaiting(at(1500*ms, "clock", "bump", []string{"n1"}, map[string]string{"delta": "-1h"}), nemesis.Await{}),
				},
				Cluster:       sut.Config{Faketime: true},
				ClientTimeout: time.Second,
				TimeLimit:     4 * time.Second, Recovery: 2 * time.Second, Seed: 1,
			},
		},
	}
}

// killedHolderExposure: the kill struck a holder, which then paused
// before its late write.
func killedHolderExposure() []checker.Requirement {
	return []checker.Requirement{
		struck("the holder's connection killed while it worked", "kill-connection"),
		pauseStruckHolder("the killed holder paused before its write"),
	}
}

// killedConnectionRun: two clients, sections of 1s, B willing to wait 3s.
// A reads at once; at 300ms (or when a holder first works) A's session is
// killed (finding it takes a probe of InnoDB's lock waits, ≈150ms); B's
// waiting SELECT returns, B reads (the counter A has not written yet),
// works 1s and writes by ≈1.5s. A, at its safe point at 1.0s, is paused
// 2s and writes at ≈3.0s, after B: with fencing it is rejected. A's
// release then finds its connection gone. B reaches its safe point at
// least 400ms after A, so the pause strikes A.
func killedConnectionRun() lockrun.Config {
	return lockrun.Config{
		Workload: workload(2, time.Second, time.Second, 3*time.Second),
		Script: []nemesis.Step{
			at(300*ms, "kill-connection", "holder", nil, nil),
			holderPause(300*ms, 2*time.Second),
		},
		ClientTimeout: time.Second,
		TimeLimit:     4 * time.Second, Recovery: 2 * time.Second, Seed: 1,
	}
}
