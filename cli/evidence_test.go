package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/reports"
)

// A valid verdict must carry its evidence. An empty history (a run killed
// during setup leaves one) is bad input: there is nothing to check. A
// history whose clients ran but were never granted anything is unknown
// (exit 2), with the reason, unless --allow-vacuous.
func TestCheckOfAnEmptyHistoryIsVacuous(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, reports.HistoryFile)
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := runCLI(t, "check", empty)
	if code != 2 || !strings.Contains(stderr, "the history is empty: nothing to check") {
		t.Fatalf("empty history: exit %d, stdout %q, stderr %q", code, out, stderr)
	}

	refused := filepath.Join(t.TempDir(), reports.HistoryFile)
	var lines []string
	for _, op := range []history.Op{
		{Index: 0, Time: 1, Process: 0, Type: history.Invoke, F: history.FAcquire, Key: "lock-0"},
		{Index: 1, Time: 2, Process: 0, Type: history.Fail, F: history.FAcquire, Key: "lock-0"},
	} {
		lines = append(lines, op.String())
	}
	if err := os.WriteFile(refused, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Nothing was granted, and the history has no final heal: liveness
	// cannot judge it either. Unknown, saying what was not reached, with
	// or without --allow-vacuous (which only keeps a valid verdict valid).
	for _, args := range [][]string{{"check", refused}, {"check", "--allow-vacuous", refused}} {
		code, out, stderr = runCLI(t, args...)
		if code != 2 || !strings.Contains(out, "UNKNOWN") || !strings.Contains(out, "not reached   nothing was granted") {
			t.Fatalf("%v: exit %d, stdout %q, stderr %q", args, code, out, stderr)
		}
		if !strings.Contains(out, "evidence      0 grants") {
			t.Errorf("no evidence line: %q", out)
		}
	}
}

// Flags of the client faults that are wrong are bad input, before anything
// starts.
func TestClientFaultFlags(t *testing.T) {
	store := t.TempDir()
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"failpoint of another lock", []string{"--lock", "token", "--nemesis", "client-pause", "--failpoints", "after-majority"}, "lock token has no failpoints"},
		{"unknown failpoint", []string{"--lock", "redlock", "--nemesis", "client-pause", "--failpoints", "after-nothing"}, `lock redlock has no failpoint "after-nothing" (it has: after-majority, after-validity-check)`},
		{"failpoints without a client fault", []string{"--lock", "redlock", "--failpoints", "after-majority"}, "add --nemesis client-pause or client-crash"},
		{"negative pause", []string{"--lock", "token", "--nemesis", "client-pause", "--nemesis-client-pause", "-1s"}, "--nemesis-client-pause must not be negative"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, append([]string{"run", "--store", store}, c.args...)...)
			if code != 2 || !strings.Contains(stderr, c.want) {
				t.Fatalf("exit %d, stderr %q, want %q", code, stderr, c.want)
			}
		})
	}
	if entries, _ := filepath.Glob(filepath.Join(store, "*", "*")); len(entries) != 0 {
		t.Errorf("bad input left runs in the store: %v", entries)
	}
}

