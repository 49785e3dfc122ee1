package cli

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/lockharness/lockharness/matrix"
	cdocker "github.com/lockharness/lockharness/sut/docker"
	"github.com/lockharness/lockharness/sut/docker/dockertest"
)

// A small real matrix through the command line, as CI runs it: two shards,
// merged; the merge equals the unsharded matrix over the same runs (which
// re-runs nothing: resume); an expectations file that says what was seen
// exits 0, one deliberately wrong expectation exits 1 naming the cell.
func TestMatrixShardsMergeResumeAndExpectations(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: runs redis-server")
	}
	requireRedis(t)
	t.Parallel()
	dir := t.TempDir()
	args := []string{"matrix", "--locks", "token,set-nx-ex", "--nemeses", "kill,client-pause", "--seeds", "1",
		"--time-limit", "3s", "--recovery", "1s", "--nemesis-interval", "1s"}
	with := func(extra ...string) []string { return append(append([]string{}, args...), extra...) }
	var shards []string
	for i := 1; i <= 2; i++ {
		store := filepath.Join(dir, fmt.Sprintf("shard-%d", i))
		code, _, stderr := runCLI(t, with("--shard", fmt.Sprintf("%d/2", i), "--store", store)...)
		if code != 0 && code != 1 {
			t.Fatalf("shard %d/2: exit %d\n%s", i, code, stderr)
		}
		m, err := matrix.ReadJSON(filepath.Join(store, "matrix", matrix.JSONFile))
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Cells) != 2 || m.Shard != fmt.Sprintf("%d/2", i) {
			t.Fatalf("shard %d/2 ran %d cells (shard %q), want 2", i, len(m.Cells), m.Shard)
		}
		shards = append(shards, store)
	}
	merged := filepath.Join(dir, "merged")
	junit := filepath.Join(dir, "junit.xml")
	code, stdout, stderr := runCLI(t, "matrix", "merge", "--store", merged, "--junit", junit, shards[0], shards[1])
	if code != 0 && code != 1 {
		t.Fatalf("merge: exit %d\n%s%s", code, stdout, stderr)
	}
	m, err := matrix.ReadJSON(filepath.Join(merged, "matrix", matrix.JSONFile))
	if err != nil {
		t.Fatal(err)
	}
	if m.Tally.Cells != 4 || m.Tally.NotRun != 0 || m.Tally.Errors != 0 {
		t.Fatalf("merged tally %+v", m.Tally)
	}
	if b, err := os.ReadFile(junit); err != nil || !bytes.Contains(b, []byte(`<testcase name="token/kill/seed-1"`)) {
		t.Fatalf("junit copy: %v", err)
	}

	// The unsharded command over the merged store resumes every cell.
	code, _, stderr = runCLI(t, with("--store", merged)...)
	if code != m.ExitCode() {
		t.Fatalf("unsharded re-run: exit %d, want %d\n%s", code, m.ExitCode(), stderr)
	}
	if strings.Count(stderr, "already in the store") != 4 {
		t.Errorf("resume re-ran cells:\n%s", stderr)
	}
	whole, err := matrix.ReadJSON(filepath.Join(merged, "matrix", matrix.JSONFile))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := m.Canonical()
	b, _ := whole.Canonical()
	if !bytes.Equal(a, b) {
		t.Errorf("merged shards differ from the unsharded matrix:\n%s\n---\n%s", a, b)
	}

	// Expectations: what was observed passes; one cell expected otherwise
	// fails, named.
	var rules strings.Builder
	rules.WriteString("rules:\n")
	var flip matrix.CellResult
	for _, c := range whole.Cells {
		v := string(c.Verdict)
		if v != "valid" && v != "invalid" {
			// unknown (a vacuous run) can only be expected as flaky.
			fmt.Fprintf(&rules, "  - lock: %s\n    nemeses: %s\n    expect: flaky\n    reason: %s in this test\n    link: https://example.com/issue\n", c.Lock, c.NemesisSet(), v)
			continue
		}
		fmt.Fprintf(&rules, "  - lock: %s\n    nemeses: %s\n    expect: %s\n", c.Lock, c.NemesisSet(), v)
		if flip.Lock == "" {
			flip = c
		}
	}
	if flip.Lock == "" {
		t.Fatalf("no cell gave a verdict of valid or invalid: %+v", whole.Tally)
	}
	good := filepath.Join(dir, "good.yaml")
	if err := os.WriteFile(good, []byte(rules.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	summary := filepath.Join(dir, "summary.md")
	if code, stdout, stderr := runCLI(t, with("--store", merged, "--expect", good, "--summary", summary)...); code != 0 {
		t.Fatalf("observed verdicts as expectations: exit %d\n%s%s", code, stdout, stderr)
	}
	if b, err := os.ReadFile(summary); err != nil || !bytes.Contains(b, []byte("every cell met its expectation")) {
		t.Errorf("summary: %v\n%s", err, b)
	}
	other := map[string]string{"valid": "invalid", "invalid": "valid"}[string(flip.Verdict)]
	bad := filepath.Join(dir, "bad.yaml")
	wrong := fmt.Sprintf("rules:\n  - lock: %s\n    nemeses: %s\n    expect: %s\n", flip.Lock, flip.NemesisSet(), other) + strings.TrimPrefix(rules.String(), "rules:\n")
	if err := os.WriteFile(bad, []byte(wrong), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, _ = runCLI(t, with("--store", merged, "--expect", bad)...)
	if code != 1 || !strings.Contains(stdout, "✗ "+flip.ID()+": expected "+other) {
		t.Errorf("one wrong expectation: exit %d, want 1 naming %s\n%s", code, flip.ID(), stdout)
	}
}

// Ctrl-C stops the matrix cleanly: exit 130, matrix.json written, the
// interrupted cell not counted as done (it runs again next time).
func TestMatrixInterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: runs redis-server")
	}
	requireRedis(t)
	t.Parallel()
	store := t.TempDir()
	cmd, stderr := startRunning(t, t.TempDir(), "matrix", "--locks", "token", "--nemeses", "none", "--seeds", "2", "--time-limit", "60s", "--store", store)
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != exitInterrupted {
		t.Fatalf("exit %d after SIGINT, want %d; stderr: %s", code, exitInterrupted, stderr.String())
	}
	m, err := matrix.ReadJSON(filepath.Join(store, "matrix", matrix.JSONFile))
	if err != nil {
		t.Fatal(err)
	}
	if m.Tally.NotRun != 2 {
		t.Errorf("tally after interrupt %+v, want both cells not run", m.Tally)
	}
	if _, ok, err := matrix.Lookup(store, m.Cells[0].Cell); ok || err != nil {
		t.Errorf("the interrupted cell counts as done (ok=%v, err=%v)", ok, err)
	}
	if left := serversUnder(t, store); len(left) > 0 {
		t.Errorf("redis-server left running: %v", left)
	}
}

