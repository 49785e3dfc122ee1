package reports

import (
	"cmp"
	"image/color"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/nemesis"
)

// The nemeses' events, with the structured fields they record
// (nemesis/*.go), pair into fault windows.
func TestFaultsFromNemesisEvents(t *testing.T) {
	b := &builder{}
	ev := func(at int64, f string, typ history.Type, v history.Value) {
		inv := v
		inv.Detail, inv.Clocks = "", nil
		b.ev(at*ms, history.Nemesis, history.Invoke, f, "", &inv)
		b.ev(at*ms+5*ms, history.Nemesis, typ, f, "", &v)
	}
	nodes := func(ns ...string) []string { return ns }
	ev(100, "bump-clock", history.OK, history.Value{Targets: nodes("n1", "n2"), Fault: "clock",
		Detail: "n1 +1m0s (reads +59.999s), n2 -30s (reads -30.001s)",
		Clocks: []history.NodeClock{{Node: "n1", Delta: nsp(time.Minute), Offset: nsp(59999 * time.Millisecond)},
			{Node: "n2", Delta: nsp(-30 * time.Second), Offset: nsp(-30001 * time.Millisecond)}}})
	ev(200, "reset-clock", history.OK, history.Value{Targets: nodes("n1"), Ends: []string{"clock"}})
	ev(300, "kill", history.OK, history.Value{Targets: nodes("n3"), Fault: "kill", Detail: "SIGKILL"})
	ev(400, "restart", history.OK, history.Value{Targets: nodes("n3"), Ends: []string{"kill"}, Detail: "aof-always"})
	ev(500, "cut-replication", history.OK, history.Value{Targets: nodes("n1->n2"), Fault: "replication cut"})
	ev(600, "promote", history.OK, history.Value{Targets: nodes("n2"), Fault: "promote", Ends: []string{"replication cut"},
		Detail: "REPLICAOF NO ONE; clients moved from n1"})
	ev(700, "demote", history.OK, history.Value{Targets: nodes("n1"), Ends: []string{"promote"}, Detail: "follows n2"})
	ev(800, "pause-master", history.OK, history.Value{Targets: nodes("n2"), Fault: "master paused", Detail: "SIGSTOP"})
	ev(810, "await-promotion", history.OK, history.Value{Mark: true, Detail: "sentinels name n3 after 2.1s"})
	ev(900, "heal-master", history.OK, history.Value{Targets: nodes("n2"), Ends: []string{"master paused", "master isolated"}})
	ev(1000, "start-partition", history.OK, history.Value{Targets: nodes("c0->n1", "c1->n1"), Fault: "partition", Detail: "isolate: {n1} | {n2 n3}"})
	ev(1100, "stop-partition", history.OK, history.Value{Targets: nodes("c0->n1", "c1->n1"), Ends: []string{"partition"}, Detail: "isolate"})
	ev(1200, "start-latency", history.OK, history.Value{Targets: nodes("c0->n2"), Fault: "latency", Detail: "100ms"})
	ev(1250, "demote", history.Fail, history.Value{Ends: []string{"promote"}})
	ev(1300, "drift-clock", history.Info, history.Value{Targets: nodes("n3"), Fault: "clock", Detail: "rate x2",
		Clocks: []history.NodeClock{{Node: "n3", Rate: 2}}})
	ev(1400, history.FFinalHeal, history.OK, history.Value{Mark: true})
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
	if got := faultLines(b.build()); got != strings.Join(want, "\n") {
		t.Errorf("faults:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
	fs := faultsOf(b.build())
	if fs[len(fs)-1].Rate != 2 {
		t.Errorf("drift rate %v, want 2", fs[len(fs)-1].Rate)
	}
}

func faultLines(ops []history.Op) string {
	var got []string
	for _, f := range faultsOf(ops) {
		got = append(got, f.Label+" "+fmtTime(f.Start)+"–"+fmtTime(f.End))
	}
	return strings.Join(got, "\n")
}

// A history recorded before nemesis events had structured fields still
// gives its fault windows, from the functions' names; what only the text
// said (a clock's offset) is not read from it: the clock fault keeps its
// words.
func TestFaultsFromOldHistory(t *testing.T) {
	b := &builder{}
	ev := func(at int64, f string, typ history.Type, targets []string, detail string) {
		b.ev(at*ms, history.Nemesis, history.Invoke, f, "", &history.Value{Targets: targets})
		b.ev(at*ms+5*ms, history.Nemesis, typ, f, "", &history.Value{Targets: targets, Detail: detail})
	}
	ev(100, "bump-clock", history.OK, []string{"n1"}, "n1 +1m0s (reads +59.999s)")
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
	ev(1400, history.FFinalHeal, history.OK, nil, "")
	want := []string{
		"clock n1 +1m0s (reads +59.999s) on n1 0.10 s–0.20 s",
		"kill (SIGKILL) n3 0.30 s–0.41 s",
		"replication cut n1->n2 0.50 s–0.60 s",
		"promote (REPLICAOF NO ONE; clients moved from n1) n2 0.60 s–0.70 s",
		"master paused (SIGSTOP) n2 0.80 s–0.91 s",
		"partition isolate: {n1} | {n2 n3} 1.00 s–1.10 s",
	}
	if got := faultLines(b.build()); got != strings.Join(want, "\n") {
		t.Errorf("faults:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
}

func TestClockSentence(t *testing.T) {
	b := &builder{}
	b.nemesisV(3400*ms, "bump-clock", &history.Value{Targets: []string{"n3"}, Fault: "clock", Detail: "n3 +1m0s (reads +1m59.998s)",
		Clocks: []history.NodeClock{{Node: "n3", Delta: nsp(time.Minute), Offset: nsp(119998 * time.Millisecond)}}})
	fs := faultsOf(b.build())
	if len(fs) != 1 {
		t.Fatalf("faults: %+v", fs)
	}
	if got, want := fs[0].Sentence(3500*ms), "node 3's clock had jumped +60 s (to +120 s) at 3.40 s"; got != want {
		t.Errorf("sentence %q, want %q", got, want)
	}
}

// The fault kinds a run records (nemesis.FaultKinds) read and draw the
// faults as the report's own tables did before they were the record's:
// the nemesis functions of an old history, the words of a size, the
// instants, the colours.
func TestFaultKindsAreTheOldTables(t *testing.T) {
	starts := map[string]string{
		"start-partition": "partition", "start-latency": "latency", "bump-clock": "clock", "drift-clock": "clock",
		"strobe-clock": "clock", "kill": "kill", "pause-node": "pause", "pause": "pause", "cut-replication": "replication cut",
		"promote": "promote", "pause-master": "master paused", "isolate-master": "master isolated",
	}
	stops := map[string][]string{
		"stop-partition": {"partition"}, "stop-latency": {"latency"}, "reset-clock": {"clock"}, "restart": {"kill"},
		"resume-node": {"pause"}, "resume": {"pause"}, "promote": {"replication cut"}, "demote": {"promote"},
		"heal-master": {"master paused", "master isolated"},
	}
	sizeWords := map[string]string{"pause-client": "client pause", "pause": "node pause", "kill": "node down",
		"lost replies": "lost replies", "renewer stall": "renewer stall"}
	colours := map[string]color.NRGBA{
		"partition": {R: 255, G: 190, B: 0}, "clock": {R: 148, G: 103, B: 189}, "pause": {R: 110, G: 110, B: 110},
		"kill": {R: 140, G: 86, B: 75}, "promote": {R: 23, G: 190, B: 207}, "failover": {R: 23, G: 190, B: 207},
		"latency": {R: 31, G: 119, B: 180}, "delay": {R: 31, G: 119, B: 180}, "replication cut": {R: 188, G: 189, B: 34},
		"lost replies": {R: 188, G: 189, B: 34}, "something new": {R: 188, G: 189, B: 34},
	}
	b := newFaultBook(nemesis.FaultKinds())
	if !maps.Equal(b.starts, starts) {
		t.Errorf("starts %v, want %v", b.starts, starts)
	}
	if !maps.EqualFunc(b.stops, stops, func(a, w []string) bool {
		return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(w)))
	}) {
		t.Errorf("stops %v, want %v", b.stops, stops)
	}
	if !maps.Equal(b.marks, map[string]bool{"await-promotion": true}) {
		t.Errorf("marks %v", b.marks)
	}
	for fam, w := range sizeWords {
		if got := cmp.Or(b.kind(fam).Label, fam); got != w {
			t.Errorf("%s is called %q in a size, want %q", fam, got, w)
		}
	}
	for _, k := range nemesis.FaultKinds() {
		if want := k.Name == "crash-client" || k.Name == "kill-connection"; k.Instant != want {
			t.Errorf("%s instant %v, want %v", k.Name, k.Instant, want)
		}
	}
	for fam, c := range colours {
		for _, a := range []uint8{38, 120} {
			c.A = a
			if got := b.colour(fam, a); got != c {
				t.Errorf("colour of %s at %d: %v, want %v", fam, a, got, c)
			}
		}
	}
}
