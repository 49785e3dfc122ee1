package cli

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/sut/redis/redistest"
)

// badCase is one bad input: the command line, and what its error must say
// (the problem and the way out).
type badCase struct {
	name         string
	args         []string
	problem, fix string
}

// badInputFixtures writes the files bad inputs point at and returns their
// paths by name.
func badInputFixtures(t *testing.T) map[string]string {
	t.Helper()
	dir := t.TempDir()
	ev := `{"index":0,"time":1,"process":0,"type":"invoke","f":"acquire","key":"lock-0"}`
	files := map[string]string{
		"malformed":     ev + "\nnot json\n{}\n",
		"neg-deadline":  ev + "\n" + `{"index":1,"time":2,"process":0,"type":"ok","f":"acquire","key":"lock-0","value":{"token":"a","deadline":-5}}` + "\n",
		"neg-time":      `{"index":0,"time":-1,"process":0,"type":"invoke","f":"acquire"}` + "\n",
		"huge-time":     ev + "\n" + `{"index":1,"time":9223372036854775000,"process":0,"type":"ok","f":"acquire","key":"lock-0","value":{"token":"a","deadline":9223372036854775800}}` + "\n",
		"huge-deadline": ev + "\n" + `{"index":1,"time":2,"process":0,"type":"ok","f":"acquire","key":"lock-0","value":{"token":"a","deadline":9223372036854775800}}` + "\n",
		"neg-fence":     ev + "\n" + `{"index":1,"time":2,"process":0,"type":"ok","f":"acquire","value":{"fence":-1}}` + "\n",
		"neg-duration":  `{"index":0,"time":1,"process":0,"type":"invoke","f":"pause","value":{"duration":-3}}` + "\n",
		"neg-index":     `{"index":-1,"time":1,"process":0,"type":"invoke","f":"acquire"}` + "\n",
		"bad-type":      `{"index":0,"time":1,"process":0,"type":"maybe","f":"acquire"}` + "\n" + ev + "\n",
		"no-f":          `{"index":0,"time":1,"process":0,"type":"invoke"}` + "\n" + ev + "\n",
		"unknown-field": `{"index":0,"time":1,"process":0,"type":"invoke","f":"acquire","colour":"red"}` + "\n" + ev + "\n",
		"trailing":      ev + ` {"x":1}` + "\n" + ev + "\n",
		"bad-process":   `{"index":0,"time":1,"process":-5,"type":"invoke","f":"acquire"}` + "\n" + ev + "\n",
		"array":         "[1,2,3]\n" + ev + "\n",
		"long-line":     strings.Repeat("x", 2<<20) + "\n",
		"binary":        "\x00\x01\x02\xff\xfe\n" + ev + "\n",
		"empty":         "",
		"blank":         "\n\n  \n",
		"faults-only":   `{"index":0,"time":1,"process":"nemesis","type":"invoke","f":"start-partition"}` + "\n",
	}
	paths := map[string]string{}
	for name, body := range files {
		p := filepath.Join(dir, name+".jsonl")
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		paths[name] = p
	}
	// Run directories for `harness report`: one without a history, one
	// with a bad one.
	for _, name := range []string{"run-empty", "run-malformed"} {
		d := filepath.Join(dir, name)
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		paths[name] = d
	}
	if err := os.WriteFile(filepath.Join(paths["run-malformed"], "history.jsonl"), []byte(files["malformed"]), 0o644); err != nil {
		t.Fatal(err)
	}
	// Issue 22: files that are not regular, too large, and expectations
	// that name what does not exist.
	expects := map[string]string{
		"expect-two-docs":     "rules:\n  - {lock: token, expect: valid}\n---\nrules:\n  - {lock: token, expect: invalid}\n",
		"expect-tokne":        "rules:\n  - {lock: tokne, expect: valid}\n",
		"expect-podman":       "rules:\n  - {lock: token, backend: podman, expect: valid}\n",
		"expect-meteor":       "rules:\n  - {lock: token, nemeses: kill+meteor, expect: valid}\n",
		"expect-scenario":     "rules:\n  - {scenario: no-such-scenario, expect: valid}\n",
		"expect-empty":        "",
		"target-big.yml":      "# " + strings.Repeat("x", 2<<20) + "\n",
		"expect-big.yaml":     "# " + strings.Repeat("x", 2<<20) + "\n",
		"expect-comment-only": "# nothing here\n",
		"target-twice.yml":    "nodes: [{name: n1, addr: 127.0.0.1:27101}, {name: n2, addr: localhost:27101}]\nstorage: 127.0.0.1:27103\n",
		"target-storage.yml":  "nodes: [{name: n1, addr: 127.0.0.1:27101}]\nstorage: localhost:027101\n",
	}
	for name, body := range expects {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		paths[name] = p
	}
	good := "lock: token\nworkload: {clients: 2, ttl: 1s}\ntime_limit: 2s\nsteps:\n  - at: 500ms\n    nemesis: client-pause\n    action: holder\n    params: {duration: 1s}\n"
	schedules := map[string]string{
		"sched-fault":    strings.Replace(good, "client-pause", "partiton", 1),
		"sched-target":   good + "    targets: [n7]\n",
		"sched-await":    good + "    await: {lease_left: 5s}\n",
		"sched-negative": strings.Replace(good, "at: 500ms", "at: -500ms", 1),
		"sched-field":    strings.Replace(good, "action:", "acton:", 1),
		"sched-two":      good + "---\nlock: token\n",
		"sched-nodes":    good + "nodes: 3\n",
		"sched-noexpect": "name: mine\n" + good,
	}
	for name, body := range schedules {
		p := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		paths[name] = p
	}
	paths["fifo"] = filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(paths["fifo"], 0o600); err != nil {
		t.Fatal(err)
	}
	paths["file"] = paths["malformed"]
	paths["dir"] = dir
	return paths
}

