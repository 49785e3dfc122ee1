package run_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/nemesis"
	"github.com/lockharness/lockharness/reports"
	"github.com/lockharness/lockharness/run"
	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/sut/mariadb/mariadbtest"
	redisbackend "github.com/lockharness/lockharness/sut/redis"
	"github.com/lockharness/lockharness/sut/redis/redistest"
	"github.com/lockharness/lockharness/workloads"
)

func requireRedis(t *testing.T) { redistest.Require(t) }

// mustRun runs cfg into a temporary store and reads back results.json, so the
// test sees what a user would.
func mustRun(t *testing.T, cfg run.Config) reports.Results {
	t.Helper()
	cfg.Store = t.TempDir()
	out, err := run.Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(out.Dir, reports.ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	var res reports.Results
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{reports.HistoryFile, "timeline.png"} {
		if _, err := os.Stat(filepath.Join(out.Dir, f)); err != nil {
			t.Errorf("run directory lacks %s: %v", f, err)
		}
	}
	if _, err := os.Stat(filepath.Join(cfg.Store, "latest", reports.ResultsFile)); err != nil {
		t.Errorf("store/latest does not point at the run: %v", err)
	}
	// The run's record says what its report needs: the lock's lease, the
	// deployment's nodes, the workload's clients and keys, the fault kinds.
	rec, ok, err := reports.ReadRecord(out.Dir)
	wl := cfg.Workload.WithDefaults()
	if f := rec.Facts; err != nil || !ok || f == nil || len(f.Nodes) == 0 || f.Clients != wl.Clients || f.Keys != wl.Keys ||
		(f.TTL != wl.TTL && !f.NoLease) || len(rec.FaultKinds) == 0 {
		t.Errorf("run.json records %+v and %d fault kinds (%v, %v)", rec.Facts, len(rec.FaultKinds), ok, err)
	}
	return res
}

func total(res reports.Results) int {
	n := 0
	for _, byType := range res.Counts {
		for _, c := range byType {
			n += c
		}
	}
	return n
}

func TestTokenNoFaultsIsValid(t *testing.T) {
	requireRedis(t)
	t.Parallel()
	res := mustRun(t, run.Config{
		Lock: "token", Seed: 7, TimeLimit: 5 * time.Second, Recovery: time.Second,
		Workload: workloads.Config{Clients: 5, Keys: 1, TTL: time.Second},
	})
	if res.Verdict != checker.Valid {
		t.Fatalf("verdict %s, want valid; violations: %+v; checkers %+v", res.Verdict, res.Violations, res.Checkers)
	}
	if n := res.Counts["acquire"]["ok"]; n < 1000 {
		t.Errorf("only %d successful acquires in 5s; want thousands", n)
	}
	if n := total(res); n < 5000 {
		t.Errorf("only %d completions; want thousands", n)
	}
}

// set-nx-ex's release is a plain DEL: a client that pauses past its TTL
// deletes the next holder's lock, and a third client gets in while the
// second still holds it.
func TestSetNXEXClientPauseIsInvalid(t *testing.T) {
	requireRedis(t)
	t.Parallel()
	res := mustRun(t, run.Config{
		Lock: "set-nx-ex", Seed: 7, TimeLimit: 8 * time.Second, Recovery: time.Second,
		Workload: workloads.Config{Clients: 5, Keys: 1, TTL: time.Second, ClientPause: 1500 * time.Millisecond},
	})
	if res.Verdict != checker.Invalid || res.Checkers["lock-promise"].Verdict != checker.Invalid {
		t.Fatalf("verdict %s (lock promise %s), want invalid", res.Verdict, res.Checkers["lock-promise"].Verdict)
	}
	var foreign, overlap *checker.Violation
	for i, v := range res.Violations {
		switch v.Kind {
		case checker.KindForeignRelease:
			foreign = &res.Violations[i]
		case checker.KindOverlap:
			overlap = &res.Violations[i]
		}
	}
	if foreign == nil {
		t.Fatalf("no foreign-release violation among %d", len(res.Violations))
	}
	if len(foreign.Processes) < 2 || foreign.Key == "" || len(foreign.Events) == 0 {
		t.Errorf("foreign release does not name the processes, key and events: %+v", *foreign)
	}
	if overlap == nil {
		t.Fatalf("no overlap violation among %d", len(res.Violations))
	}
	if len(overlap.Processes) != 2 || overlap.Processes[0] == overlap.Processes[1] || overlap.End <= overlap.Start {
		t.Errorf("overlap does not name two holders and a window: %+v", *overlap)
	}
}

// token's compare-and-delete keeps the lock's promise under the same
// pauses, but the paused client still writes after its lease ran out: the
// resource check sees the lost update (fencing would prevent it).
func TestTokenClientPauseLosesUpdates(t *testing.T) {
	requireRedis(t)
	t.Parallel()
	res := mustRun(t, run.Config{
		Lock: "token", Seed: 7, TimeLimit: 8 * time.Second, Recovery: time.Second,
		Workload: workloads.Config{Clients: 5, Keys: 1, TTL: time.Second, ClientPause: 1500 * time.Millisecond},
	})
	if v := res.Checkers["lock-promise"].Verdict; v != checker.Valid {
		t.Fatalf("lock promise %s, want valid: %+v", v, res.Violations)
	}
	if v := res.Checkers["resource"].Verdict; v != checker.Invalid {
		t.Fatalf("resource %s, want invalid", v)
	}
	kinds := map[string]int{}
	for _, v := range res.Violations {
		kinds[v.Kind]++
	}
	if kinds[checker.KindLostUpdate] == 0 || kinds[checker.KindStaleWrite] == 0 {
		t.Errorf("want lost updates and stale writes reported, got %v", kinds)
	}
}

// naiveRelease are the built-in locks whose release is a DEL that does not
// check who holds the key.
var naiveRelease = map[string]bool{"setnx": true, "setnx-expire": true, "set-nx-ex": true}

// Every built-in lock keeps every promise on a healthy topology: a false
// "invalid" here would be a checker bug as much as a lock bug.
func TestEveryLockValidWithoutFaults(t *testing.T) {
	requireRedis(t)
	t.Parallel()
	for _, name := range locks.Builtin().Names() {
		t.Run(name, func(t *testing.T) {
			// The recovery is derived (2s for a 1s lease) and ends once
			// every key is granted again: a recovery of 500ms, shorter
			// than the lease, left liveness unknown at load 30 when a key
			// happened to get no grant in it (Redlock).
			res := mustRun(t, run.Config{
				Lock: name, Seed: 2, TimeLimit: 2 * time.Second, EndEarly: run.EndEarly{Recovery: true},
				Workload: workloads.Config{Clients: 5, Keys: 2, TTL: time.Second},
			})
			if res.Verdict != checker.Valid {
				// A naive lock releases with an unconditional DEL: when an
				// acquire or release timed out on a loaded machine, the
				// client's ghost release (or a late DEL) really does delete
				// the next holder's key, and invalid is the true verdict
				// (seen here with both cores busy). Anything else is a bug.
				if unknowns := res.Counts["acquire"]["info"] + res.Counts["release"]["info"]; naiveRelease[name] && unknowns > 0 && res.Verdict == checker.Invalid {
					t.Logf("%s broke after %d operations timed out (its DEL is not token-checked): %+v", name, unknowns, res.Violations)
				} else {
					t.Fatalf("verdict %s, want valid: %+v; %+v", res.Verdict, res.Checkers, res.Violations)
				}
			}
			// The run must have exercised the lock; how fast is the
			// benchmarks' business (BenchmarkAcquireRelease*). A consensus
			// system's round trips are slower: etcd made 35 to 41 grants
			// here in 2s with both cores busy, fewer than a Redis lock's 50.
			least := 50
			if info, err := locks.Builtin().Lookup(name); err == nil && info.SystemName() != locks.SystemRedis {
				least = 10
			}
			if n := res.Counts["acquire"]["ok"]; n < least {
				t.Errorf("only %d successful acquires in 2s", n)
			}
		})
	}
}

// Every nemesis runs end to end through harness run: its faults are in the
// history, everything is healed, and the run ends with a verdict (which
// may be invalid: a clock jump does break a single-node lock).
func TestEveryNemesisRuns(t *testing.T) {
	requireRedis(t)
	t.Parallel()
	for _, n := range nemesis.Known() {
		t.Run(n.Name, func(t *testing.T) {
			store := t.TempDir()
			// Clients hold the key nearly all the time (200ms sections, three
			// clients waiting), so each fault strikes a holder; two fault
			// periods, because on a loaded machine a partition once began
			// in the gap between a release and the next grant, and an
			// isolated node grants nothing until it heals.
			cfg := run.Config{
				Lock: "token", Seed: 4, Store: store, TimeLimit: 5 * time.Second, Recovery: time.Second,
				Nemesis:  nemesis.Config{Names: []string{n.Name}, Interval: time.Second},
				Workload: workloads.Config{Clients: 3, TTL: time.Second, Hold: 200 * time.Millisecond, AcquireTimeout: time.Second},
			}
			if n.Name == "failover" {
				// A Sentinel promotion comes seconds after the master
				// stops, when every 1s lease granted there has run out: it
				// would strike no holder. The manual one promotes 0.5s
				// after freezing the replication link.
				cfg.Cluster.Failover = sut.FailoverManual
			}
			if n.Needs.Has(sut.CanKillConnections) {
				// Only a session lock has a connection whose end frees it.
				mariadbtest.Require(t)
				cfg.Lock = "mysql-for-update"
			}
			out, err := run.Run(context.Background(), cfg)
			if n.Needs.Has(sut.CanPartitionNodes) {
				// Local processes share the host's network: refused
				// before the run, saying where it runs (the Docker
				// backend's tests run it).
				var ue *sut.UnsupportedError
				if !errors.As(err, &ue) || ue.Capability != sut.CanPartitionNodes || !strings.Contains(err.Error(), "--backend docker") {
					t.Fatalf("native partition on local processes: %v, want an UnsupportedError naming --backend docker", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			if out.Results.Verdict == checker.Unknown {
				t.Fatalf("verdict unknown (%s): %+v", out.Results.Reason, out.Results.Checkers)
			}
			// The schedule makes every nemesis strike while a client holds
			// the lock (clients hold it nearly all the time), so even an
			// invalid run has its exposure.
			if len(out.Results.Vacuous) > 0 {
				t.Fatalf("exposure not reached: %q; coverage %+v", out.Results.Vacuous, out.Results.Coverage)
			}
			h, err := history.ReadFile(filepath.Join(out.Dir, reports.HistoryFile))
			if err != nil {
				t.Fatal(err)
			}
			faults, healed, heal := 0, false, ""
			for _, op := range h.Ops {
				if op.Process != history.Nemesis || op.Type == history.Invoke {
					continue
				}
				if op.F == history.FFinalHeal {
					healed, heal = op.Type == history.OK, fmt.Sprintf("%s %s", op.Type, op.Error)
				} else if op.Type == history.OK {
					faults++
				}
			}
			if faults == 0 || !healed {
				t.Fatalf("%d faults took effect, final heal ok: %v (%s); run %s", faults, healed, heal, out.Dir)
			}
		})
	}
}

// A run requires each named nemesis to strike while a client holds a lock;
// a scripted run requires what it declares instead.
func TestRequirementsFollowTheNemeses(t *testing.T) {
	cfg := run.Config{Nemesis: nemesis.Config{Names: []string{"partition", "client-pause", "client-crash"}}}
	rs := cfg.Requirements()
	if len(rs) != 3 {
		t.Fatalf("requirements %+v", rs)
	}
	if rs[0].Name != "the partition nemesis" || len(rs[0].Faults) != 1 || rs[0].Faults[0] != "start-partition" || rs[0].PauseStruck {
		t.Errorf("partition: %+v", rs[0])
	}
	if !rs[1].PauseStruck || len(rs[1].Faults) != 0 || !rs[2].CrashStruck {
		t.Errorf("client faults: %+v %+v", rs[1], rs[2])
	}
	declared := []checker.Requirement{{Name: "the clock jump", Faults: []string{"bump-clock"}}}
	cfg.Require = declared
	if rs := cfg.Requirements(); len(rs) != 1 || rs[0].Name != "the clock jump" {
		t.Errorf("declared exposure ignored: %+v", rs)
	}
	if rs := (run.Config{}).Requirements(); len(rs) != 0 {
		t.Errorf("no nemesis, requirements %+v", rs)
	}
}

// A deployment that cannot do what a nemesis needs refuses the run as bad
// input (exit 2) before it starts: nothing is left in the store and the
// deployment is down. Here a backend starts local nodes without
// libfaketime, whatever the run asks, and --nemesis clock needs them.
func TestRunRefusesAFaultTheDeploymentCannotDo(t *testing.T) {
	requireRedis(t)
	t.Parallel()
	var started *redisbackend.Cluster
	noClock := func(ctx context.Context, cfg sut.Config) (sut.Deployment, error) {
		cfg.Faketime = false
		c, err := redisbackend.Up(ctx, cfg)
		started = c
		return c, err
	}
	store := t.TempDir()
	_, err := run.Run(context.Background(), run.Config{
		Lock: "token", Seed: 1, TimeLimit: time.Second, Store: store, Backend: noClock,
		Nemesis: nemesis.Config{Names: []string{"clock"}, Interval: 500 * time.Millisecond},
	})
	var ue *run.UsageError
	if !errors.As(err, &ue) || !errors.Is(err, sut.ErrUnsupported) || !strings.Contains(err.Error(), "the clock nemesis needs setting nodes' clocks") {
		t.Fatalf("run: %v, want a usage error naming the clock nemesis's need", err)
	}
	if started == nil {
		t.Fatal("the backend was never asked")
	}
	for _, n := range started.Nodes {
		if n.Running() {
			t.Errorf("%s still running after the refusal", n.Name)
		}
	}
	if runs, _ := filepath.Glob(filepath.Join(store, "*", "*")); len(runs) != 0 {
		t.Errorf("the refused run left %v in the store", runs)
	}
}

// A script's steps at 0 are in force before the first client operation:
// c1 is cut off from the only node at 0, so c0 gets every grant until the
// cut ends (before, c1 could win the first grant racing the cut).
func TestScriptStepsAtZeroPrecedeTheWorkload(t *testing.T) {
	requireRedis(t)
	t.Parallel()
	cfg := run.Config{
		Lock: "token", Seed: 3, TimeLimit: 1500 * time.Millisecond, Recovery: 500 * time.Millisecond,
		Workload: workloads.Config{Clients: 2, Keys: 1, TTL: time.Second},
		Script: []nemesis.Step{
			{At: 0, Nemesis: "partition", Action: "start", Targets: []string{"c1->n1"}},
			{At: time.Second, Nemesis: "partition", Action: "stop", Targets: []string{"c1->n1"}},
		},
		AllowVacuous: true,
		Store:        t.TempDir(),
	}
	out, err := run.Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	h, err := history.ReadFile(filepath.Join(out.Dir, reports.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	cut := int64(-1)
	for _, op := range h.Ops {
		if op.Process.IsNemesis() {
			if op.F == "start-partition" && op.Type == history.OK && cut < 0 {
				cut = op.Index
			}
			continue
		}
		if cut < 0 {
			t.Fatalf("client operation %+v before the cut at 0 took effect", op)
		}
		if op.F == history.FAcquire && op.Type == history.OK && op.Process == 1 && op.Time < int64(time.Second) {
			t.Fatalf("c1 was granted the lock at %v while cut off", time.Duration(op.Time))
		}
	}
	if cut < 0 {
		t.Fatal("no partition recorded")
	}
}
