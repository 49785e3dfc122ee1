package cli

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/locks/adapter"
	"github.com/lockharness/lockharness/reports"
	"github.com/lockharness/lockharness/schedule"
	"github.com/lockharness/lockharness/shrink"
)

// fakeRun writes a run directory with results and, unless schedule is
// empty, a schedule.yaml: enough for shrink to judge the input.
func fakeRun(t *testing.T, dir, results, sched string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, reports.ResultsFile), []byte(results), 0o644); err != nil {
		t.Fatal(err)
	}
	if sched != "" {
		if err := os.WriteFile(filepath.Join(dir, "schedule.yaml"), []byte(sched), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

const invalidResults = `{"meta": {"command": %q}, "verdict": "invalid", "checkers": {}, "counts": {},
  "violations": [{"checker": "lock-promise", "kind": "overlap", "fatal": true, "start": 1, "end": 2, "description": "x"}]}`

// Bad input to shrink exits 2 with a message naming the problem and the
// fix, before anything starts: nothing is written into the run.
func TestShrinkRefusesBadInput(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	sched := "lock: set-nx-ex\ntime_limit: 2s\n"
	fakeRun(t, filepath.Join(store, "set-nx-ex", "valid"), `{"verdict": "valid", "checkers": {}, "counts": {}, "violations": []}`, sched)
	fakeRun(t, filepath.Join(store, "set-nx-ex", "old"), strings.Replace(invalidResults, "%q", `"harness run --lock set-nx-ex --seed 3"`, 1), "")
	fakeRun(t, filepath.Join(store, "set-nx-ex", "ok"), strings.Replace(invalidResults, "%q", `"harness run --lock set-nx-ex"`, 1), sched)
	fakeRun(t, filepath.Join(store, "mine", "gone"), strings.Replace(invalidResults, "%q", `"harness run --lock-cmd 'python3 /nonexistent/adapter.py' --seed 2"`, 1),
		"lock: mine\ntime_limit: 2s\n")
	outside := filepath.Join(t.TempDir(), "run")
	fakeRun(t, outside, strings.Replace(invalidResults, "%q", `""`, 1), sched)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"store/nope"}, "is not a run directory"},
		{[]string{"set-nx-ex/valid"}, "is VALID: nothing to shrink"},
		{[]string{"set-nx-ex/old"}, "has no schedule.yaml: it was made before runs recorded their schedule (run it again with its command, harness run --lock set-nx-ex --seed 3"},
		{[]string{"mine/gone"}, "was a run of --lock-cmd 'python3 /nonexistent/adapter.py', which does not start now"},
		{[]string{outside}, "is not in the store"},
		{[]string{"set-nx-ex/ok", "--violation", "resource/lost-update"}, "--violation resource/lost-update: the run has no such violation (it has lock-promise/overlap)"},
		{[]string{"set-nx-ex/ok", "--runs", "0"}, "give at least 1 run"},
	} {
		var stdout, stderr bytes.Buffer
		args := append([]string{"shrink", "--store", store}, tc.args...)
		code := run(context.Background(), args, &stdout, &stderr, Options{LockCommand: adapter.FromCommand})
		if code != exitError || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("shrink %v: exit %d, stderr %q, want 2 and %q", tc.args, code, stderr.String(), tc.want)
		}
	}
	if dirs, _ := filepath.Glob(filepath.Join(store, "*", "*", "shrink")); len(dirs) > 0 {
		t.Errorf("refused shrinks wrote %v", dirs)
	}
	if _, err := os.Stat(filepath.Join(outside, "shrink")); err == nil {
		t.Error("a run outside the store was written to")
	}
}

