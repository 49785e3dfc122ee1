package reports

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/history"
)

// quorumHistory is two Redlock grants that overlap: process 0 is granted
// by nodesA at 100 ms (lease to 1.1 s, released at 600 ms), process 2 by
// nodesC at 300 ms; faults are added by the caller.
func quorumHistory(nodesA, nodesC []string, faults func(b *builder)) []history.Op {
	b := &builder{}
	grant := func(p history.Process, t int64, nodes []string) {
		b.ev(t, p, history.Invoke, history.FAcquire, "lock-0", nil)
		b.ev(t+2*ms, p, history.OK, history.FAcquire, "lock-0", &history.Value{Token: "t" + p.String(), Deadline: t + 1000*ms, Nodes: nodes, Quorum: 3})
	}
	grant(0, 100*ms, nodesA)
	grant(2, 300*ms, nodesC)
	b.ev(600*ms, 0, history.Invoke, history.FRelease, "lock-0", &history.Value{Token: "t0"})
	b.ev(601*ms, 0, history.OK, history.FRelease, "lock-0", nil)
	if faults != nil {
		faults(b)
	}
	return b.build()
}

// bump is the value of a clock bump of node by delta that read offset.
func bump(node string, delta, offset time.Duration) *history.Value {
	return &history.Value{Targets: []string{node}, Fault: "clock", Detail: fmt.Sprintf("%s %s (reads %s)", node, fmtSkew(delta), fmtSkew(offset)),
		Clocks: []history.NodeClock{{Node: node, Delta: nsp(delta), Offset: nsp(offset)}}}
}

// checkOps is the check of ops in memory.
func checkOps(ops []history.Op) checker.Result {
	res, _ := checker.Check(context.Background(), history.Events(ops), checker.Config{})
	return res
}

// explainOverlap checks the history with the real checker and returns the
// explanation of its overlap.
func explainOverlap(t *testing.T, ops []history.Op) string {
	t.Helper()
	res := checkOps(ops)
	for i, v := range res.Violations {
		if v.Kind == checker.KindOverlap {
			return Explain(record(RunMeta{}), res)[i]
		}
	}
	t.Fatalf("no overlap found in %v", res.Violations)
	return ""
}

func wantAll(t *testing.T, got string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("explanation lacks %q:\n%s", w, got)
		}
	}
}

// TestExplainBareMajorityStrobe is the mechanism of the redsync runs under
// --nemesis clock,partition: the holder had exactly n1–n3, n3's clock was
// strobing (each flip forward expires the keys set before it), and the
// second client got n3 with the two nodes the first never held.
func TestExplainBareMajorityStrobe(t *testing.T) {
	ops := quorumHistory([]string{"n1", "n2", "n3"}, []string{"n3", "n4", "n5"}, func(b *builder) {
		b.nemesisV(50*ms, "strobe-clock", &history.Value{Targets: []string{"n3"}, Fault: "clock", Detail: "between +0s and +23.842s every 50ms",
			Clocks: []history.NodeClock{{Node: "n3", Strobe: []int64{0, int64(23842 * time.Millisecond)}, Period: int64(50 * time.Millisecond)}}})
	})
	got := explainOverlap(t, ops)
	wantAll(t, got,
		"Client 0's grant rested on n1, n2 and n3, exactly the quorum of 3: a bare majority",
		"The clock of n3 was strobing (between +0s and +23.842s every 50ms) from 0.05 s",
		"each flip forward is a jump of +23.8 s",
		"so client 0's key on n3 vanished before its lease ended",
		"Client 2 then got n3, n4 and n5: n3, where client 0's key had gone, and n4 and n5, which client 0 never held",
		"cannot see a node's clock jump")
}

// TestExplainResetFromBehind: a reset of a clock that was set back is a
// jump forward, and explains the overlap when it falls between the grants.
func TestExplainResetFromBehind(t *testing.T) {
	ops := quorumHistory([]string{"n1", "n2", "n4"}, []string{"n3", "n4", "n5"}, func(b *builder) {
		b.nemesisV(20*ms, "bump-clock", bump("n4", -42*time.Second, -42001*time.Millisecond))
		b.nemesisV(200*ms, "reset-clock", &history.Value{Targets: []string{"n4"}, Ends: []string{"clock"}})
	})
	wantAll(t, explainOverlap(t, ops),
		"exactly the quorum of 3",
		"The clock of n4, set back 42 s at 0.02 s, was reset at 0.21 s: a jump forward of +42 s",
		"client 0's key on n4 vanished")
}

