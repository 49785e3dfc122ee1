package reports

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lockharness/lockharness/checker"
)

// The process that only read the counters after the run is the final
// reader, not a sixth client.
func TestFinalReaderIsNamed(t *testing.T) {
	v := &runView{dig: &digest{procs: map[int]bool{0: true, 1: true, 5: true}, acted: map[int]bool{0: true, 1: true}}, heldBy: map[int]bool{}}
	for p, want := range map[int]string{0: "client 0", 1: "client 1", 5: "final reader"} {
		if got := v.rowName(p); got != want {
			t.Errorf("row of process %d is %q, want %q", p, got, want)
		}
	}
}

// A stale write storage accepted whose write is part of a lost update
// is drawn and told as the damage it did; one that shares nothing with a
// fatal finding stays harmless.
func TestStaleWriteThatLostAnUpdateIsFatal(t *testing.T) {
	v := &runView{res: checker.Result{Violations: []checker.Violation{
		{Checker: "resource", Kind: checker.KindStaleWrite, Processes: []int{4}, Events: []int64{10, 11, 3}, Description: "client 4 wrote after its lease ended; storage accepted it"},
		{Checker: "resource", Kind: checker.KindLostUpdate, Processes: []int{2, 4}, Events: []int64{8, 11, 20, 21}, Fatal: true},
		{Checker: "resource", Kind: checker.KindStaleWrite, Processes: []int{1}, Events: []int64{30, 31, 2}, Description: "rejected"},
	}}}
	if got := v.feedsFatal(0); got != 1 {
		t.Errorf("feedsFatal(0) = %d, want 1, the lost update", got)
	}
	if got := v.feedsFatal(2); got != -1 {
		t.Errorf("feedsFatal(2) = %d, want -1", got)
	}
	if w := v.violationWords(0); strings.Contains(w, "harmless by itself") || !strings.Contains(w, "part of finding 2, a lost-update") {
		t.Errorf("words: %q", w)
	}
}

// An overview with more violations than can be told apart counts them
// per stretch of time in a row of its own, and draws them thin.
func TestCrowdedOverviewCountsItsViolations(t *testing.T) {
	meta, ops, res := everyMarkFixture()
	ms := int64(time.Millisecond)
	for i := 0; i < crowdedViolations+10; i++ {
		res.Violations = append(res.Violations, checker.Violation{Checker: "lock-promise", Kind: checker.KindOverlap, Key: "lock-0",
			Processes: []int{0, 1}, Start: int64(i) * 100 * ms, End: int64(i)*100*ms + 5*ms, Fatal: true, Description: fmt.Sprint(i)})
	}
	v := newRunView(meta, ops, res)
	_, svg, area := drawTimeline(t, v, window{From: 0, To: v.end, Title: "crowded"}, outDir(t, "crowded"), "overview")
	if area.Rows[0].Kind != rowBins {
		t.Errorf("first row %+v, want the count of violations", area.Rows[0])
	}
	if !strings.Contains(svg, "(top row: violations per stretch)") {
		t.Error("the legend does not say what the top row counts")
	}
	_, _, zoom := drawTimeline(t, v, window{From: 0, To: 2000 * ms, Zoom: true, Title: "close"}, outDir(t, "crowded"), "zoom")
	if zoom.Rows[0].Kind == rowBins {
		t.Error("a close-up counts its violations instead of drawing them")
	}
}

// A Redlock history records which nodes granted each acquire: the
// timeline gives each node a row, between the fault rows and the
// clients, and the rows above keep their places.
func TestNodeRowsAreAddedAboveTheClients(t *testing.T) {
	l := layoutRows(false, false, []string{"n3"}, 1, [][]int{{0}, {1}})
	l.addNodeRows([]string{"n1", "n2"})
	var labels []string
	for _, r := range l.rows {
		labels = append(labels, r.Label)
	}
	if got, want := strings.Join(labels, "|"), "clock n3|faults|n1 granted|n2 granted|client 0|client 1"; got != want {
		t.Errorf("rows %s, want %s", got, want)
	}
	if l.firstClient != 4 || l.clientY[0] != l.y(4) || l.nodeY["n2"] != l.y(3) || l.laneY[0] != l.y(1) || l.clockY["n3"] != l.y(0) {
		t.Errorf("rows misplaced: %+v", l)
	}
}