// runStored runs the harness with args into a fresh store and returns the
// exit code, the summary and the run's results and history.
func runStored(t *testing.T, args ...string) (int, string, reports.Results, []history.Op) {
	t.Helper()
	store := t.TempDir()
	code, out, stderr := runCLI(t, append([]string{"run", "--store", store, "--recovery", "1s"}, args...)...)
	dir, err := filepath.EvalSymlinks(filepath.Join(store, "latest"))
	if err != nil {
		t.Fatalf("no run in the store (exit %d): %s", code, stderr)
	}
	b, err := os.ReadFile(filepath.Join(dir, reports.ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	var res reports.Results
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	h, err := history.ReadFile(filepath.Join(dir, reports.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	// `harness check` on the stored history judges it the same way: it
	// reads the requirements from run.json.
	ccode, cout, _ := runCLI(t, "check", filepath.Join(dir, reports.HistoryFile))
	if ccode != code || !strings.Contains(cout, strings.ToUpper(string(res.Verdict))) {
		t.Errorf("check of the stored history: exit %d, want %d like the run; %s", ccode, code, cout)
	}
	return code, out, res, h.Ops
}

// A requested fault that never happened leaves nothing tested. A run can
// no longer be asked for faults that are never due (the first waits
// --nemesis-interval, and a run shorter than that is refused up front:
// issue 22 row 16), so a fault-free run's record is made to say that it
// asked for partition and kill, as the record of a run whose faults never
// took effect says, and `harness check` judges its history by that record.
func TestFaultThatNeverStruckIsVacuous(t *testing.T) {
	integration(t)
	store := t.TempDir()
	if code, out, stderr := runCLI(t, "run", "--store", store, "--recovery", "1s", "--lock", "token", "--time-limit", "2s", "--seed", "3"); code != 0 {
		t.Fatalf("the fault-free run: exit %d:\n%s%s", code, out, stderr)
	}
	hist := askedForFaults(t, filepath.Join(store, "latest"), "partition", "kill")
	code, out, _ := runCLI(t, "check", hist)
	if code != 2 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	for _, want := range []string{
		"the partition nemesis never struck while a client held a lock (no start-partition took effect)",
		"the kill nemesis never struck while a client held a lock (no kill took effect)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	res, code := checkJSON(t, hist, nil)
	if code != 2 || res.Verdict != "unknown" || res.Coverage.Grants == 0 || len(res.Vacuous) != 2 {
		t.Errorf("exit %d, verdict %s, coverage %+v, vacuous %q", code, res.Verdict, res.Coverage, res.Vacuous)
	}
	for name, c := range res.Checkers {
		if c.Verdict != "valid" {
			t.Errorf("%s: %s; the checkers' own verdicts stay", name, c.Verdict)
		}
	}
	code, out, _ = runCLI(t, "check", "--allow-vacuous", hist)
	if code != 0 || !strings.Contains(out, "VALID") {
		t.Fatalf("--allow-vacuous: exit %d:\n%s", code, out)
	}
}

// askedForFaults rewrites the record (run.json) of the run in dir as if
// the run had asked for the nemeses names, and returns its history.
func askedForFaults(t *testing.T, dir string, names ...string) string {
	t.Helper()
	meta := filepath.Join(dir, reports.MetaFile)
	b, err := os.ReadFile(meta)
	if err != nil {
		t.Fatal(err)
	}
	var rec map[string]any
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	rec["config"].(map[string]any)["nemesis"].(map[string]any)["Names"] = names
	if b, err = json.Marshal(rec); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(meta, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, reports.HistoryFile)
}

// The client-pause nemesis strikes a holder even when clients hold their
// locks for an instant (--hold 0, the default), for as long as
// --nemesis-client-pause says, and the run shows it.
func TestClientPauseStrikesAHolder(t *testing.T) {
	integration(t)
	code, out, res, ops := runStored(t, "--lock", "token", "--nemesis", "client-pause", "--nemesis-interval", "1s",
		"--nemesis-client-pause", "300ms", "--time-limit", "3500ms", "--seed", "3")
	if code != 0 || res.Verdict != "valid" {
		t.Fatalf("exit %d, verdict %s, vacuous %q:\n%s", code, res.Verdict, res.Vacuous, out)
	}
	fc := res.Coverage.Faults["pause-client"]
	if fc.TookEffect < 2 || fc.Failed != 0 || res.Coverage.Pauses.StruckHolder != fc.TookEffect {
		t.Errorf("pause-client %+v, client pauses %+v: every pause should strike a holder", fc, res.Coverage.Pauses)
	}
	pauses := 0
	for _, op := range ops {
		if op.F == history.FPause && op.Type == history.OK {
			pauses++
			if op.Value == nil || op.Value.Duration != 300e6 {
				t.Errorf("pause of %v, want 300ms: %v", op.Value, op)
			}
		}
	}
	if pauses != fc.TookEffect {
		t.Errorf("%d client pauses in the history, %d pause-client faults took effect", pauses, fc.TookEffect)
	}
	if !strings.Contains(out, "client pauses, ") || !strings.Contains(out, "struck a holder") {
		t.Errorf("summary does not show the pauses:\n%s", out)
	}
}

// --failpoints makes the client-pause nemesis arm the lock's own
// failpoints (half of its strikes, from the seed), and the paused client
// records where it stopped.
func TestClientPauseArmsFailpoints(t *testing.T) {
	integration(t)
	code, out, _, ops := runStored(t, "--lock", "redlock", "--nemesis", "client-pause", "--failpoints", "after-majority",
		"--nemesis-interval", "1s", "--nemesis-client-pause", "300ms", "--time-limit", "5s", "--seed", "5")
	if code == 2 {
		t.Fatalf("exit 2:\n%s", out)
	}
	armed, paused := 0, 0
	for _, op := range ops {
		if op.Type != history.OK || op.Value == nil {
			continue
		}
		if op.F == "pause-client" && strings.HasPrefix(op.Value.Detail, "armed failpoint after-majority") {
			armed++
		}
		if op.F == history.FPause && op.Value.Detail == "failpoint after-majority" {
			paused++
			if op.Value.Duration != 300e6 {
				t.Errorf("failpoint pause of %dns, want 300ms", op.Value.Duration)
			}
		}
	}
	if armed == 0 || paused == 0 || paused > armed {
		t.Fatalf("%d failpoints armed, %d client pauses there:\n%s", armed, paused, out)
	}
}

// integration skips a test that runs redis-server in -short mode or where
// Redis is not installed, and runs it in parallel with the others.
func integration(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: runs redis-server")
	}
	requireRedis(t)
	t.Parallel()
}
