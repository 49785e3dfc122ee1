package reports

import (
	"context"
	"fmt"
	"image"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/history"
)

// everyMarkFixture is a short run that gives the timeline something of
// every kind to draw: client pauses (one still paused at the end) and a
// crash, a lease that expires while held, accepted, rejected and unknown
// writes, more faults close together than there are fault lanes, two
// nodes' clocks (one with the offset recorded, one from an old history
// without it), a promotion shorter than a pixel, and violations of every
// shape: one that names no process, an overlap, a lost update with a
// span, and harmless findings.
func everyMarkFixture() (RunMeta, []history.Op, checker.Result) {
	b := &builder{ttl: 1000 * ms}
	// Eight short partitions 150 ms apart: their labels need more room
	// than that, so they crowd the fault lanes.
	for i := 0; i < 8; i++ {
		t := int64(500+150*i) * ms
		b.nemesis(t, "start-partition", []string{fmt.Sprintf("c%d->n1", i), fmt.Sprintf("c%d->n2", i)}, "")
		b.nemesis(t+50*ms, "stop-partition", nil, "")
	}
	// A promotion is over in less than a pixel's time.
	b.nemesis(2200*ms, "promote", []string{"n2"}, "")
	b.nemesisV(3000*ms, "bump-clock", bump("n3", 5*time.Second, 5*time.Second))
	b.nemesis(3500*ms, "strobe-clock", []string{"n2"}, "strobe 200 ms")
	b.nemesis(5000*ms, "reset-clock", nil, "")
	b.nemesis(9000*ms, history.FFinalHeal, nil, "")

	fence := int64(1)
	for i, t := 0, int64(100*ms); t < 4000*ms; i, t = i+1, t+400*ms {
		b.section(i%4, "lock-0", t, t+300*ms, fence, false)
		b.section(4+i%2, "lock-1", t+20*ms, t+250*ms, fence, i == 3) // one write rejected
		fence++
	}
	// Client 0's lease on lock-0 expires while it holds it.
	b.section(0, "lock-0", 4200*ms, -1, fence, false)
	// Client 1 writes with an unknown outcome.
	c := int64(99)
	b.ev(4500*ms, 1, history.Invoke, history.FWrite, "lock-0", &history.Value{Counter: &c})
	b.ev(4600*ms, 1, history.Info, history.FWrite, "lock-0", nil)
	// Client 2 pauses for 300 ms; client 3 pauses and never wakes up.
	b.ev(5000*ms, 2, history.Invoke, history.FPause, "", nil)
	b.ev(5300*ms, 2, history.OK, history.FPause, "", nil)
	b.ev(7000*ms, 3, history.Invoke, history.FPause, "", nil)
	// Client 5 crashes.
	b.ev(6000*ms, 5, history.Invoke, history.FCrash, "", nil)
	b.ev(6000*ms, 5, history.Info, history.FCrash, "", nil)
	// Something completes after the last pause began, so that the run
	// ends after it.
	b.section(4, "lock-1", 8000*ms, 8300*ms, fence+1, false)
	ops := b.build()

	res := checker.Result{
		Verdict: checker.Invalid,
		Checkers: map[string]checker.CheckResult{
			"lock-promise": {Verdict: checker.Invalid}, "resource": {Verdict: checker.Invalid}, "liveness": {Verdict: checker.Invalid},
		},
		Counts: counts(ops),
		Holds:  b.holds,
		Violations: []checker.Violation{
			{Checker: "liveness", Kind: checker.KindUnavailable, Key: "lock-1", Start: 6500 * ms, End: 7000 * ms, Fatal: true,
				Description: "no acquire of lock-1 succeeded"},
			{Checker: "lock-promise", Kind: checker.KindOverlap, Key: "lock-0", Processes: []int{0, 1}, Start: 1000 * ms, End: 1200 * ms, Fatal: true,
				Description: "client 0 and client 1 both held lock-0"},
			{Checker: "resource", Kind: checker.KindLostUpdate, Key: "lock-0", Processes: []int{2, 3}, Start: 2000 * ms, End: 2600 * ms, Fatal: true,
				Description: "one update was lost"},
			{Checker: "resource", Kind: checker.KindStaleWrite, Key: "lock-0", Processes: []int{1}, Start: 4500 * ms, End: 4600 * ms,
				Description: "a write after the lease ended"},
			// In the close-up of the first, where client 4 does nothing else.
			{Checker: "resource", Kind: checker.KindStaleWrite, Key: "lock-1", Processes: []int{4}, Start: 6400 * ms, End: 6420 * ms,
				Description: "a write without the lock"},
		},
	}
	meta := RunMeta{Test: "every-mark", Lock: "token", Nemeses: []string{"partition", "clock"}, Seed: 3,
		Command: "harness run --lock token --seed 3", Start: time.Date(2026, 1, 4, 0, 0, 0, 0, time.UTC), Duration: 9 * time.Second}
	return meta, ops, res
}

