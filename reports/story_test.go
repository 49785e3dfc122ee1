package reports

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/history"
)

// gcPauseHistory is Kleppmann's figure as a history: client 1 is granted
// the lock (token 33) and pauses 1.5 s, past its 1 s lease; client 2 is
// granted it (token 34) and writes; client 1 wakes and writes with its
// old token, which storage accepts, or with fencing rejects.
func gcPauseHistory(fenced bool) []history.Op { return gcPauseBuilder(fenced).build() }

// gcPauseBuilder is gcPauseHistory's builder, for variations on it.
func gcPauseBuilder(fenced bool) *builder {
	b := &builder{ttl: 1000 * ms}
	c0, c1 := int64(0), int64(1)
	fence := func(f int64) int64 {
		if fenced {
			return f
		}
		return 0
	}
	b.ev(0, 1, history.Invoke, history.FAcquire, "lock-0", nil)
	b.ev(2*ms, 1, history.OK, history.FAcquire, "lock-0", &history.Value{Token: "a", Fence: fence(33), Deadline: 1000 * ms})
	b.ev(3*ms, 1, history.Invoke, history.FRead, "lock-0", nil)
	b.ev(4*ms, 1, history.OK, history.FRead, "lock-0", &history.Value{Counter: &c0})
	b.ev(5*ms, 1, history.Invoke, history.FPause, "", &history.Value{Duration: int64(1500 * time.Millisecond)})
	b.ev(1505*ms, 1, history.OK, history.FPause, "", nil)
	b.ev(1100*ms, 2, history.Invoke, history.FAcquire, "lock-0", nil)
	b.ev(1102*ms, 2, history.OK, history.FAcquire, "lock-0", &history.Value{Token: "b", Fence: fence(34), Deadline: 2100 * ms})
	b.ev(1103*ms, 2, history.Invoke, history.FRead, "lock-0", nil)
	b.ev(1104*ms, 2, history.OK, history.FRead, "lock-0", &history.Value{Counter: &c0})
	b.ev(1105*ms, 2, history.Invoke, history.FWrite, "lock-0", &history.Value{Counter: &c1, Fence: fence(34)})
	b.ev(1106*ms, 2, history.OK, history.FWrite, "lock-0", &history.Value{Counter: &c1, Fence: fence(34)})
	b.ev(1200*ms, 2, history.Invoke, history.FRelease, "lock-0", &history.Value{Token: "b"})
	b.ev(1201*ms, 2, history.OK, history.FRelease, "lock-0", nil)
	b.ev(1510*ms, 1, history.Invoke, history.FWrite, "lock-0", &history.Value{Counter: &c1, Fence: fence(33)})
	b.ev(1511*ms, 1, history.OK, history.FWrite, "lock-0", &history.Value{Counter: &c1, Fence: fence(33), Rejected: fenced})
	return b
}

// findKind is the first violation of kind in res.
func findKind(t *testing.T, res checker.Result, kind string) checker.Violation {
	t.Helper()
	for _, v := range res.Violations {
		if v.Kind == kind {
			return v
		}
	}
	t.Fatalf("no %s among %+v", kind, res.Violations)
	return checker.Violation{}
}

func stepsOf(s Story, kind string) []StoryStep {
	var out []StoryStep
	for _, st := range s.Steps {
		if st.Kind == kind {
			out = append(out, st)
		}
	}
	return out
}

func laneNames(s Story) []string {
	var out []string
	for _, l := range s.Lanes {
		out = append(out, l.Name)
	}
	return out
}

