package run_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/nemesis"
	"github.com/lockharness/lockharness/run"
	"github.com/lockharness/lockharness/scenarios"
	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/sut/etcd/etcdtest"
	"github.com/lockharness/lockharness/sut/redis/redistest"
	"github.com/lockharness/lockharness/sut/zookeeper/zktest"
	"github.com/lockharness/lockharness/workloads"
)

// TestDerivedRecovery pins the rule (docs/faults.md, "The recovery
// period"): the slowest settle of the faults used, one lease term for the
// leases in force at the heal, one more (or the acquire timeout) for a
// grant after them.
func TestDerivedRecovery(t *testing.T) {
	const ms = time.Millisecond
	ttl := func(d time.Duration) workloads.Config { return workloads.Config{TTL: d} }
	cases := []struct {
		name string
		cfg  run.Config
		want time.Duration
	}{
		{"no faults, default TTL", run.Config{Lock: "token"}, 2 * time.Second},
		{"short TTL counts a second", run.Config{Lock: "token", Workload: ttl(200 * ms)}, 2 * time.Second},
		{"long TTL", run.Config{Lock: "token", Workload: ttl(6400 * ms)}, 12800 * ms},
		{"acquire timeout longer than a TTL", run.Config{Lock: "token", Workload: workloads.Config{TTL: time.Second, AcquireTimeout: 5 * time.Second}}, 6 * time.Second},
		{"partition: the client timeout", run.Config{Lock: "token", Nemesis: nemesis.Config{Names: []string{"partition"}}}, 2250 * ms},
		{"client crash: the lease term", run.Config{Lock: "token", Nemesis: nemesis.Config{Names: []string{"client-crash"}}}, 2 * time.Second},
		{"client pause outlasts the heal", run.Config{Lock: "token", Nemesis: nemesis.Config{Names: []string{"client-pause"}, ClientPause: 1500 * ms}}, 3500 * ms},
		{"clock: the largest bump", run.Config{Lock: "token", Nemesis: nemesis.Config{Names: []string{"partition", "clock"}}}, time.Minute + 2*time.Second},
		{"clock: a smaller bump", run.Config{Lock: "token", Nemesis: nemesis.Config{Names: []string{"clock"}, ClockBump: 3 * time.Second, Interval: 2 * time.Second}}, 5 * time.Second},
		{"clock: a fast drift", run.Config{Lock: "token", Nemesis: nemesis.Config{Names: []string{"clock"}, ClockBump: time.Second, Interval: 4 * time.Second, DriftRate: 3}}, 10 * time.Second},
		{"a scripted fault counts", run.Config{Lock: "token", Script: []nemesis.Step{{Nemesis: "client-pause", Action: "pause"}}}, 3 * time.Second},
		{"a user's fault: the interval", run.Config{Lock: "token", Nemesis: nemesis.Config{Names: []string{"mine"}, Interval: 3 * time.Second}}, 5 * time.Second},
		// etcd: a kill's aftermath is the election (2 election timeouts,
		// 2s) and the promoted leader's extension (1s); the lease term is
		// etcd's shortest lease, 2s, for a TTL of 1s: 3s + 2s + 2s.
		{"etcd kill: election, extension, minimum lease", run.Config{Lock: "etcd", Workload: ttl(time.Second), Nemesis: nemesis.Config{Names: []string{"kill"}}}, 7 * time.Second},
		{"etcd partition: as a kill", run.Config{Lock: "etcd", Workload: ttl(time.Second), Nemesis: nemesis.Config{Names: []string{"partition"}}}, 7 * time.Second},
		{"etcd without faults: the minimum lease", run.Config{Lock: "etcd", Workload: ttl(time.Second)}, 4 * time.Second},
		{"etcd client crash: the minimum lease", run.Config{Lock: "etcd", Workload: ttl(time.Second), Nemesis: nemesis.Config{Names: []string{"client-crash"}}}, 4 * time.Second},
		{"etcd latency: no leader change", run.Config{Lock: "etcd", Workload: ttl(time.Second), Nemesis: nemesis.Config{Names: []string{"latency"}}}, 4250 * ms},
		{"etcd long TTL", run.Config{Lock: "etcd", Workload: ttl(5 * time.Second), Nemesis: nemesis.Config{Names: []string{"kill"}}}, 13 * time.Second},
		// ZooKeeper: an election (cnxTimeout 1s + notification interval
		// 2s) and a tick (200ms) before the re-armed session runs out.
		{"zk kill: election and a tick", run.Config{Lock: "zk", Workload: ttl(time.Second), Nemesis: nemesis.Config{Names: []string{"kill"}}}, 5200 * ms},
		{"zk client crash: the TTL", run.Config{Lock: "zk", Workload: ttl(time.Second), Nemesis: nemesis.Config{Names: []string{"client-crash"}}}, 2 * time.Second},
		// MariaDB and Redis leave nothing behind beyond the client timeout.
		{"mariadb kill: the client timeout", run.Config{Lock: "mysql-get-lock", Workload: ttl(time.Second), Nemesis: nemesis.Config{Names: []string{"kill"}}}, 2250 * ms},
		{"redis kill: the client timeout", run.Config{Lock: "token", Workload: ttl(time.Second), Nemesis: nemesis.Config{Names: []string{"kill"}}}, 2250 * ms},
	}
	for _, c := range cases {
		if got := c.cfg.DerivedRecovery(); got != c.want {
			t.Errorf("%s: derived recovery %v, want %v", c.name, got, c.want)
		}
		if got := c.cfg.WithDefaults().Recovery; got != c.want {
			t.Errorf("%s: WithDefaults recovery %v, want %v", c.name, got, c.want)
		}
	}
}