// drawTimeline draws the timeline of win into dir/name.png and .svg and
// returns the picture, the SVG's text and where the data were drawn.
func drawTimeline(t *testing.T, v *runView, win window, dir, name string) (image.Image, string, *plotArea) {
	t.Helper()
	w, h, fig, area := v.timeline(win)
	if err := saveFigure(dir, name, w, h, fig); err != nil {
		t.Fatal(err)
	}
	svg, err := os.ReadFile(filepath.Join(dir, name+".svg"))
	if err != nil {
		t.Fatal(err)
	}
	return decodePNG(t, filepath.Join(dir, name+".png")), string(svg), area
}

// near reports whether some pixel of r is within tol of c in every channel.
func near(img image.Image, r image.Rectangle, c color.NRGBA, tol int) bool {
	r = r.Intersect(img.Bounds())
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			p := color.NRGBAModel.Convert(img.At(x, y)).(color.NRGBA)
			if absDiff(p.R, c.R) <= tol && absDiff(p.G, c.G) <= tol && absDiff(p.B, c.B) <= tol {
				return true
			}
		}
	}
	return false
}

func absDiff(a, b uint8) int {
	if a > b {
		return int(a - b)
	}
	return int(b - a)
}

// Every kind of mark has its row, its place and its legend entry: the
// overview and each close-up of the timeline draw what the run did, and
// say so.
func TestTimelineDrawsEveryKindOfMark(t *testing.T) {
	meta, ops, res := everyMarkFixture()
	v := newRunView(meta, ops, res)
	dir := outDir(t, "every-mark")
	img, svg, area := drawTimeline(t, v, window{From: 0, To: v.end, Title: "every mark"}, dir, "overview")

	var kinds []rowKind
	lanes := 0
	for _, r := range area.Rows {
		kinds = append(kinds, r.Kind)
		if r.Kind == rowFault {
			lanes++
		}
	}
	if len(area.Rows) == 0 || area.Rows[0].Kind != rowViolations || area.Rows[0].Label != "violations" {
		t.Errorf("rows %v: want the violations that name no process in a row of their own, first", kinds)
	}
	if lanes != maxFaultLane {
		t.Errorf("%d fault lanes, want the %d the crowded faults fill", lanes, maxFaultLane)
	}
	for _, label := range []string{"clock n2", "clock n3", "violations", "faults", "client 0", "client 5"} {
		if !strings.Contains(svg, ">"+label+"<") {
			t.Errorf("no row labelled %q", label)
		}
	}
	for _, entry := range []string{
		"held lock-0", "held lock-1", "lease expired while held", "write accepted", "write rejected (fencing)",
		"write outcome unknown", "client paused (GC)", "client crashed", "VIOLATION: two holders",
		"VIOLATION (see list)", "stale write, harmless", "fault: partition", "fault: promote", "clock offset", "final heal",
	} {
		if !strings.Contains(svg, ">"+entry+"<") {
			t.Errorf("the legend has no %q", entry)
		}
	}
	for _, txt := range []string{"+5 s", "strobe 200 ms", "unavailable lock-1"} {
		if !strings.Contains(svg, txt) {
			t.Errorf("the timeline does not say %q", txt)
		}
	}
	// Marks where they happened: the loose violation in its row, the
	// crash's cross and the pause's bar on their clients' rows.
	yLoose := area.YMax - 0.5
	if x, y := area.Pixel(6.75, yLoose); countRed(img, rectAround(x, y, 2)) == 0 {
		t.Errorf("the violation without a process is not drawn in its row")
	}
	if x, y := area.Pixel(6.0, area.ClientY[5]); !near(img, rectAround(x, y, 2), colInk, 30) {
		t.Errorf("client 5's crash is not drawn")
	}
	for _, p := range []struct {
		proc int
		at   float64
	}{{2, 5.15}, {3, 8.5}} {
		if x, y := area.Pixel(p.at, area.ClientY[p.proc]); !near(img, rectAround(x, y, 1), colPause, 12) {
			t.Errorf("client %d's pause is not drawn at %.2f s", p.proc, p.at)
		}
	}
	if area.Ticks == 0 || area.Write == 0 {
		t.Errorf("no write ticks drawn (%d ticks for %d writes)", area.Ticks, area.Write)
	}

	// The close-ups: each highlights its violation; a close-up has rows
	// only for what it shows.
	for i, vi := range res.Violations {
		t.Run(vi.Kind, func(t *testing.T) {
			win := zoomWindow(v, i, vi)
			_, svg, area := drawTimeline(t, v, win, dir, fmt.Sprintf("zoom-%d", i))
			if len(area.Rows) == 0 {
				t.Fatal("a close-up without rows")
			}
			for _, p := range vi.Processes {
				if _, ok := area.ClientY[p]; !ok {
					t.Errorf("close-up of %s has no row for client %d", vi.Kind, p)
				}
			}
			if _, ok := area.ClientY[4]; ok && vi.Kind == checker.KindUnavailable {
				t.Errorf("the close-up of %s has a row for client 4, which only has a finding in it", vi.Kind)
			}
			if !strings.Contains(svg, "<svg") {
				t.Errorf("close-up %d is not an SVG", i)
			}
		})
	}
}