// storeState is everything in a store, and where latest points.
func storeState(t *testing.T, store string) ([]string, string) {
	t.Helper()
	var all []string
	_ = filepath.WalkDir(store, func(p string, d fs.DirEntry, err error) error {
		if err == nil {
			all = append(all, p)
		}
		return nil
	})
	latest, _ := os.Readlink(filepath.Join(store, "latest"))
	return all, latest
}

// TestBadInputs tries bad inputs across every command. Each must exit 2
// with an error that names the problem and the way out, start nothing
// (no redis-server, no node directory) and write nothing (the store, with
// its one complete run, is unchanged and latest still points at that run).
func TestBadInputs(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // node directories would go here
	store := t.TempDir()
	run := filepath.Join(store, "token", "20260101T000000.000Z")
	if err := os.MkdirAll(run, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"history.jsonl", "index.html"} {
		if err := os.WriteFile(filepath.Join(run, f), []byte("{}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("token/20260101T000000.000Z", filepath.Join(store, "latest")); err != nil {
		t.Fatal(err)
	}
	before, latestBefore := storeState(t, store)
	f := badInputFixtures(t)
	runArgs := func(a ...string) []string { return append([]string{"run", "--store", store}, a...) }
	tok := func(a ...string) []string { return runArgs(append([]string{"--lock", "token"}, a...)...) }
	mat := func(a ...string) []string {
		return append([]string{"matrix", "--locks", "token", "--nemeses", "kill", "--seeds", "1", "--store", store}, a...)
	}

	cases := []badCase{
		// run: what to test
		{"no lock", runArgs(), "--lock is required", "known locks: "},
		{"unknown lock", runArgs("--lock", "nope"), `unknown lock "nope"`, "known locks: "},
		{"unknown nemesis", tok("--nemesis", "meteor"), `unknown nemesis "meteor"`, "known"},
		{"multi-node lock on replicas", runArgs("--lock", "redlock", "--nemesis", "failover"), "topology is replicated", "--topology independent"},
		{"replica lock on independent nodes", runArgs("--lock", "token-wait", "--topology", "independent"), "needs a master with replicas", "--topology replicated"},
		{"wrong node count", tok("--nodes", "3"), "exactly 1 node", "--nodes 1"},
		{"renew without Renew", runArgs("--lock", "setnx", "--renew-before-write"), "setnx has no Renew", "drop --renew-before-write"},
		{"negative client retries", tok("--client-retries", "-1"), "--client-retries must not be negative", "--client-retries 3"},
		{"negative node count", tok("--nodes", "-1"), "exactly 1 node", "--nodes 1"},
		// run: numbers
		{"zero clients", tok("--clients", "0"), "--clients must be at least 1", "--clients 5"},
		{"negative clients", tok("--clients", "-3"), "--clients must be at least 1", "--clients 5"},
		{"100000 clients", tok("--clients", "100000"), "more than the harness supports", "--clients 1000 or fewer"},
		{"zero keys", tok("--keys", "0"), "--keys must be at least 1", "--keys 1"},
		{"zero ttl", tok("--ttl", "0s"), "--ttl must be positive", "--ttl 1s"},
		{"negative ttl", tok("--ttl", "-1s"), "--ttl must be positive", "--ttl 1s"},
		{"zero time limit", tok("--time-limit", "0s"), "--time-limit must be positive", "--time-limit 25s"},
		{"negative time limit", tok("--time-limit", "-5s"), "--time-limit must be positive", "--time-limit 25s"},
		{"negative recovery", tok("--recovery", "-1s"), "--recovery must not be negative", "give a duration"},
		{"negative check timeout", tok("--check-timeout", "-1s"), "--check-timeout must not be negative", "give a duration"},
		{"negative hold", tok("--hold", "-1s"), "--hold must not be negative", "give a duration"},
		{"negative acquire timeout", tok("--acquire-timeout", "-1s"), "--acquire-timeout must not be negative", "give a duration"},
		{"negative client pause", tok("--client-pause", "-1s"), "--client-pause must not be negative", "give a duration"},
		{"NaN pause rate", tok("--client-pause-rate", "NaN"), "between 0 and 1, got NaN", "--client-pause-rate 0.1"},
		{"pause rate above 1", tok("--client-pause-rate", "2"), "between 0 and 1", "--client-pause-rate 0.1"},
		{"negative pause rate", tok("--client-pause-rate", "-0.5"), "between 0 and 1", "--client-pause-rate 0.1"},
		{"infinite pause rate", tok("--client-pause-rate", "+Inf"), "between 0 and 1", "--client-pause-rate 0.1"},
		{"negative latency", tok("--latency", "-1s"), "--latency must not be negative", "give a duration"},
		{"negative restart delay", tok("--restart-delay", "-1s"), "--restart-delay must not be negative", "give a duration"},
		{"negative clock bump", tok("--nemesis", "clock", "--clock-bump", "-1m"), "--clock-bump must be positive", "--clock-bump 1m"},
		{"negative nemesis interval", tok("--nemesis-interval", "-1s"), "--nemesis-interval must not be negative", "give a duration"},
		{"malformed duration", tok("--time-limit", "ten"), `invalid argument "ten"`, "harness run --help"},
		{"negative seed", tok("--seed", "-3"), "invalid argument", "harness run --help"},
		{"malformed clients", tok("--clients", "many"), "invalid argument", "harness run --help"},
		// run: topology
		{"unknown topology", tok("--topology", "ring"), `unknown topology "ring"`, "--topology"},
		{"unknown backend", tok("--backend", "podman"), `unknown --backend "podman"`, "use local or docker"},
		{"image without docker", tok("--image", "redis:7.4"), "--image redis:7.4 needs --backend docker", "--backend docker"},
		{"missing target file", tok("--target", "/nonexistent/t.yml"), "target file /nonexistent/t.yml", "compose/sentinel.target.yml"},
		{"target and docker", tok("--backend", "docker", "--target", "t.yml"), "already running", "leave out --backend docker"},
		{"negative replicas", tok("--topology", "replicated", "--replicas", "-2"), "at least 1", "--replicas"},
		{"unknown failover", tok("--topology", "replicated", "--failover", "raft"), `unknown failover "raft"`, "--failover"},
		{"unknown persistence", tok("--persistence", "fsync-maybe"), `unknown persistence "fsync-maybe"`, "--persistence"},
		{"base port too high", tok("--base-port", "70000"), "base port 70000 out of range", "--base-port"},
		{"negative base port", tok("--base-port", "-1"), "base port -1 out of range", "--base-port"},
		// run --schedule: a schedule file refused before anything starts
		{"schedule missing", runArgs("--schedule", filepath.Join(f["dir"], "none.yaml")), "no such file", "give the path of a schedule file"},
		{"schedule unknown fault", runArgs("--schedule", f["sched-fault"]), `line 6: steps[0].nemesis: unknown fault "partiton"`, "see harness nemeses"},
		{"schedule missing target", runArgs("--schedule", f["sched-target"]), `line 9: steps[0].targets[0]: no node or client "n7"`, "this topology has nodes n1, clients c0 to c1"},
		{"schedule await never holds", runArgs("--schedule", f["sched-await"]), "line 9: steps[0].await.lease_left", "lengthen workload.ttl"},
		{"schedule negative time", runArgs("--schedule", f["sched-negative"]), "line 5: steps[0].at: negative duration -500ms", "give a positive duration"},
		{"schedule unknown field", runArgs("--schedule", f["sched-field"]), `line 7: unknown field "acton" in a step`, "known: action, at, await"},
		{"schedule two documents", runArgs("--schedule", f["sched-two"]), "line 9: a second YAML document", "holds one document"},
		{"schedule /dev/zero", runArgs("--schedule", "/dev/zero"), "larger than", "a schedule is a few kilobytes"},
		{"schedule a directory", runArgs("--schedule", f["dir"]), "is a directory", "its schedule.yaml"},
		{"schedule and flags", runArgs("--schedule", f["sched-nodes"], "--lock", "redlock", "--clients", "3"), "--clients, --lock with --schedule", "edit the file"},
		{"schedule the run refuses", runArgs("--schedule", f["sched-nodes"]), "line 9: lock token uses exactly 1 node", "nodes 1"},
		{"scenario file bad", []string{"scenario", "run", f["sched-fault"], "--store", store}, `line 6: steps[0].nemesis: unknown fault "partiton"`, "see harness nemeses"},
		{"scenario file without expectation", []string{"scenario", "run", f["sched-noexpect"], "--store", store}, "no expected verdict of lock-promise", "a scenario expects a verdict of each checker"},
		{"scenario file missing", []string{"scenario", "run", "./none.yaml", "--store", store}, "no such file", "give the path of a schedule file"},
		// run: the command line itself
		{"store is a file", runArgs("--lock", "token", "--store", f["file"]), "not writable", "choose another with --store"},
		{"unknown flag", tok("--frobnicate"), "unknown flag: --frobnicate", "harness run --help"},
		{"stray argument", tok("extra"), `unknown command "extra"`, "harness run --help"},
		// scenario
		{"scenario typo", []string{"scenario", "runn", "X"}, `unknown command "runn"`, "did you mean run"},
		{"scenario unknown command", []string{"scenario", "bogus"}, `unknown command "bogus"`, "harness scenario --help"},
		{"unknown scenario", []string{"scenario", "run", "nope", "--store", store}, `unknown scenario "nope"`, "known: "},
		{"scenario without a name", []string{"scenario", "run", "--store", store}, "name a scenario", "--all"},
		{"scenario names and --all", []string{"scenario", "run", "--all", "redlock-clock-jump", "--store", store}, "not both", "names or --all"},
		{"scenario list argument", []string{"scenario", "list", "x"}, `unknown command "x"`, "harness scenario list --help"},
		{"scenario unknown flag", []string{"scenario", "run", "--frob"}, "unknown flag", "harness scenario run --help"},
		// check
		{"check missing file", []string{"check", filepath.Join(f["dir"], "none.jsonl")}, "no such file", "history.jsonl"},
		{"check no argument", []string{"check"}, "accepts 1 arg", "harness check --help"},
		{"check two arguments", []string{"check", f["malformed"], f["malformed"]}, "accepts 1 arg", "harness check --help"},
		{"check a directory", []string{"check", f["dir"]}, "is a directory", "harness report"},
		{"check malformed line", []string{"check", f["malformed"]}, "line 2", "history.jsonl"},
		{"check negative deadline", []string{"check", f["neg-deadline"]}, "event 1: negative deadline -5", "history.jsonl"},
		{"check negative time", []string{"check", f["neg-time"]}, "negative time", "history.jsonl"},
		{"check time near MaxInt64", []string{"check", f["huge-time"]}, "event 1: time 9223372036854775000 ns is out of range", "history.jsonl"},
		{"check deadline near MaxInt64", []string{"check", f["huge-deadline"]}, "event 1: deadline 9223372036854775800 or duration 0 ns is out of range", "history.jsonl"},
		{"check negative fence", []string{"check", f["neg-fence"]}, "negative fence", "history.jsonl"},
		{"check negative duration", []string{"check", f["neg-duration"]}, "negative duration", "history.jsonl"},
		{"check negative index", []string{"check", f["neg-index"]}, "negative index", "history.jsonl"},
		{"check unknown type", []string{"check", f["bad-type"]}, `unknown type "maybe"`, "history.jsonl"},
		{"check missing f", []string{"check", f["no-f"]}, "missing f", "history.jsonl"},
		{"check unknown field", []string{"check", f["unknown-field"]}, `unknown field "colour"`, "history.jsonl"},
		{"check trailing data", []string{"check", f["trailing"]}, "trailing data", "history.jsonl"},
		{"check bad process", []string{"check", f["bad-process"]}, "non-negative number", "history.jsonl"},
		{"check not an object", []string{"check", f["array"]}, "line 1", "history.jsonl"},
		{"check binary", []string{"check", f["binary"]}, "line 1", "history.jsonl"},
		{"check 2 MB line", []string{"check", f["long-line"]}, "line 1: longer than", "history.jsonl"},
		{"check /dev/zero", []string{"check", "/dev/zero"}, "line 1: longer than", "history.jsonl"},
		{"check empty history", []string{"check", f["empty"]}, "the history is empty", "history.jsonl of a run"},
		{"check blank history", []string{"check", f["blank"]}, "the history is empty", "history.jsonl of a run"},
		{"check faults only", []string{"check", f["faults-only"]}, "no client operation", "history.jsonl of a run"},
		{"check zero timeout", []string{"check", "--check-timeout", "0s", f["malformed"]}, "--check-timeout must be positive", "--check-timeout 30s"},
		{"check negative timeout", []string{"check", "--check-timeout", "-1s", f["malformed"]}, "--check-timeout must be positive", "--check-timeout 30s"},
		// report
		{"report missing directory", []string{"report", filepath.Join(f["dir"], "none")}, "is not a run directory", "store/<test>/<run>"},
		{"report a file", []string{"report", f["file"]}, "is not a run directory", "store/<test>/<run>"},
		{"report without history", []string{"report", f["run-empty"]}, "no such file", "holds the history.jsonl"},
		{"report malformed history", []string{"report", f["run-malformed"]}, "line 2", "holds the history.jsonl"},
		{"report zero timeout", []string{"report", "--check-timeout", "0s", f["run-empty"]}, "--check-timeout must be positive", "--check-timeout 30s"},
		{"report no argument", []string{"report"}, "accepts 1 arg", "harness report --help"},
		// serve
		{"serve missing store", []string{"serve", "--store", filepath.Join(f["dir"], "none")}, "no such file", "--store"},
		{"serve store is a file", []string{"serve", "--store", f["file"]}, "is not a directory", "--store"},
		{"serve bad address", []string{"serve", "--store", store, "--addr", "nowhere"}, "listen on nowhere", "--addr"},
		{"serve stray argument", []string{"serve", "x"}, `unknown command "x"`, "harness serve --help"},
		// run: issue 22 (round three)
		{"ttl of 1.5ms", tok("--ttl", "1500us"), "--ttl must be a whole number of milliseconds", "--ttl 2ms"},
		{"ttl of 1ns", tok("--ttl", "1ns"), "--ttl must be a whole number of milliseconds", "--ttl 1ms"},
		{"no fault fits", tok("--nemesis", "stale-replica", "--time-limit", "2s"), "no fault can strike in the run", "--time-limit 12.5s"},
		{"interval as long as the run", tok("--nemesis", "kill", "--time-limit", "5s", "--nemesis-interval", "5s"), "no fault can strike", "shorter --nemesis-interval"},
		{"huge time limit", tok("--time-limit", "2562047h", "--recovery", "2562047h"), "--time-limit 2562047h0m0s is longer than the harness supports (24h0m0s)", "--time-limit 24h0m0s or less"},
		{"huge recovery", tok("--recovery", "2562047h"), "--recovery 2562047h0m0s is longer than the harness supports (1h0m0s)", "--recovery 1h0m0s or less"},
		{"empty nemesis", tok("--nemesis", ""), "--nemesis is given but names no nemesis", "harness nemeses"},
		{"empty nemesis in a list", tok("--nemesis", "kill,"), `--nemesis has an empty name ("kill,")`, "known: "},
		{"cluster of 100000 masters", tok("--topology", "cluster", "--masters", "100000"), "is 200000 nodes, more than the harness starts (100", "at most --masters 50"},
		{"cluster of 100000 replicas", tok("--topology", "cluster", "--replicas", "100000"), "is 300003 nodes, more than the harness starts (100", "--masters 3 --replicas 1"},
		{"100000 replicas", tok("--topology", "replicated", "--replicas", "100000"), "more than a deployment the harness starts may have (100", "--replicas"},
		// run and matrix: files named by a flag (issue 22 rows 7, 9, 10, 19)
		{"target /dev/zero", tok("--target", "/dev/zero"), "target file /dev/zero is a character device, not a regular file", "compose/sentinel.target.yml"},
		{"target FIFO", tok("--target", f["fifo"]), "is a named pipe (FIFO), not a regular file", "give the path of the target file"},
		{"target a directory", tok("--target", f["dir"]), "is a directory, not a regular file", "compose/sentinel.target.yml"},
		{"target too large", tok("--target", f["target-big.yml"]), "is 2.0 MiB, more than a target file may be (1.0 MiB)", "compose/sentinel.target.yml"},
		{"target lists a server twice", tok("--target", f["target-twice.yml"]), "node n1 (127.0.0.1:27101) and node n2 (localhost:27101) are one server", "list each server once"},
		{"target storage is a node", tok("--target", f["target-storage.yml"]), "storage localhost:027101 is the server of node n1", "a Redis of its own"},
		{"expect /dev/zero", mat("--expect", "/dev/zero"), "--expect /dev/zero is a character device, not a regular file", "give the path of the expectations file"},
		{"expect FIFO", mat("--expect", f["fifo"]), "is a named pipe (FIFO), not a regular file", "give the path of the expectations file"},
		{"expect too large", mat("--expect", f["expect-big.yaml"]), "more than an expectations file may be (1.0 MiB)", "is it the right file?"},
		{"expect two documents", mat("--expect", f["expect-two-docs"]), "more than one YAML document", "under the one rules: list"},
		{"expect unknown lock", mat("--expect", f["expect-tokne"]), `lock "tokne" matches no known lock`, "known: "},
		{"expect unknown backend", mat("--expect", f["expect-podman"]), `backend "podman" matches no known backend`, "known: local, docker"},
		{"expect unknown nemesis", mat("--expect", f["expect-meteor"]), `nemesis "meteor" (in nemeses "kill+meteor") matches no known nemesis`, "known: none, "},
		{"expect unknown scenario", mat("--expect", f["expect-scenario"]), `scenario "no-such-scenario" matches no known scenario`, "known: "},
		{"expect empty file", mat("--expect", f["expect-empty"]), "no rules", "leave out --expect"},
		{"expect comments only", mat("--expect", f["expect-comment-only"]), "no rules", "matrix/expectations.yaml"},
		{"merge expect FIFO", []string{"matrix", "merge", "--store", store, "--expect", f["fifo"], f["dir"]}, "is a named pipe (FIFO)", "give the path of the expectations file"},
		// the command itself
		{"unknown command", []string{"frobnicate"}, `unknown command "frobnicate"`, "harness --help"},
	}
	if len(cases) < 60 {
		t.Fatalf("only %d bad inputs", len(cases))
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, c.args...)
			if code != 2 {
				t.Errorf("exit code %d, want 2 (stderr: %s)", code, stderr)
			}
			if !strings.Contains(stderr, c.problem) {
				t.Errorf("stderr does not name the problem (%q):\n%s", c.problem, stderr)
			}
			if !strings.Contains(stderr, c.fix) {
				t.Errorf("stderr does not name the fix (%q):\n%s", c.fix, stderr)
			}
			assertNothingLeft(t, store, tmp, before, latestBefore)
		})
	}
}

