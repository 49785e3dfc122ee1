package reports

import (
	"strings"
	"testing"

	"github.com/lockharness/lockharness/history"
)

// The nemeses' own vocabulary (nemesis/*.go) pairs into fault windows.
func TestFaultsFromNemesisVocabulary(t *testing.T) {
	b := &builder{}
	ev := func(at int64, f string, typ history.Type, targets []string, detail string) {
		b.ev(at*ms, history.Nemesis, history.Invoke, f, "", &history.Value{Targets: targets})
		b.ev(at*ms+5*ms, history.Nemesis, typ, f, "", &history.Value{Targets: targets, Detail: detail})
	}
	ev(100, "bump-clock", history.OK, []string{"n1", "n2"}, "n1 +1m0s (reads +59.999s), n2 -30s (reads -30.001s)")
	ev(200, "reset-clock", history.OK, []string{"n1"}, "")
	ev(300, "kill", history.OK, []string{"n3"}, "SIGKILL")
	ev(400, "restart", history.OK, []string{"n3"}, "aof-always")
	ev(500, "cut-replication", history.OK, []string{"n1->n2"}, "")
	ev(600, "promote", history.OK, []string{"n2"}, "REPLICAOF NO ONE; clients moved from n1")
	ev(700, "demote", history.OK, []string{"n1"}, "follows n2")
	ev(800, "pause-master", history.OK, []string{"n2"}, "SIGSTOP")
	ev(810, "await-promotion", history.OK, nil, "sentinels name n3 after 2.1s")
	ev(900, "heal-master", history.OK, []string{"n2"}, "")
	ev(1000, "start-partition", history.OK, []string{"c0->n1", "c1->n1"}, "isolate: {n1} | {n2 n3}")
	ev(1100, "stop-partition", history.OK, []string{"c0->n1", "c1->n1"}, "isolate")
	ev(1200, "start-latency", history.OK, []string{"c0->n2"}, "100ms")
	ev(1250, "demote", history.Fail, nil, "")
	ev(1300, "drift-clock", history.Info, []string{"n3"}, "rate x2")
	ev(1400, history.FFinalHeal, history.OK, nil, "")
	var got []string
	for _, f := range Faults(b.build()) {
		got = append(got, f.Label+" "+fmtTime(f.Start)+"–"+fmtTime(f.End))
	}
	want := []string{
		"clock +60 s on n1 0.10 s–0.20 s",
		"clock -30 s on n2 0.10 s–1.41 s",
		"kill (SIGKILL) n3 0.30 s–0.41 s",
		"replication cut n1->n2 0.50 s–0.60 s",
		"promote (REPLICAOF NO ONE; clients moved from n1) n2 0.60 s–0.70 s",
		"master paused (SIGSTOP) n2 0.80 s–0.91 s",
		"partition isolate: {n1} | {n2 n3} 1.00 s–1.10 s",
		"latency (100ms) c0->n2 1.20 s–1.41 s",
		"clock rate x2 on n3 ? 1.30 s–1.41 s",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("faults:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestClockSentence(t *testing.T) {
	b := &builder{}
	b.nemesis(3400*ms, "bump-clock", []string{"n3"}, "n3 +1m0s (reads +1m59.998s)")
	fs := Faults(b.build())
	if len(fs) != 1 {
		t.Fatalf("faults: %+v", fs)
	}
	if got, want := fs[0].Sentence(3500*ms), "node 3's clock had jumped +60 s (to +120 s) at 3.40 s"; got != want {
		t.Errorf("sentence %q, want %q", got, want)
	}
}