// A timeline of more clients than its rows have room to name names every
// other client (or fewer), and always the first.
func TestTimelineThinsClientLabels(t *testing.T) {
	b := &builder{ttl: 1000 * ms}
	const clients = 80
	for p := 0; p < clients; p++ {
		t0 := int64(p) * 50 * ms
		b.section(p, "lock-0", t0, t0+30*ms, int64(p+1), false)
		// Every client lives the whole run (a failed try at the end), so
		// that each has a row of its own (packLanes).
		b.failedAcquire(p, "lock-0", int64(clients)*50*ms, history.Fail)
	}
	b.nemesis(int64(clients)*50*ms+10*ms, history.FFinalHeal, nil, "")
	ops := b.build()
	res := checker.Result{Verdict: checker.Valid, Checkers: map[string]checker.CheckResult{"lock-promise": {Verdict: checker.Valid}},
		Counts: counts(ops), Holds: b.holds}
	meta := RunMeta{Test: "many-clients", Lock: "token", Start: time.Date(2026, 1, 4, 0, 0, 0, 0, time.UTC)}
	v := newRunView(meta, ops, res)
	_, svg, area := drawTimeline(t, v, window{From: 0, To: v.end, Title: "many clients"}, outDir(t, "many-clients"), "overview")
	if len(area.ClientY) != clients {
		t.Fatalf("%d client rows, want %d", len(area.ClientY), clients)
	}
	named := 0
	for p := 0; p < clients; p++ {
		if strings.Contains(svg, ">"+clientName(p)+"<") {
			named++
		}
	}
	if !strings.Contains(svg, ">client 0<") || named == clients || named < clients/4 {
		t.Errorf("%d of %d clients named, want some but not all, the first among them", named, clients)
	}
}

// TestTimelineOfThousandsOfProcessesIsBounded: a run of 5,000 client
// processes (a new one after each crash) draws a timeline of bounded
// height, its rows thinner, not one 3 points a row.
func TestTimelineOfThousandsOfProcessesIsBounded(t *testing.T) {
	var ops []history.Op
	add := func(p int, typ history.Type, f string, v *history.Value) {
		ops = append(ops, history.Op{Index: int64(len(ops)), Time: int64(len(ops)+1) * 1000, Process: history.Process(p), Type: typ, F: f, Key: "lock-0", Value: v})
	}
	for p := range 5000 {
		add(p, history.Invoke, history.FAcquire, nil)
		add(p, history.OK, history.FAcquire, &history.Value{Token: "t", Deadline: int64(len(ops)+10) * 1000})
		add(p, history.Invoke, history.FRelease, &history.Value{Token: "t"})
		add(p, history.OK, history.FRelease, nil)
	}
	dir := outDir(t, "thousands")
	r, err := checker.Check(context.Background(), history.Events(ops), checker.Config{AllowVacuous: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Render(context.Background(), dir, record(RunMeta{Test: "thousands"}), history.Events(ops), r); err != nil {
		t.Fatal(err)
	}
	img := decodePNG(t, filepath.Join(dir, TimelineFile+".png"))
	if h := img.Bounds().Dy(); h > (3000+400)*DPI/72 {
		t.Fatalf("timeline %d px tall", h)
	}
}

// A timeline draws one tick of a kind per pixel column and row at most,
// with no set of the ticks drawn to keep them apart: the window's marks
// keep one write per column, process and kind, and one expiry, in the
// timeline's columns. Over a long run (many writes a column) and in a
// close-up.
func TestTicksAreOnePerColumnRowAndKind(t *testing.T) {
	type tk struct {
		y   float64
		col color.Color
		c   int64
	}
	v := newRunView(bigRun(12_000, 3))
	every := newRunView(everyMarkFixture())
	vi := every.res.Violations[every.zoomed()[0]]
	for _, c := range []struct {
		v   *runView
		win window
	}{
		{v, window{From: 0, To: v.end}},
		{v, window{From: v.end / 3, To: v.end/3 + 300*ms, Zoom: true}},
		{every, window{From: 0, To: every.end}},
		{every, window{From: vi.Start - 200*ms, To: vi.End + 200*ms, Zoom: true, Highlight: &vi}},
	} {
		d := c.v.newTimelineDraw(c.win)
		d.writeTicks()
		seen := map[tk]bool{}
		n := 0
		for _, s := range slices.Concat(d.under.items, d.top.items) {
			if s.Kind != kTickMark && s.Kind != kGlyph {
				continue
			}
			k := tk{s.Y0, s.Col, int64(math.Floor((s.X0 - d.xmin) / d.res))}
			if seen[k] {
				t.Errorf("window %d-%d: two ticks of colour %v in column %d of the row at %g", c.win.From, c.win.To, s.Col, k.c, s.Y0)
			}
			seen[k] = true
			n++
		}
		if n == 0 || n != d.area.Ticks {
			t.Errorf("window %d-%d: %d ticks in the layers, %d counted (dense %v)", c.win.From, c.win.To, n, d.area.Ticks, d.dense)
		}
	}
}