// assertNothingLeft checks that a refused command started nothing and
// wrote nothing.
func assertNothingLeft(t *testing.T, store, tmp string, before []string, latest string) {
	t.Helper()
	if pids := serversUnder(t, tmp); len(pids) > 0 {
		t.Errorf("redis-servers left running: %v", pids)
	}
	if dirs, _ := filepath.Glob(filepath.Join(tmp, "lockharness-nodes-*")); len(dirs) > 0 {
		t.Errorf("node directories left: %v", dirs)
	}
	after, latestAfter := storeState(t, store)
	if !slices.Equal(before, after) {
		t.Errorf("the store changed:\nbefore %v\nafter  %v", before, after)
	}
	if latestAfter != latest {
		t.Errorf("latest moved from %q to %q", latest, latestAfter)
	}
}

// More clients than the open-file limit allows are refused up front,
// naming the limit and both ways out; the binary runs under a lowered
// limit (the Go runtime raises the soft limit to the hard one, so the hard
// one is what counts).
func TestClientsBeyondOpenFileLimit(t *testing.T) {
	store := t.TempDir()
	cmd := exec.Command("sh", "-c", `ulimit -Sn 1024 && ulimit -Hn 1024 && exec "$0" "$@"`, harnessBin, "run", "--lock", "redlock", "--clients", "200", "--store", store)
	out, _ := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); code != 2 {
		t.Fatalf("exit %d, want 2: %s", code, out)
	}
	for _, want := range []string{"open files", "1024", "--clients", "ulimit", "hard limit"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("message lacks %q: %s", want, out)
		}
	}
	if entries, _ := os.ReadDir(store); len(entries) != 0 {
		t.Errorf("a refused run wrote to the store: %v", entries)
	}
}