// readShrunk reads a shrink's schedule.yaml and the results of the run its
// report link points at.
func readShrunk(t *testing.T, runDir string) (schedule.Schedule, reports.Results) {
	t.Helper()
	f, err := os.Open(filepath.Join(runDir, "shrink", "schedule.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := schedule.Parse(f, schedule.Env{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := reports.ReadResults(filepath.Join(runDir, "shrink", "report"))
	if err != nil {
		t.Fatal(err)
	}
	return s, res
}

// A fast INVALID run of set-nx-ex (the workload's own pauses outlive the
// lease) shrinks on real Redis to a shorter schedule that still breaks it
// the same way; Ctrl-C during a shrink keeps the best so far and exits
// 130.
func TestShrinkAnInvalidRun(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs redis-server on PATH")
	}
	requireRedis(t)
	t.Parallel()
	store := filepath.Join(t.TempDir(), "store")
	code, _, stderr := runCLI(t, "run", "--lock", "set-nx-ex", "--clients", "3", "--ttl", "1s", "--client-pause", "1.3s",
		"--client-pause-rate", "0.3", "--time-limit", "2s", "--recovery", "1s", "--seed", "7", "--store", store)
	if code != exitInvalid {
		t.Fatalf("the run to shrink: exit %d, want 1 (invalid)\n%s", code, stderr)
	}
	runDir, err := filepath.EvalSymlinks(filepath.Join(store, "latest"))
	if err != nil {
		t.Fatal(err)
	}
	before, err := reports.ReadResults(runDir)
	if err != nil {
		t.Fatal(err)
	}
	interruptShrink(t, store)
	// One run a candidate: a test's budget has room for a few runs on a
	// loaded machine, not for a majority of three each.
	code, stdout, stderr := runCLI(t, "shrink", "latest", "--store", store, "--budget", "20s", "--runs", "1")
	if code != exitValid {
		t.Fatalf("shrink: exit %d\n%s\n%s", code, stdout, stderr)
	}
	s, after := readShrunk(t, runDir)
	target, err := (&shrinkFlags{}).chooseTarget(before.Violations)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout, "SHRINK  "+target.String()) {
		t.Errorf("shrink reproduced another target than %s:\n%s", target, stdout)
	}
	if s.TimeLimit+s.Recovery >= 3*time.Second || faults(after.Coverage) >= faults(before.Coverage) {
		t.Errorf("not smaller: %v + %v, %d faults (the run: 3s, %d faults)\n%s", s.TimeLimit, s.Recovery, faults(after.Coverage), faults(before.Coverage), stderr)
	}
	if !shrink.Reproduces(after.Violations, target) {
		t.Errorf("the shrunk schedule's run does not show %s", target)
	}
}

// interruptShrink starts a shrink of store/latest, interrupts it once it
// has written a schedule (its baseline reproduced, in one run) and checks
// that it exits 130 and keeps that schedule.
func interruptShrink(t *testing.T, store string) {
	t.Helper()
	cmd := exec.Command(harnessBin, "shrink", "latest", "--store", store, "--runs", "1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	path := filepath.Join(store, "latest", "shrink", "schedule.yaml")
	for deadline := time.Now().Add(40 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no schedule written in 40 s:\n%s", stderr.String())
		}
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		t.Fatalf("shrink did not end 15 s after Ctrl-C:\n%s", stderr.String())
	}
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Errorf("interrupted shrink: exit %d, want 130\n%s", code, stderr.String())
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("interrupted shrink lost its schedule: %v", err)
	}
}

// A nemesis's client pause is one of the client's pauses too: the count
// of a run's faults takes it once.
func TestShrinkCountsEachFaultOnce(t *testing.T) {
	c := checker.Coverage{
		Faults:  map[string]checker.FaultCoverage{"pause-client": {TookEffect: 3}, "start-partition": {TookEffect: 2}, "crash-client": {TookEffect: 1}},
		Pauses:  checker.PauseCoverage{Total: 5},
		Crashes: checker.CrashCoverage{Total: 1},
	}
	if got := faults(c); got != 3+2+1+2 {
		t.Errorf("faults %d, want 8 (6 by the nemesis, 2 pauses of the workload's own)", got)
	}
	if got := faults(checker.Coverage{Pauses: checker.PauseCoverage{Total: 4}}); got != 4 {
		t.Errorf("workload pauses alone: %d, want 4", got)
	}
}