// The story of a stale write is Kleppmann's figure: the writer's grant,
// its pause, its lease's end, the other client's grant and write, and the
// stale write, accepted by storage without fencing.
func TestStoryOfStaleWrite(t *testing.T) {
	ops := gcPauseHistory(false)
	res, err := checker.Check(context.Background(), history.Events(ops), checker.Config{})
	if err != nil {
		t.Fatal(err)
	}
	v := findKind(t, res, checker.KindStaleWrite)
	lk := storyLock{Name: "token", System: "redis", TTL: time.Second}
	s := storyOf(v, 3, ops, nil, lk)

	if got, want := laneNames(s), []string{"lock service (token)", "client 1", "client 2", "storage"}; !slices.Equal(got, want) {
		t.Errorf("lanes %q, want %q", got, want)
	}
	grants := stepsOf(s, stepGrant)
	if len(grants) != 2 || s.Lanes[grants[0].Lane].Process != 1 || s.Lanes[grants[1].Lane].Process != 2 {
		t.Fatalf("grants %+v, want client 1's then client 2's", grants)
	}
	if p := stepsOf(s, stepPause); len(p) != 1 || p[0].End-p[0].At != 1500*ms || p[0].Label != "paused 1.5 s" {
		t.Errorf("pauses %+v, want one of 1.5 s", p)
	}
	exp := stepsOf(s, stepExpiry)
	if len(exp) == 0 || exp[0].At != 1000*ms || exp[0].Label != "client 1's lease expires" {
		t.Errorf("expiries %+v, want client 1's at 1 s", exp)
	}
	writes := stepsOf(s, stepWrite)
	if len(writes) != 2 {
		t.Fatalf("writes %+v, want client 2's and client 1's", writes)
	}
	w2, w1 := writes[0], writes[1]
	if w2.Bad || w2.Outcome != outAccepted || s.Lanes[w2.Lane].Process != 2 {
		t.Errorf("client 2's write %+v, want accepted and not the violation", w2)
	}
	if !w1.Bad || w1.Outcome != outAccepted || !strings.Contains(w1.Label, "lease over") || s.Lanes[w1.Lane].Process != 1 {
		t.Errorf("client 1's write %+v, want the violation, accepted, after its lease", w1)
	}
	if !slices.IsSortedFunc(s.Steps, func(a, b StoryStep) int { return int(a.At - b.At) }) {
		t.Error("steps not in order of time")
	}
	if s.Title != "finding 3: stale-write on lock-0" && s.Title != "violation 3: stale-write on lock-0" {
		t.Errorf("title %q", s.Title)
	}
}

// With fencing, the story shows the tokens and storage's refusal.
func TestStoryOfFencedStaleWrite(t *testing.T) {
	ops := gcPauseHistory(true)
	res, err := checker.Check(context.Background(), history.Events(ops), checker.Config{})
	if err != nil {
		t.Fatal(err)
	}
	v := findKind(t, res, checker.KindStaleWrite)
	s := storyOf(v, 1, ops, nil, storyLock{Name: "fenced", System: "redis", TTL: time.Second, Fenced: true})
	grants := stepsOf(s, stepGrant)
	if len(grants) != 2 || grants[0].Fence != 33 || grants[1].Fence != 34 || !strings.Contains(grants[0].Label, "token 33") {
		t.Errorf("grants %+v, want tokens 33 and 34", grants)
	}
	writes := stepsOf(s, stepWrite)
	if last := writes[len(writes)-1]; last.Outcome != outRejected || last.Fence != 33 || !strings.Contains(last.Answer, "rejected") {
		t.Errorf("the late write %+v, want token 33 rejected", last)
	}
}

// An overlap's story has both clients' grants, the second the violation,
// and the fault on the lock in force between them.
func TestStoryOfOverlapOnRedlock(t *testing.T) {
	b := &builder{ttl: 2000 * ms}
	b.nemesisV(1000*ms, "bump-clock", bump("n3", 10*time.Second, 10*time.Second))
	b.ev(500*ms, 0, history.Invoke, history.FAcquire, "lock-0", nil)
	b.ev(510*ms, 0, history.OK, history.FAcquire, "lock-0", &history.Value{Token: "a", Deadline: 2450 * ms, Nodes: []string{"n1", "n2", "n3"}, Quorum: 3})
	b.ev(1100*ms, 1, history.Invoke, history.FAcquire, "lock-0", nil)
	b.ev(1110*ms, 1, history.OK, history.FAcquire, "lock-0", &history.Value{Token: "b", Deadline: 3050 * ms, Nodes: []string{"n3", "n4", "n5"}, Quorum: 3})
	b.nemesis(4000*ms, history.FFinalHeal, nil, "")
	ops := b.build()
	res, err := checker.Check(context.Background(), history.Events(ops), checker.Config{})
	if err != nil {
		t.Fatal(err)
	}
	v := findKind(t, res, checker.KindOverlap)
	faults := Faults(Record{}, ops)
	lk := storyLock{Name: "redlock", System: "redis", TTL: 2 * time.Second, Drift: 22 * time.Millisecond, Nodes: []string{"n1", "n2", "n3", "n4", "n5"}}
	s := storyOf(v, 1, ops, faults, lk)
	grants := stepsOf(s, stepGrant)
	if len(grants) != 2 || grants[0].Bad || !grants[1].Bad {
		t.Fatalf("grants %+v, want the second the violation", grants)
	}
	if !strings.Contains(grants[0].Label, "n1, n2, n3") || !strings.Contains(grants[1].Label, "while client 0 held it") {
		t.Errorf("grant labels %q, %q", grants[0].Label, grants[1].Label)
	}
	if f := stepsOf(s, stepFault); len(f) != 1 || !strings.Contains(f[0].Label, "clock +10 s on n3") {
		t.Errorf("faults %+v, want node 3's clock jump", f)
	}
	if s.Lanes[0].Name != "lock service (redlock on n1, n2, n3, n4, n5)" {
		t.Errorf("lock lane %q", s.Lanes[0].Name)
	}
	if rows := storyRows(s); rows[0] != 1 {
		t.Errorf("rows %v: the lock's lane should be second, under the first client", rows)
	}
}