// TestRecoveryOutlastsTheLease checks, for every nemesis alone and every
// TTL of a range, that the derived recovery is long enough for the
// checker to call a key unavailable (at least the longest lease and its
// minimum of 1s) with a lease term to spare.
func TestRecoveryOutlastsTheLease(t *testing.T) {
	for _, info := range nemesis.Known() {
		for _, ttl := range []time.Duration{10 * time.Millisecond, time.Second, 2500 * time.Millisecond, 30 * time.Second} {
			cfg := run.Config{Lock: "token", Workload: workloads.Config{TTL: ttl}, Nemesis: nemesis.Config{Names: []string{info.Name}}}
			if got, want := cfg.DerivedRecovery(), 2*max(ttl, time.Second); got < want {
				t.Errorf("%s, TTL %v: recovery %v, shorter than two lease terms %v", info.Name, ttl, got, want)
			}
		}
	}
}

// TestExplicitRecoveryWins: a recovery given is kept, and every scenario
// of the catalogue that sizes its recovery by hand runs with its own; one
// that leaves it out (zk-leader-partitioned, whose hand-set 5 s was shorter
// than a loaded ensemble needs) runs with the derived one.
func TestExplicitRecoveryWins(t *testing.T) {
	cfg := run.Config{Lock: "token", Recovery: 300 * time.Millisecond, Nemesis: nemesis.Config{Names: []string{"clock"}}}
	if got := cfg.WithDefaults().Recovery; got != 300*time.Millisecond {
		t.Errorf("explicit recovery became %v", got)
	}
	for _, s := range scenarios.Catalogue() {
		rc := s.RunConfig(t.TempDir())
		want := s.Run.Recovery
		if want == 0 {
			want = rc.WithDefaults().DerivedRecovery()
		}
		if got := rc.WithDefaults().Recovery; got != want {
			t.Errorf("scenario %s: recovery %v, want %v (its own, or derived when it has none)", s.Name, got, want)
		}
	}
}

// TestDerivedRecoveryKeepsLivenessVerdicts runs the catalogue's client
// crash and pause scenarios, whose liveness verdicts turn on leases that
// outlive the final heal, with the derived recovery instead of their own:
// each checker's verdict must be the scenario's.
func TestDerivedRecoveryKeepsLivenessVerdicts(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real servers")
	}
	redistest.Require(t, "redis-server")
	t.Parallel()
	runDerived(t, "setnx-crash-deadlock", "setnx-expire-crash-gap", "set-nx-ex-crash", "abandoned-wait-orphan-lock", "token-release", "watchdog-partition")
}

