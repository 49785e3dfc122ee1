package cli

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/reports"
)

// userLock is the lock testdata/usermain registers in its own main.
const userLock = "my-setnx-px"

// buildUserMain builds testdata/usermain, a team's own harness: a main of
// its own that registers its lock and calls Main.
func buildUserMain(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "usermain")
	if out, err := exec.Command("go", "build", "-o", bin, "./testdata/usermain").CombinedOutput(); err != nil {
		t.Fatalf("build testdata/usermain: %v\n%s", err, out)
	}
	return bin
}

// runBin runs a binary with TMPDIR under tmp (its servers' files go
// there) and returns its exit code and output.
func runBin(t *testing.T, tmp, bin string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("%s %v: %v", bin, args, err)
	}
	return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
}

// A lock registered in a user's own main runs through run, scenario run
// and matrix (with JUnit) against real redis-server processes, with the
// verdicts its mechanism gives: valid without faults; under a pause past
// its lease, the lost update a lock without fencing cannot prevent. The
// stored run reads back with the stock harness, which knows nothing of
// the lock, and no server outlives any of the commands.
func TestUsersOwnMain(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: builds a program and runs redis-server")
	}
	requireRedis(t)
	t.Parallel()
	bin := buildUserMain(t)
	// The subtests run side by side, each with a store of its own; their
	// servers' files all go under tmp, checked once they are all done.
	tmp := t.TempDir()
	t.Cleanup(func() {
		if left := serversUnder(t, tmp); len(left) > 0 {
			t.Errorf("servers left running: %v", left)
		}
	})

	t.Run("run", func(t *testing.T) {
		t.Parallel()
		store := t.TempDir()
		code, stdout, stderr := runBin(t, tmp, bin, "run", "--lock", userLock, "--clients", "3", "--time-limit", "3s",
			"--recovery", "1s", "--seed", "7", "--store", store, "--json")
		var res reports.Results
		if err := json.Unmarshal([]byte(stdout), &res); err != nil {
			t.Fatalf("exit %d, results: %v\n%s", code, err, stderr)
		}
		if code != 0 || res.Verdict != checker.Valid || res.Meta.Lock != userLock || res.Coverage.Grants == 0 {
			t.Fatalf("exit %d, verdict %s of lock %s, %d grants\n%s", code, res.Verdict, res.Meta.Lock, res.Coverage.Grants, stderr)
		}
		// The stock harness reads the stored run: the record carries the
		// lock's facts (no registry of the user's needed).
		runs, _ := filepath.Glob(filepath.Join(store, userLock, "2*"))
		if len(runs) != 1 {
			t.Fatalf("runs stored: %v", runs)
		}
		if code, out, errs := runBin(t, tmp, harnessBin, "check", filepath.Join(runs[0], reports.HistoryFile)); code != 0 || !strings.Contains(out, "VALID") {
			t.Errorf("harness check of the stored run: exit %d\n%s%s", code, out, errs)
		}
		if code, out, errs := runBin(t, tmp, harnessBin, "report", runs[0]); code != 0 {
			t.Errorf("harness report of the stored run: exit %d\n%s%s", code, out, errs)
		}
	})

	t.Run("scenario run", func(t *testing.T) {
		t.Parallel()
		store := t.TempDir()
		code, stdout, stderr := runBin(t, tmp, bin, "scenario", "run", "gc-pause-stale-write", "--lock", userLock, "--store", store, "--json")
		var rows []scenarioRow
		if err := json.Unmarshal([]byte(stdout), &rows); err != nil || len(rows) != 1 {
			t.Fatalf("exit %d, rows %v: %v\n%s", code, rows, err, stderr)
		}
		r := rows[0]
		want := map[string]string{checker.LockPromise: "valid", checker.Resource: "invalid", checker.Liveness: "valid"}
		if code != 0 || !r.Pass || r.Lock != userLock || !equalMaps(r.Observed, want) ||
			len(r.Expected) != 1 || r.Expected[checker.Resource] != "invalid" {
			t.Fatalf("exit %d, row %+v\n%s", code, r, stderr)
		}
	})

	// A scenario file may name the main's own lock (as the files of
	// scenarios/upstream name shipped adapters).
	t.Run("scenario file", func(t *testing.T) {
		t.Parallel()
		store := t.TempDir()
		files, _ := filepath.Glob(filepath.Join("..", "scenarios", "catalogue", "*", "*-gc-pause-stale-write.yaml"))
		if len(files) != 1 {
			t.Fatalf("catalogue files of gc-pause-stale-write: %v", files)
		}
		src, err := os.ReadFile(files[0])
		if err != nil {
			t.Fatal(err)
		}
		text := strings.Replace(string(src), "name: gc-pause-stale-write", "name: mine-gc-pause", 1)
		text = strings.Replace(text, "\nlock: token\n", "\nlock: "+userLock+"\n", 1)
		if !strings.Contains(text, "lock: "+userLock) {
			t.Fatalf("the catalogue file changed: no \"lock: token\" line to replace")
		}
		file := filepath.Join(t.TempDir(), "mine.yaml")
		if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		code, stdout, stderr := runBin(t, tmp, bin, "scenario", "run", file, "--store", store, "--json")
		var rows []scenarioRow
		if err := json.Unmarshal([]byte(stdout), &rows); err != nil || len(rows) != 1 {
			t.Fatalf("exit %d, rows %v: %v\n%s", code, rows, err, stderr)
		}
		if r := rows[0]; code != 0 || !r.Pass || r.Lock != userLock {
			t.Fatalf("exit %d, row %+v\n%s", code, r, stderr)
		}
	})

	t.Run("matrix", func(t *testing.T) {
		t.Parallel()
		store := t.TempDir()
		expect := filepath.Join(t.TempDir(), "expect.yaml")
		if err := os.WriteFile(expect, []byte("rules:\n"+
			"  - {lock: "+userLock+", nemeses: none, expect: valid}\n"+
			"  - {lock: "+userLock+", nemeses: client-pause, expect: invalid}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		junit := filepath.Join(t.TempDir(), "junit.xml")
		code, stdout, stderr := runBin(t, tmp, bin, "matrix", "--locks", userLock, "--nemeses", "none,client-pause", "--seeds", "1",
			"--time-limit", "4s", "--recovery", "1s", "--nemesis-interval", "1s", "--expect", expect, "--junit", junit, "--store", store)
		if code != 0 {
			t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
		}
		cases := junitCases(t, junit)
		verdicts := map[string]string{}
		for _, c := range cases {
			if c.Props["lock"] != userLock || !strings.HasPrefix(c.Name, userLock+"/") || c.Failure != nil || c.Error != nil {
				t.Errorf("testcase %+v", c)
			}
			verdicts[c.Props["nemeses"]] = c.Props["verdict"]
		}
		if len(cases) != 2 || verdicts["none"] != "valid" || verdicts["client-pause"] != "invalid" {
			t.Errorf("JUnit verdicts %v of %d cases", verdicts, len(cases))
		}
	})
}

// junitCase is what the test reads of a JUnit testcase.
type junitCase struct {
	Name    string    `xml:"name,attr"`
	Failure *struct{} `xml:"failure"`
	Error   *struct{} `xml:"error"`
	Prop    []struct {
		Name  string `xml:"name,attr"`
		Value string `xml:"value,attr"`
	} `xml:"properties>property"`
	Props map[string]string `xml:"-"`
}

func junitCases(t *testing.T, file string) []junitCase {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Cases []junitCase `xml:"testsuite>testcase"`
	}
	if err := xml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("junit: %v", err)
	}
	for i, c := range doc.Cases {
		doc.Cases[i].Props = map[string]string{}
		for _, p := range c.Prop {
			doc.Cases[i].Props[p.Name] = p.Value
		}
	}
	return doc.Cases
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// docs/locks.md quotes the main of testdata/usermain as it is: the page
// shows what TestUsersOwnMain runs.
func TestDocsQuoteTheUsersMain(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("testdata", "usermain", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(src, []byte("func main() {"))
	if i < 0 {
		t.Fatal("testdata/usermain/main.go has no func main")
	}
	doc, err := os.ReadFile(filepath.Join("..", "docs", "locks.md"))
	if err != nil {
		t.Fatal(err)
	}
	quote := "```go\n" + strings.TrimSpace(string(src[i:])) + "\n```"
	if !bytes.Contains(doc, []byte(quote)) {
		t.Errorf("docs/locks.md does not quote the main of testdata/usermain as it is; quote:\n%s", quote)
	}
}