// Render draws the story of each kind of finding as PNG and SVG, and
// index.html shows it before the checkers' table, with the assumption.
func TestRenderDrawsStories(t *testing.T) {
	ops := gcPauseHistory(false)
	res, err := checker.Check(context.Background(), history.Events(ops), checker.Config{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	rec := Record{RunMeta: RunMeta{Test: "token", Lock: "token"}, Facts: &Facts{System: "redis", TTL: time.Second}}
	if _, err := Render(context.Background(), dir, rec, history.Events(ops), res); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{StoryFile(checker.KindStaleWrite) + ".png", StoryFile(checker.KindStaleWrite) + ".svg"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	page, err := os.ReadFile(filepath.Join(dir, IndexFile))
	if err != nil {
		t.Fatal(err)
	}
	html := string(page)
	story, table := strings.Index(html, `id="stories"`), strings.Index(html, "Verdict per checker")
	if story < 0 || story > table {
		t.Errorf("the stories (at %d) should come before the checkers' table (at %d)", story, table)
	}
	for _, want := range []string{`src="story-stale-write.png"`, "Which assumption broke:", "a pause longer than the TTL", "Kleppmann&#39;s asynchronous model"} {
		if !strings.Contains(html, want) {
			t.Errorf("index.html lacks %q", want)
		}
	}
}

// A story is picked for the most telling finding of each kind, once.
func TestStoryPicks(t *testing.T) {
	vs := []checker.Violation{
		{Kind: checker.KindStaleWrite, Start: 0, End: 1},
		{Kind: checker.KindOverlap, Fatal: true, Start: 0, End: 5},
		{Kind: checker.KindOverlap, Fatal: true, Start: 0, End: 9},
		{Kind: checker.KindStaleWrite, Fatal: true, Start: 3, End: 4},
	}
	if got, want := storyPicks(vs), []int{2, 3}; !slices.Equal(got, want) {
		t.Errorf("picks %v, want %v", got, want)
	}
}

// A lost update's story shows both reads of the same value and both
// writes, and only the claims that hold them: a client's other critical
// sections in between are left out.
func TestStoryOfLostUpdate(t *testing.T) {
	b := gcPauseBuilder(false)
	c2 := int64(2)
	b.ev(1300*ms, 2, history.Invoke, history.FAcquire, "lock-0", nil)
	b.ev(1302*ms, 2, history.OK, history.FAcquire, "lock-0", &history.Value{Token: "c", Deadline: 2300 * ms})
	b.ev(1303*ms, 2, history.Invoke, history.FWrite, "lock-0", &history.Value{Counter: &c2})
	b.ev(1304*ms, 2, history.OK, history.FWrite, "lock-0", &history.Value{Counter: &c2})
	b.ev(1400*ms, 2, history.Invoke, history.FRelease, "lock-0", &history.Value{Token: "c"})
	b.ev(1401*ms, 2, history.OK, history.FRelease, "lock-0", nil)
	ops := b.build()
	v := findKind(t, checkOps(ops), checker.KindLostUpdate)
	s := storyOf(v, 1, ops, nil, storyLock{Name: "token", System: "redis", TTL: time.Second})
	reads := stepsOf(s, stepRead)
	if len(reads) != 2 || reads[0].Label != "read 0" || reads[1].Label != "read 0" {
		t.Errorf("reads %+v, want both clients reading 0", reads)
	}
	if g := stepsOf(s, stepGrant); len(g) != 2 {
		t.Errorf("grants %+v, want one claim per client", g)
	}
	for _, w := range stepsOf(s, stepWrite) {
		if !w.Bad || !strings.HasSuffix(w.Answer, "an update lost") {
			t.Errorf("write %+v, want each of the two writes of 1 marked", w)
		}
	}
}