// TestDerivedRecoveryAfterALeaderPartition: etcd and ZooKeeper elect a
// new leader while the old one is cut off; with the derived recovery (a
// TTL of 2s twice and the scenarios' client timeout of 1s: the 5s they
// chose by hand) the keys come back in time for liveness to be valid.
func TestDerivedRecoveryAfterALeaderPartition(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real etcd and ZooKeeper groups")
	}
	t.Run("etcd", func(t *testing.T) {
		etcdtest.Require(t)
		runDerived(t, "etcd-leader-partitioned")
	})
	t.Run("zookeeper", func(t *testing.T) {
		zktest.Require(t)
		runDerived(t, "zk-leader-partitioned")
	})
}

// runDerived runs each named scenario with the derived recovery and
// holds every checker to the scenario's verdict.
func runDerived(t *testing.T, names ...string) {
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			s, err := scenarios.Lookup(name)
			if err != nil {
				t.Fatal(err)
			}
			own := s.Run.Recovery
			s.Run.Recovery = 0
			cfg := s.RunConfig(t.TempDir())
			t.Logf("recovery: its own %v, derived %v", own, cfg.WithDefaults().Recovery)
			out, err := run.Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range scenarios.Checkers() {
				got := out.Results.Checkers[n].Verdict
				if want := s.Expect.Of(n); got != want {
					t.Errorf("%s: %s %s, want %s (%s)", name, n, got, want, out.Results.Checkers[n].Reason)
				}
			}
			if v := out.Results.Checkers[checker.Liveness]; v.Verdict == checker.Unknown {
				t.Errorf("%s: liveness unknown: %s", name, v.Reason)
			}
		})
	}
}

// TestDerivedRecoveryStillFindsAnUnavailableEtcdLock: the longer recovery
// an etcd kill derives (7s: election, promotion extension, etcd's 2s
// lease twice) must not hide a lock that truly stays unavailable: the
// real etcd lock, except that from 3s into the run every acquire is
// refused without asking etcd, comes out liveness invalid, not valid or
// unknown.
func TestDerivedRecoveryStillFindsAnUnavailableEtcdLock(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a real etcd group")
	}
	etcdtest.Require(t)
	t.Parallel()
	reg := locks.Builtin()
	real, err := reg.Lookup("etcd")
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	var from time.Time
	stuck := real
	stuck.Name, stuck.Description = "etcd-stuck", "etcd's lock, refusing every acquire from 3s into the run"
	stuck.New = func(nodes []sut.ClientNode, opts locks.Options) (locks.Lock, error) {
		once.Do(func() { from = time.Now().Add(3 * time.Second) })
		l, err := real.New(nodes, opts)
		if err != nil {
			return nil, err
		}
		return refuseAfter{Lock: l, from: from}, nil
	}
	if err := reg.Register(stuck); err != nil {
		t.Fatal(err)
	}
	cfg := run.Config{Lock: "etcd-stuck", Registry: reg, Seed: 1, Store: t.TempDir(), TimeLimit: 5 * time.Second,
		Workload: workloads.Config{Clients: 3, Keys: 1, TTL: time.Second, Hold: 100 * time.Millisecond},
		Nemesis:  nemesis.Config{Names: []string{"kill"}, Interval: 2 * time.Second}}
	if got := cfg.WithDefaults().Recovery; got != 7*time.Second {
		t.Fatalf("derived recovery %v, want 7s", got)
	}
	out, err := run.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	v := out.Results.Checkers[checker.Liveness]
	t.Logf("liveness %s: %s", v.Verdict, v.Reason)
	if v.Verdict != checker.Invalid {
		t.Errorf("liveness %s (%s), want invalid: the lock refused every acquire after the heal", v.Verdict, v.Reason)
	}
}

// refuseAfter is a Lock that refuses every acquire from a time on, as a
// lock whose key stays taken would.
type refuseAfter struct {
	locks.Lock
	from time.Time
}

func (l refuseAfter) Acquire(ctx context.Context, key string, opts locks.AcquireOptions) (locks.Lease, error) {
	if time.Now().After(l.from) {
		return locks.Lease{Key: key}, locks.ErrNotAcquired
	}
	return l.Lock.Acquire(ctx, key, opts)
}

// Close closes the etcd lock's client.
func (l refuseAfter) Close() error {
	if c, ok := l.Lock.(locks.Closer); ok {
		return c.Close()
	}
	return nil
}