// A target whose servers are not what its file says is refused before the
// run (issue 22 row 12: a replicated target whose replica was in fact a
// master ran, and said VALID): exit 2, naming the node, its real role and
// the fix, and the store as it was.
func TestTargetWithWrongRoles(t *testing.T) {
	redistest.Require(t)
	ind := redistest.Up(t, sut.Config{Nodes: 2})
	file := filepath.Join(t.TempDir(), "t.yml")
	body := fmt.Sprintf("topology: replicated\nnodes:\n  - {name: n1, addr: %q, role: master}\n  - {name: n2, addr: %q, role: replica}\nstorage: %q\nflush: true\n",
		ind.Nodes[0].Addr(), ind.Nodes[1].Addr(), ind.StorageAddr())
	if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	store := t.TempDir()
	code, _, stderr := runCLI(t, "run", "--lock", "token-wait", "--target", file, "--time-limit", "2s", "--store", store)
	if code != 2 || !strings.Contains(stderr, "node n2 at "+ind.Nodes[1].Addr()+" reports role:master in INFO replication, and the target file makes it a replica") ||
		!strings.Contains(stderr, "correct its role in the file") {
		t.Errorf("exit %d, stderr %s", code, stderr)
	}
	if entries, _ := os.ReadDir(store); len(entries) != 0 {
		t.Errorf("a refused run wrote to the store: %v", entries)
	}
}