// TestExplainForwardJump: a plain jump forward between the two grants.
func TestExplainForwardJump(t *testing.T) {
	ops := quorumHistory([]string{"n1", "n2", "n4"}, []string{"n3", "n4", "n5"}, func(b *builder) {
		b.nemesisV(200*ms, "bump-clock", bump("n4", 42*time.Second, 42003*time.Millisecond))
	})
	wantAll(t, explainOverlap(t, ops), "The clock of n4 jumped +42 s at 0.20 s, so client 0's key on n4 vanished")
}

// TestExplainNoCause: a jump backward, or a fault on a node the first grant
// did not count on, explains nothing; the explanation says the key vanished
// with no recorded cause, and does not blame clocks.
func TestExplainNoCause(t *testing.T) {
	ops := quorumHistory([]string{"n1", "n2", "n3", "n4"}, []string{"n3", "n4", "n5"}, func(b *builder) {
		b.nemesisV(200*ms, "bump-clock", bump("n3", -42*time.Second, -42*time.Second))
		b.nemesisV(200*ms, "strobe-clock", &history.Value{Targets: []string{"n5"}, Fault: "clock", Detail: "between +0s and +10s every 50ms",
			Clocks: []history.NodeClock{{Node: "n5", Strobe: []int64{0, int64(10 * time.Second)}, Period: int64(50 * time.Millisecond)}}})
	})
	got := explainOverlap(t, ops)
	wantAll(t, got, "rested on n1, n2, n3 and n4, 1 more than the quorum of 3",
		"Its key on n3 and n4 vanished before its lease ended, with no clock fault or kill recorded there")
	if strings.Contains(got, "clock jump") || strings.Contains(got, "strobing") {
		t.Errorf("explanation blames a clock:\n%s", got)
	}
}

// TestExplainNeedsNodes: grants that do not record their nodes (single-node
// locks, old histories) get no explanation, and neither do other findings.
func TestExplainNeedsNodes(t *testing.T) {
	ops := quorumHistory(nil, nil, nil)
	res := checkOps(ops)
	if len(res.Violations) == 0 {
		t.Fatal("no violation")
	}
	if got := Explain(record(RunMeta{}), res); got != nil {
		t.Fatalf("explained grants without nodes: %v", got)
	}
}

// TestHeadlineSaysWhy: the report's first sentence carries the mechanism.
func TestHeadlineSaysWhy(t *testing.T) {
	ops := quorumHistory([]string{"n1", "n2", "n3"}, []string{"n3", "n4", "n5"}, func(b *builder) {
		b.nemesisV(200*ms, "bump-clock", bump("n3", 10*time.Second, 10*time.Second))
	})
	res := Normalize(checkOps(ops))
	h := newRunView(RunMeta{Lock: "redlock"}, ops, res).headline()
	wantAll(t, h, "Lock redlock broke its promise", "Why: Client 0's grant rested on n1, n2 and n3, exactly the quorum of 3",
		"The clock of n3 jumped +10 s at 0.20 s")
}

// TestExplainOldHistory: a clock bump recorded before nemesis events had
// fields is not read from its words; the explanation says there was one,
// not that there was none.
func TestExplainOldHistory(t *testing.T) {
	ops := quorumHistory([]string{"n1", "n2", "n3"}, []string{"n3", "n4", "n5"}, func(b *builder) {
		b.nemesis(200*ms, "bump-clock", []string{"n3"}, "n3 +10s (reads +10.002s)")
	})
	got := explainOverlap(t, ops)
	wantAll(t, got, "Its key on n3 vanished before its lease ended; the history records a clock change on n3 at 0.20 s (n3 +10s (reads +10.002s)) in words only")
	if strings.Contains(got, "no clock fault") {
		t.Errorf("explanation denies the recorded clock change:\n%s", got)
	}
}
