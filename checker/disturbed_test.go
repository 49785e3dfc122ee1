package checker

import (
	"context"
	"strings"
	"testing"

	"github.com/lockharness/lockharness/history"
)

// A server that exited without the harness asking is named in the
// coverage, and a valid verdict becomes unknown with it as the reason;
// the checkers' own verdicts stay valid, and nothing counts as a fault's
// exposure.
func TestAnUnplannedExitDisturbsAValidRun(t *testing.T) {
	exit := history.ServerExit("n1", "signal: killed")
	exit.Time, exit.Index = 3_200_000_000, 2
	ops := []history.Op{
		{Index: 0, Time: 1_000_000_000, Process: 0, Type: history.Invoke, F: history.FAcquire, Key: "k"},
		{Index: 1, Time: 1_001_000_000, Process: 0, Type: history.OK, F: history.FAcquire, Key: "k", Value: &history.Value{Token: "a", Deadline: 9_000_000_000}},
		exit,
		{Index: 3, Time: 4_000_000_000, Process: 0, Type: history.Invoke, F: history.FRelease, Key: "k", Value: &history.Value{Token: "a"}},
		{Index: 4, Time: 4_001_000_000, Process: 0, Type: history.OK, F: history.FRelease, Key: "k", Value: &history.Value{Token: "a"}},
	}
	res, err := Check(context.Background(), history.Events(ops), Config{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != Unknown || !strings.HasPrefix(res.Reason, DisturbedPrefix+"n1 exited unexpectedly at 3.2 s") {
		t.Fatalf("verdict %s (%s), want unknown naming the exit", res.Verdict, res.Reason)
	}
	if got := res.Coverage.Disturbed; len(got) != 1 || got[0] != "n1 exited unexpectedly at 3.2 s" {
		t.Errorf("coverage names %q", got)
	}
	if cr := res.Checkers[LockPromise]; cr.Verdict != Valid {
		t.Errorf("lock promise %s: %s", cr.Verdict, cr.Reason)
	}
	if _, ok := res.Coverage.Faults[history.FServerExit]; ok {
		t.Errorf("an unplanned exit counted as a fault: %+v", res.Coverage.Faults)
	}
	// The same history without the exit is valid: the exit alone did it.
	clean := append(append([]history.Op{}, ops[:2]...), ops[3:]...)
	if res, _ := Check(context.Background(), history.Events(clean), Config{}); res.Verdict != Valid {
		t.Fatalf("without the exit: %s (%s)", res.Verdict, res.Reason)
	}
}