func TestMatrixBadInput(t *testing.T) {
	store := t.TempDir()
	badExpect := filepath.Join(t.TempDir(), "e.yaml")
	if err := os.WriteFile(badExpect, []byte("rules:\n  - lock: token\n    expect: safe\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	climbing := climbingShard(t)
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"nothing", []string{"matrix", "--store", store}, "nothing to run"},
		{"merge a shard that climbs out", []string{"matrix", "merge", "--store", store, climbing}, "not one of its own runs"},
		{"name latest", []string{"matrix", "--locks", "token", "--nemeses", "kill", "--name", "latest", "--store", store}, "reserved for the link"},
		{"hidden name", []string{"matrix", "--locks", "token", "--nemeses", "kill", "--name", ".hidden", "--store", store}, "may not start with '.'"},
		{"unknown lock", []string{"matrix", "--locks", "nope", "--nemeses", "kill", "--store", store}, "known locks"},
		{"unknown nemesis", []string{"matrix", "--locks", "token", "--nemeses", "kill+meteor", "--store", store}, `unknown nemesis "meteor"`},
		{"zero seeds", []string{"matrix", "--locks", "token", "--nemeses", "kill", "--seeds", "0", "--store", store}, "--seeds must be at least 1"},
		{"bad shard", []string{"matrix", "--locks", "token", "--nemeses", "kill", "--shard", "3/2", "--store", store}, "1 ≤ i ≤ n"},
		{"bad expectations", []string{"matrix", "--locks", "token", "--nemeses", "kill", "--expect", badExpect, "--store", store}, `expect "safe"`},
		{"missing expectations", []string{"matrix", "--locks", "token", "--nemeses", "kill", "--expect", badExpect + ".none", "--store", store}, "no such file"},
		{"unknown scenario", []string{"matrix", "--scenarios", "nope", "--store", store}, "unknown scenario"},
		{"unknown backend", []string{"matrix", "--locks", "token", "--nemeses", "kill", "--backends", "local,podman", "--store", store}, `unknown backend "podman" in --backends`},
		{"image without docker", []string{"matrix", "--locks", "token", "--nemeses", "kill", "--image", "redis:7", "--store", store}, "add docker to --backends"},
		{"backend twice", []string{"matrix", "--locks", "token", "--nemeses", "kill", "--backends", "docker,docker", "--store", store}, `"docker" is named twice`},
		{"two billion seeds", []string{"matrix", "--locks", "token", "--nemeses", "kill", "--seeds", "2000000000", "--store", store}, "--seeds 2000000000 is more than a matrix runs (1000"},
		{"two billion repeats", []string{"matrix", "--scenarios", "all", "--repeat", "2000000000", "--store", store}, "--repeat 2000000000: a matrix runs each scenario at most 1000 times"},
		{"too many cells", []string{"matrix", "--locks", "token,fenced,redlock", "--nemeses", "kill,partition,clock,none", "--seeds", "1000", "--store", store}, "more than 10000 cells"},
		{"merge nothing", []string{"matrix", "merge", "--store", store, t.TempDir()}, "is it the store of a `harness matrix` run"},
	} {
		code, _, stderr := runCLI(t, c.args...)
		if code != exitError || !strings.Contains(stderr, c.want) {
			t.Errorf("%s: exit %d, stderr %q; want 2 and %q", c.name, code, stderr, c.want)
		}
	}
	if entries, _ := os.ReadDir(store); len(entries) != 0 {
		t.Errorf("bad input left %d entries in the store", len(entries))
	}
}

