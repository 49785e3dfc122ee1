package run_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/nemesis"
	"github.com/lockharness/lockharness/run"
	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/sut/docker"
	"github.com/lockharness/lockharness/sut/etcd/etcdtest"
	"github.com/lockharness/lockharness/sut/mariadb/mariadbtest"
	"github.com/lockharness/lockharness/sut/zookeeper/zktest"
	"github.com/lockharness/lockharness/workloads"
)

// A lock names the system it runs on; the run refuses, before starting
// anything, a system it cannot start and a Redis backend for another
// system's lock.
func TestRunRefusesASystemItCannotStart(t *testing.T) {
	reg := locks.NewRegistry()
	never := func([]sut.ClientNode, locks.Options) (locks.Lock, error) {
		return nil, errors.New("never built")
	}
	if err := reg.Register(locks.Info{Name: "elsewhere", System: "nosuch", New: never}); err != nil {
		t.Fatal(err)
	}
	_, err := run.Run(context.Background(), run.Config{
		Lock: "elsewhere", Registry: reg, Seed: 1, TimeLimit: time.Second, Store: t.TempDir(),
	})
	var ue *run.UsageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "runs on nosuch, which this harness cannot start") {
		t.Fatalf("run: %v, want a usage error naming the system", err)
	}
	// etcd's lock on a Redis backend: a usage error, and unsupported, so
	// that a catalogue run on that backend skips it.
	_, err = run.Run(context.Background(), run.Config{
		Lock: "etcd", Seed: 1, TimeLimit: time.Second, Store: t.TempDir(), Backend: docker.Backend(""),
	})
	if !errors.As(err, &ue) || !errors.Is(err, sut.ErrUnsupported) || !strings.Contains(err.Error(), "runs on etcd, started as local processes") {
		t.Fatalf("etcd lock on the Docker backend: %v, want a usage error that is also unsupported", err)
	}
	if info, _ := reg.Lookup("elsewhere"); info.SystemName() != "nosuch" {
		t.Errorf("SystemName %q", info.SystemName())
	}
	if info := (locks.Info{}); info.SystemName() != locks.SystemRedis {
		t.Errorf("a lock naming no system runs on %q, want redis", info.SystemName())
	}
}

// The etcd locks run on a real three-member etcd group, each client
// through its own links: valid with no faults, and valid while a random
// minority member (the leader n1 among them) is partitioned away from
// everyone, clients and peers. The recovery outlasts the 2s TTL: an
// acquire cut off by the partition may have put its waiter's key before
// its answer was lost, and that key stands in the lock's queue until its
// lease expires, up to 2s after the heal. Liveness cannot be judged in a
// shorter recovery (the checker says unknown, rightly: with 1s it did,
// once in a suite run, for a key no client got in that second).
func TestEtcdLocksValid(t *testing.T) {
	etcdtest.Require(t)
	t.Parallel()
	validWithAndWithoutPartition(t, []string{"etcd", "etcd-fenced"}, true, 20, run.Config{
		Seed: 3, TimeLimit: 4 * time.Second, Recovery: 3 * time.Second,
		Workload: workloads.Config{Clients: 4, Keys: 2, TTL: 2 * time.Second},
	})
}

// validWithAndWithoutPartition runs each lock of names on base's
// deployment twice, with no faults and with a partition isolating a node
// every second, and asks for a valid verdict, at least minGrants grants
// and, with the partition, a partition that struck. parallel runs the
// subtests side by side.
func validWithAndWithoutPartition(t *testing.T, names []string, parallel bool, minGrants int, base run.Config) {
	t.Helper()
	for _, name := range names {
		for _, nem := range []string{"", "partition"} {
			t.Run(name+"/"+nem, func(t *testing.T) {
				if parallel {
					t.Parallel()
				}
				cfg := base
				cfg.Lock = name
				if nem != "" {
					cfg.Nemesis = nemesis.Config{Names: []string{nem}, Interval: time.Second, PartitionPatterns: []string{nemesis.PatternIsolate}}
				}
				res := mustRun(t, cfg)
				if res.Verdict != checker.Valid {
					t.Fatalf("verdict %s, want valid: %+v; %+v", res.Verdict, res.Checkers, res.Violations)
				}
				t.Logf("counts %v", res.Counts)
				if n := res.Counts["acquire"]["ok"]; n < minGrants {
					t.Errorf("only %d successful acquires, want %d", n, minGrants)
				}
				if nem != "" && res.Counts["start-partition"]["ok"] == 0 {
					t.Errorf("no partition struck: %+v", res.Counts)
				}
			})
		}
	}
}

// The MariaDB locks run on a real server, each client through its own
// link: valid with no faults, and valid while clients are cut off from it
// (a blackholed link leaves the holder's session, and so its lock, alive
// on the server until the cut ends). Clients hold the key nearly all the
// time (200ms sections, three clients on one key), so that each cut
// strikes a holder: with instant sections a cut could fall between holds
// and the run had no exposure (unknown, 2 of 3 runs in one suite run).
func TestMariaDBLocksValid(t *testing.T) {
	mariadbtest.Require(t)
	t.Parallel()
	// 200ms sections for 4s, cut for part of it: at least 10 grants.
	validWithAndWithoutPartition(t, []string{"mysql-for-update", "mysql-get-lock", "mysql-fenced"}, false, 10, run.Config{
		Seed: 3, TimeLimit: 4 * time.Second, Recovery: time.Second,
		Workload: workloads.Config{Clients: 3, Keys: 1, TTL: 2 * time.Second, Hold: 200 * time.Millisecond, AcquireTimeout: time.Second},
	})
}

// The ZooKeeper locks run on a real three-server ensemble, each client
// through its own links: valid with no faults, and valid while a random
// minority server (the leader n1 among them) is cut off from the clients
// and from the others' quorum links.
func TestZooKeeperLocksValid(t *testing.T) {
	zktest.Require(t)
	t.Parallel()
	validWithAndWithoutPartition(t, []string{"zk", "zk-fenced"}, true, 10, run.Config{
		Seed: 3, TimeLimit: 5 * time.Second, Recovery: 2 * time.Second,
		Workload: workloads.Config{Clients: 4, Keys: 2, TTL: 2 * time.Second},
	})
}
