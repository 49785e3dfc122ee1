package adapter_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/locks/adapter"
	"github.com/lockharness/lockharness/run"
	"github.com/lockharness/lockharness/scenarios"
	"github.com/lockharness/lockharness/schedule"
	"github.com/lockharness/lockharness/workloads"
)

// realLibs are the shipped adapters of real libraries, with what each
// needs to run here.
var realLibs = map[string]struct {
	module  string // what Debian's python3 must import; "" for the JVM
	install string
	jvm     bool // it or its server runs on the JVM (ZooKeeper)
}{
	"kazoo":        {"kazoo", "apt-get install -y python3-kazoo zookeeper", true},
	"python-etcd3": {"etcd3", "apt-get install -y python3-etcd3 etcd-server", false},
	"curator":      {"", "apt-get install -y default-jdk-headless libcurator-recipes-java libcurator-framework-java zookeeper", true},
}

// requireLib skips under -short and fails when the library of the shipped
// adapter name, or its server, is missing here. A test of python-etcd3
// runs in parallel with the others (it starts a server and adapters of
// its own, and waits on leases more than it computes); one on ZooKeeper
// (kazoo, Curator) runs alone: an ensemble's three JVMs and Curator's
// JVM adapters start with CPU work, and two Curator runs side by side on
// two cores (load 18) had their clients granted 5 times and none:
// verdicts unknown.
func requireLib(t *testing.T, name string) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs a real library against real servers")
	}
	lib := realLibs[name]
	if lib.module != "" {
		if err := exec.Command(python, "-c", "import "+lib.module).Run(); err != nil {
			t.Fatalf("%s cannot import %s (%v): %s", python, lib.module, err, lib.install)
		}
	}
	for _, bin := range []string{"redis-server", "java"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Fatalf("%s is not on PATH: %s", bin, lib.install)
		}
	}
	if !lib.jvm {
		t.Parallel()
	}
}

// realRegistry is the built-in locks plus the shipped adapters, with name
// runnable here.
func realRegistry(t *testing.T, name string) *locks.Registry {
	t.Helper()
	requireLib(t, name)
	reg := locks.Builtin()
	if err := adapter.RegisterShipped(context.Background(), reg); err != nil {
		t.Fatal(err)
	}
	shipped(t, name) // fails when it cannot run, saying why
	return reg
}

// runValid runs name without faults and asserts a valid verdict with
// grants and no unknown outcomes.
func runValid(t *testing.T, name string, nodes int) {
	reg := realRegistry(t, name)
	cfg := run.Config{
		Lock: name, Registry: reg, Nodes: nodes, Seed: 3, TimeLimit: 4 * time.Second, Recovery: time.Second, Store: t.TempDir(),
		Workload: workloads.Config{Clients: 3, Keys: 2, TTL: 2 * time.Second},
		// No link faults: room for an interpreter a loaded machine stalls
		// (an outcome it makes unknown is no finding about the lock).
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
	t.Logf("counts %v", res.Counts)
	if n := res.Counts["acquire"]["ok"]; n < 20 {
		t.Errorf("only %d grants in 4s", n)
	}
	if n := res.Counts["acquire"]["info"] + res.Counts["release"]["info"]; n > 0 {
		t.Errorf("%d unknown outcomes without faults", n)
	}
	if left := processesUnder(t, out.Dir); len(left) > 0 {
		t.Errorf("adapters left running: %q", left)
	}
}

// runScenario runs catalogue scenario sc with lock name in place of its
// own and returns the results after checking that no adapter is left.
func runScenario(t *testing.T, name, sc string) (scenarios.Scenario, run.Outcome) {
	t.Helper()
	reg := realRegistry(t, name)
	s, err := scenarios.Lookup(sc)
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.RunConfig(storeDir(t))
	cfg.Lock, cfg.Registry, cfg.Test, cfg.Command = name, reg, name+"-"+sc, ""
	out, err := run.Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if left := processesUnder(t, out.Dir); len(left) > 0 {
		t.Errorf("adapters left running: %q", left)
	}
	t.Logf("%s with %s: verdict %s, counts %v, run %s", sc, name, out.Results.Verdict, out.Results.Counts, out.Dir)
	for _, v := range out.Results.Violations {
		t.Logf("violation %s: %s", v.Kind, v.Description)
	}
	return s, out
}

// runUpstream runs the scenario file scenarios/upstream/<file> (whose
// lock is one of the shipped adapters, name) as `harness scenario run
// FILE` does: its lock looked up among the shipped adapters.
func runUpstream(t *testing.T, name, file string) (scenarios.Scenario, run.Outcome) {
	t.Helper()
	reg := realRegistry(t, name)
	f, err := os.Open(filepath.Join("..", "..", "scenarios", "upstream", file))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	env := schedule.Env{Locks: reg}
	sch, err := schedule.Parse(f, env)
	if err != nil {
		t.Fatal(err)
	}
	s, err := scenarios.FromSchedule(sch, env)
	if err != nil {
		t.Fatal(err)
	}
	if s.Lock != name {
		t.Fatalf("%s tests lock %s, want %s", file, s.Lock, name)
	}
	cfg := s.RunConfig(storeDir(t))
	cfg.Command = ""
	out, err := run.Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if left := processesUnder(t, out.Dir); len(left) > 0 {
		t.Errorf("adapters left running: %q", left)
	}
	t.Logf("%s: verdict %s, counts %v, run %s", file, out.Results.Verdict, out.Results.Counts, out.Dir)
	for _, v := range out.Results.Violations {
		t.Logf("violation %s: %s", v.Kind, v.Description)
	}
	return s, out
}

// storeDir is where a run is kept: $LOCKHARNESS_STORE when set (to read
// a run after the test), else a temporary directory.
func storeDir(t *testing.T) string {
	if d := os.Getenv("LOCKHARNESS_STORE"); d != "" {
		return d
	}
	return t.TempDir()
}

// expectPauseLosesUpdate asserts the mechanism of a pause longer than the
// lease with no fencing token: the lock kept its promise, the resource
// check names the stale write.
func expectPauseLosesUpdate(t *testing.T, s scenarios.Scenario, out run.Outcome) {
	t.Helper()
	res := out.Results
	for _, n := range scenarios.Checkers() {
		if got, want := res.Checkers[n].Verdict, s.Expect.Of(n); got != want {
			t.Errorf("%s %s, want %s (as for the project's own lock on this system)", n, got, want)
		}
	}
	if len(res.Vacuous) > 0 {
		t.Errorf("exposure not reached: %q", res.Vacuous)
	}
	// A grant after a wait must carry its validity from the grant, not
	// from the request: else the holder's own writes look stale.
	named := false
	for _, v := range res.Violations {
		if v.Kind != checker.KindStaleWrite {
			continue
		}
		if strings.Contains(v.Description, "without holding") {
			t.Errorf("a write under a grant judged stale (the grant's validity ended before it began?): %s", v.Description)
		}
		named = named || (len(v.Processes) > 0 && v.Key != "")
	}
	if !named {
		t.Errorf("no stale write naming its process and key among %+v", res.Violations)
	}
}

// logHas reports whether a client's adapter log in the run mentions s.
func logHas(t *testing.T, dir, name, s string) bool {
	t.Helper()
	out, _ := exec.Command("sh", "-c", "cat "+dir+"/adapters/"+name+"-c*.log").Output()
	return strings.Contains(string(out), s)
}