// A tiny matrix on both backends: every cell runs on local processes and
// in containers, the docker cell named, stored and reproduced as such, and
// no container is left behind.
func TestMatrixOnTwoBackends(t *testing.T) {
	requireRedis(t)
	dockertest.Require(t)
	t.Parallel()
	store := t.TempDir()
	code, stdout, stderr := runCLI(t, "matrix", "--locks", "token", "--nemeses", "kill", "--seeds", "1",
		"--time-limit", "3s", "--recovery", "1s", "--nemesis-interval", "1s", "--backends", "local,docker", "--store", store)
	if code != 0 && code != 1 {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	m, err := matrix.ReadJSON(filepath.Join(store, "matrix", matrix.JSONFile))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(m.Spec.Backends, []string{"local", "docker"}) || m.Tally.Cells != 2 || m.Tally.Errors != 0 || m.Tally.NotRun != 0 {
		t.Fatalf("spec backends %q, tally %+v", m.Spec.Backends, m.Tally)
	}
	byID := map[string]matrix.CellResult{}
	for _, c := range m.Cells {
		byID[c.ID()] = c
		if c.Verdict == "" || c.Dir == "" {
			t.Errorf("%s has no verdict or run: %+v", c.ID(), c)
		}
	}
	d, ok := byID["docker/token/kill/seed-1"]
	if !ok || !strings.HasPrefix(d.Dir, "matrix.docker.token.kill.seed-1/") || !strings.HasSuffix(d.Command, "--backend docker") {
		t.Fatalf("docker cell %+v (cells %v)", d, slices.Collect(maps.Keys(byID)))
	}
	if l, ok := byID["token/kill/seed-1"]; !ok || strings.Contains(l.Command, "--backend") {
		t.Fatalf("local cell %+v", l)
	}
	for _, want := range []string{"token (docker)", "token (local)"} {
		if !strings.Contains(readFile(t, filepath.Join(store, "matrix", matrix.HeatmapSVG)), want) {
			t.Errorf("heat map lacks the row %q", want)
		}
	}
	t.Logf("local %s, docker %s; wall %.0fs\n%s", byID["token/kill/seed-1"].Verdict, d.Verdict, m.WallSeconds, stderr)
	// Resume: the same command runs nothing again.
	code, _, stderr = runCLI(t, "matrix", "--locks", "token", "--nemeses", "kill", "--seeds", "1",
		"--time-limit", "3s", "--recovery", "1s", "--nemesis-interval", "1s", "--backends", "local,docker", "--store", store)
	if code != m.ExitCode() || strings.Count(stderr, "already in the store") != 2 {
		t.Errorf("resume: exit %d, want %d\n%s", code, m.ExitCode(), stderr)
	}
	if docker, err := exec.LookPath("docker"); err == nil {
		out, err := exec.Command(docker, "ps", "-aq", "--filter", "label="+cdocker.LabelPID+"="+strconv.Itoa(os.Getpid())).Output()
		if err != nil {
			t.Fatalf("docker ps: %v", err)
		}
		if left := strings.TrimSpace(string(out)); left != "" {
			t.Errorf("containers left running: %s", left)
		}
	}
}

func readFile(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// climbingShard is a shard's store whose matrix.json names a cell's run
// directory outside the shard, "../../x", with a directory there to copy.
func climbingShard(t *testing.T) string {
	t.Helper()
	base := t.TempDir()
	shard := filepath.Join(base, "a", "b")
	for _, d := range []string{filepath.Join(base, "x"), filepath.Join(shard, "matrix")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(base, "x", "results.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := matrix.Spec{Name: "matrix", Backends: []string{matrix.DefaultBackend}, Locks: []string{"token"},
		Nemeses: matrix.ParseNemesisSets([]string{"kill"}), Seeds: matrix.SeedRange(1), Run: matrix.DefaultRunParams()}
	c := spec.Cells()[0]
	m := matrix.Build(spec, matrix.Shard{}, []matrix.CellResult{{Cell: c, Test: c.TestName(), Dir: "../../x", Verdict: "valid"}})
	if err := m.WriteJSON(filepath.Join(shard, "matrix")); err != nil {
		t.Fatal(err)
	}
	return shard
}
