package adapter_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/locks/adapter"
	"github.com/lockharness/lockharness/reports"
	"github.com/lockharness/lockharness/run"
	"github.com/lockharness/lockharness/scenarios"
	"github.com/lockharness/lockharness/sut/redis/redistest"
	"github.com/lockharness/lockharness/workloads"
)

// shippedRegistry is the built-in locks plus the shipped adapters.
func shippedRegistry(t *testing.T) *locks.Registry {
	t.Helper()
	redistest.Require(t, "redis-server")
	requirePython(t)
	reg := locks.Builtin()
	if err := adapter.RegisterShipped(context.Background(), reg); err != nil {
		t.Fatal(err)
	}
	return reg
}

// processesUnder lists the live processes whose command line (arguments
// joined by spaces) mentions dir: adapters started from a run directory.
func processesUnder(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		cmdline := strings.ReplaceAll(string(b), "\x00", " ")
		if err != nil || !strings.Contains(cmdline, dir) {
			continue
		}
		out = append(out, e.Name()+": "+cmdline)
	}
	return out
}

// The redis-py adapter keeps every promise on a healthy Redis, and the run
// records the adapter it ran and each client's log.
func TestRedisPyValidWithoutFaults(t *testing.T) {
	reg := shippedRegistry(t)
	t.Parallel()
	cfg := run.Config{
		Lock: "redis-py", Registry: reg, Seed: 3, TimeLimit: 3 * time.Second, Recovery: time.Second, Store: t.TempDir(),
		Workload: workloads.Config{Clients: 3, Keys: 2, TTL: time.Second},
		// No link faults: room for a loaded machine, where an interpreter
		// stalled past the TTL-derived timeout makes an outcome unknown
		// (seen at load average 20), which is no finding about the lock.
		ClientTimeout: 5 * time.Second,
	}
	out, err := run.Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	res := out.Results
	if res.Verdict != checker.Valid {
		t.Fatalf("verdict %s, want valid: %+v; %+v", res.Verdict, res.Checkers, res.Violations)
	}
	if n := res.Counts["acquire"]["ok"]; n < 100 {
		t.Errorf("only %d grants in 3s", n)
	}
	if n := res.Counts["acquire"]["info"] + res.Counts["release"]["info"]; n > 0 {
		t.Errorf("%d unknown outcomes without faults", n)
	}
	for _, f := range []string{"adapters/redis-py/adapter.py", "adapters/redis-py/manifest.json", "adapters/redis-py-c0.log"} {
		if _, err := os.Stat(filepath.Join(out.Dir, f)); err != nil {
			t.Errorf("the run does not record %s: %v", f, err)
		}
	}
	if left := processesUnder(t, out.Dir); len(left) > 0 {
		t.Errorf("adapters left running: %q", left)
	}
}

// The catalogue's gc-pause-stale-write schedule with redis-py: the holder
// is paused (its process stopped) 2.5s with a 1s lease; the lock keeps
// its promise, but redis-py has no fencing token, so the paused client's
// write lands after the next holder's and the resource check names the
// stale write, as it does for the token lock.
func TestRedisPyPauseLongerThanLeaseLosesUpdate(t *testing.T) {
	reg := shippedRegistry(t)
	t.Parallel()
	s, err := scenarios.Lookup("gc-pause-stale-write")
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.RunConfig(t.TempDir())
	cfg.Lock, cfg.Registry, cfg.Test, cfg.Command = "redis-py", reg, "redis-py-gc-pause", ""
	out, err := run.Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	res := out.Results
	for _, n := range scenarios.Checkers() {
		if got, want := res.Checkers[n].Verdict, s.Expect.Of(n); got != want {
			t.Errorf("%s %s, want %s (as for the token lock)", n, got, want)
		}
	}
	if len(res.Vacuous) > 0 {
		t.Errorf("exposure not reached: %q", res.Vacuous)
	}
	var stale *checker.Violation
	for i, v := range res.Violations {
		if v.Kind == checker.KindStaleWrite {
			stale = &res.Violations[i]
		}
	}
	for _, v := range res.Violations {
		t.Logf("violation: %s %v %s", v.Kind, v.Processes, v.Description)
	}
	if stale == nil || len(stale.Processes) == 0 || stale.Key == "" {
		t.Fatalf("no stale write naming its process and key among %+v", res.Violations)
	}
	// The pause stopped the adapter's process, not only the Go client.
	logs, _ := filepath.Glob(filepath.Join(out.Dir, "adapters", "redis-py-c*.log"))
	stopped := 0
	for _, f := range logs {
		if b, err := os.ReadFile(f); err == nil && strings.Contains(string(b), "[harness: SIGSTOP (client pause)") && strings.Contains(string(b), "[harness: SIGCONT") {
			stopped++
		}
	}
	if stopped != 1 {
		t.Errorf("%d adapter logs say their process was stopped and continued, want 1", stopped)
	}
	if left := processesUnder(t, out.Dir); len(left) > 0 {
		t.Errorf("adapters left running: %q", left)
	}
}

// misbehavingRun registers the misbehaving adapter in mode (after n
// answers) and runs it with two clients and a time limit it must not
// wait out.
func misbehavingRun(t *testing.T, mode, after string) (run.Outcome, time.Duration, error) {
	t.Helper()
	reg := shippedRegistry(t)
	spec := testdataSpec(t, "misbehave.py")
	spec.Name = "misbehave-" + mode
	spec.Command = append(spec.Command, mode, after)
	if err := reg.Register(adapter.Info(spec)); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	out, err := run.Run(context.Background(), run.Config{
		Lock: spec.Name, Registry: reg, Seed: 3, TimeLimit: 60 * time.Second, Recovery: 500 * time.Millisecond, Store: t.TempDir(),
		Workload: workloads.Config{Clients: 2, TTL: time.Second},
	})
	if left := processesUnder(t, filepath.Join("testdata", "misbehave.py")); len(left) > 0 {
		t.Errorf("adapters left running: %q", left)
	}
	return out, time.Since(began), err
}

// An adapter that breaks the protocol mid-run, in every client: the run
// stops early (it does not wait out its 60s), writes results whose
// verdict is unknown with the reason naming the adapter and the line it
// sent (exit 2 in the CLI), keeps the history, which can be checked, and
// leaves no adapter running.
func TestRunWithBrokenAdapterKeepsHistory(t *testing.T) {
	out, took, err := misbehavingRun(t, "garbage", "40")
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if took > 30*time.Second {
		t.Errorf("the run took %v: it waited out its time limit with every client gone", took)
	}
	res := out.Results
	want := `adapter misbehave-garbage broke the protocol: line 41 "Traceback`
	if res.Verdict != checker.Unknown || !strings.Contains(res.Reason, want) || !strings.Contains(res.Meta.Partial, want) {
		t.Fatalf("verdict %s, reason %q, partial %q: want unknown, both naming %q", res.Verdict, res.Reason, res.Meta.Partial, want)
	}
	if _, err := reports.ReadResults(out.Dir); err != nil {
		t.Errorf("no results.json: %v", err)
	}
	path := filepath.Join(out.Dir, reports.HistoryFile)
	if _, err := history.ReadFile(path); err != nil {
		t.Fatalf("history not kept: %v", err)
	}
	if _, err := checker.Check(context.Background(), history.File(path), checker.Config{Timeout: 10 * time.Second}); err != nil {
		t.Fatalf("the kept history cannot be checked: %v", err)
	}
	if res.Counts["acquire"]["ok"] == 0 {
		t.Errorf("no grant recorded before the adapters broke: %v", res.Counts)
	}
}

// An adapter that crashes at start in a run: nothing could be tested, so
// the run ends at once (not after its 60s) with an error naming the
// adapter, its exit and its log (exit 2 in the CLI), and keeps the
// adapters' logs.
func TestRunWithAdapterCrashingAtStart(t *testing.T) {
	out, took, err := misbehavingRun(t, "crash-start", "0")
	want := "nothing could be tested: client 0: new misbehave-crash-start lock: adapter misbehave-crash-start ended (exit status 3) before answering request 1 (init); its log ends: misbehave: crashing at start, as asked"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("run error %v\nwant it to contain %q", err, want)
	}
	if took > 30*time.Second {
		t.Errorf("the run took %v: it waited out its time limit with no client started", took)
	}
	if out.Dir == "" {
		t.Fatal("the run directory was discarded")
	}
	if _, err := os.Stat(filepath.Join(out.Dir, "adapters", "misbehave-crash-start-c0.log")); err != nil {
		t.Errorf("the adapter's log is not kept: %v", err)
	}
}

// The catalogue's set-nx-ex-crash schedule with redis-py: the holder's
// adapter is killed inside its critical section, its lease expires, the
// other client goes on, every verdict is valid, and the restarted client
// is a new adapter process (a log of its own).
func TestRedisPyHolderCrash(t *testing.T) {
	reg := shippedRegistry(t)
	s, err := scenarios.Lookup("set-nx-ex-crash")
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.RunConfig(t.TempDir())
	cfg.Lock, cfg.Registry, cfg.Test, cfg.Command = "redis-py", reg, "redis-py-crash", ""
	// The scenario's 2 s are enough for the in-process lock; a Python
	// client's first grant on a loaded machine can come later than the
	// crash's await allows, and the run is then (rightly) vacuous: the
	// crash never met a holder. What this test checks does not depend on
	// the length.
	cfg.TimeLimit = 6 * time.Second
	out, err := run.Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	res := out.Results
	if res.Verdict != checker.Valid || len(res.Vacuous) > 0 {
		t.Fatalf("verdict %s (unmet %q): %+v", res.Verdict, res.Vacuous, res.Violations)
	}
	h, err := history.ReadFile(filepath.Join(out.Dir, reports.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	crashed := -1
	for _, op := range h.Ops {
		if op.F == history.FCrash && op.Type == history.Invoke {
			crashed = int(op.Process)
		}
	}
	if crashed < 0 {
		t.Fatal("no crash in the history")
	}
	restarted := filepath.Join(out.Dir, "adapters", fmt.Sprintf("redis-py-c%d.log", cfg.Workload.Clients))
	if _, err := os.Stat(restarted); err != nil {
		t.Errorf("client %d crashed, but its restart has no adapter of its own: %v", crashed, err)
	}
	if left := processesUnder(t, out.Dir); len(left) > 0 {
		t.Errorf("adapters left running: %q", left)
	}
}
