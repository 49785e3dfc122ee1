package scenarios

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/lockharness/lockharness/sut"
)

// RunAll runs at most parallel scenarios at once, an exclusive one alone,
// every scenario once, and reports them in the order of the list.
func TestRunAllSchedulesSideBySideAndExclusiveAlone(t *testing.T) {
	var list []Scenario
	for i := 0; i < 9; i++ {
		s := Scenario{Name: fmt.Sprintf("s%d", i)}
		if i == 1 || i == 6 {
			s.Run.Cluster = sut.Config{Topology: "replicated", Failover: "sentinel"}
		}
		list = append(list, s)
	}
	var mu sync.Mutex
	running, most := map[string]bool{}, 0
	var violations []string
	run := func(s Scenario) (Outcome, error) {
		mu.Lock()
		for other := range running {
			if s.Exclusive() || isExclusive(list, other) {
				violations = append(violations, s.Name+" beside "+other)
			}
		}
		running[s.Name] = true
		most = max(most, len(running))
		mu.Unlock()
		time.Sleep(5 * time.Millisecond)
		mu.Lock()
		delete(running, s.Name)
		mu.Unlock()
		return Outcome{Scenario: s}, nil
	}
	var got []int
	runAll(context.Background(), list, 3, func(time.Time) bool { return true }, run, func(i int, r Result) {
		if r.Outcome.Scenario.Name != list[i].Name {
			t.Errorf("result %d is %s's", i, r.Outcome.Scenario.Name)
		}
		got = append(got, i)
	})
	if len(got) != len(list) {
		t.Fatalf("reported %v", got)
	}
	for i, g := range got {
		if g != i {
			t.Fatalf("reported out of order: %v", got)
		}
	}
	if len(violations) > 0 {
		t.Errorf("exclusive scenarios ran beside others: %v", violations)
	}
	if most != 3 {
		t.Errorf("at most %d ran at once, want 3", most)
	}
}

func isExclusive(list []Scenario, name string) bool {
	for _, s := range list {
		if s.Name == name {
			return s.Exclusive()
		}
	}
	return false
}

// A cancelled context starts nothing more and reports only what ran.
func TestRunAllStopsStartingWhenCancelled(t *testing.T) {
	list := make([]Scenario, 6)
	for i := range list {
		list[i].Name = fmt.Sprintf("s%d", i)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	ran := 0
	run := func(s Scenario) (Outcome, error) {
		mu.Lock()
		ran++
		if ran == 2 {
			cancel()
		}
		mu.Unlock()
		return Outcome{Scenario: s}, ctx.Err()
	}
	reported := 0
	runAll(ctx, list, 1, func(time.Time) bool { return true }, run, func(int, Result) { reported++ })
	if ran != 2 || reported != 2 {
		t.Fatalf("ran %d, reported %d; want 2 and 2", ran, reported)
	}
}

// Without room on the machine, scenarios run one after another.
func TestRunAllRunsAloneWithoutRoom(t *testing.T) {
	list := make([]Scenario, 5)
	for i := range list {
		list[i].Name = fmt.Sprintf("s%d", i)
	}
	var mu sync.Mutex
	running, most := 0, 0
	run := func(s Scenario) (Outcome, error) {
		mu.Lock()
		running++
		most = max(most, running)
		mu.Unlock()
		time.Sleep(5 * time.Millisecond)
		mu.Lock()
		running--
		mu.Unlock()
		return Outcome{Scenario: s}, nil
	}
	n := 0
	runAll(context.Background(), list, 4, func(time.Time) bool { return false }, run, func(int, Result) { n++ })
	if most != 1 || n != 5 {
		t.Fatalf("%d ran at once, %d reported; want 1 and 5", most, n)
	}
}

func TestIdleCPUsIsWithinTheMachine(t *testing.T) {
	if n := idleCPUs(50 * time.Millisecond); n < 0 || n > float64(runtime.NumCPU())+0.01 {
		t.Fatalf("idle CPUs %v on a machine of %d", n, runtime.NumCPU())
	}
}

// The room is the typical window's: a burst in one or two windows (a
// scenario starting) does not decide it.
func TestMedianPassesOverABurst(t *testing.T) {
	for _, tc := range []struct {
		xs   []float64
		want float64
	}{
		{[]float64{0.9, 1.06, 1.74, 1.81, 1.77}, 1.74},
		{[]float64{0.1, 0.2, 0.0, 1.9, 0.1}, 0.1},
		{[]float64{2, 1}, 1.5},
	} {
		if got := median(tc.xs); got != tc.want {
			t.Errorf("median %v = %v, want %v", tc.xs, got, tc.want)
		}
	}
}

// A judgement waits for three windows begun after the event it follows and
// takes the median of the latest five: three windows without room after a
// start refuse whatever the two before it showed, and one start's burst
// among them does not.
func TestSamplerJudgesWithAMajorityAfterTheEvent(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(k int) time.Time { return t0.Add(time.Duration(k) * roomWindow) }
	for _, tc := range []struct {
		name   string
		before []float64 // windows begun before the event
		after  []float64 // and after it
		want   float64
	}{
		{"a start's burst", []float64{1.8, 1.7}, []float64{0.9, 1.06, 1.5}, 1.5},
		{"the start's lasting load", []float64{1.9, 1.9}, []float64{0.3, 0.5, 0.4}, 0.5},
		{"load that lasts", []float64{0.1, 0.0, 0.2}, []float64{0.1, 0.0, 0.2}, 0.1},
		{"the latest five only", []float64{0.0, 0.0, 0.0, 1.8}, []float64{1.2, 1.5, 1.4}, 1.4},
	} {
		s := newSampler(roomWindows, roomWindow)
		k := 0
		for _, x := range tc.before {
			s.add(window{start: at(k), idle: x})
			k++
		}
		event := at(k).Add(-time.Millisecond)
		for _, x := range tc.after {
			s.add(window{start: at(k), idle: x})
			k++
		}
		got, ok := s.typicalSince(context.Background(), event, roomWindows, roomAfter)
		if !ok || got != tc.want {
			t.Errorf("%s: typical %v (%v), want %v", tc.name, got, ok, tc.want)
		}
	}
}

// A judgement waits for the windows it needs as the sampler takes them,
// and gives up when its context ends.
func TestSamplerWaitsForWindowsAfterTheEvent(t *testing.T) {
	s := newSampler(roomWindows, time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var taken int
	var mu sync.Mutex
	go s.run(ctx, func(d time.Duration) float64 {
		time.Sleep(d)
		mu.Lock()
		defer mu.Unlock()
		taken++
		return float64(taken)
	})
	event := time.Now()
	got, ok := s.typicalSince(ctx, event, roomWindows, roomAfter)
	mu.Lock()
	n := taken
	mu.Unlock()
	if !ok || n < roomWindows || got < 3 {
		t.Fatalf("typical %v (%v) after %d windows, want a median of at least 3 after 5", got, ok, n)
	}
	done, stop := context.WithCancel(context.Background())
	stop()
	if _, ok := s.typicalSince(done, time.Now().Add(time.Hour), roomWindows, roomAfter); ok {
		t.Fatal("a judgement whose context ended gave an answer")
	}
}

// A moment without room waits for the next scenario to end, not for all of
// them: s2, refused room while s0 and s1 run, starts beside s1 once s0 has
// ended and there is room again.
func TestRunAllWithoutRoomWaitsForOneEnd(t *testing.T) {
	list := []Scenario{{Name: "s0"}, {Name: "s1"}, {Name: "s2"}}
	s1Started, s1Ends := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	running := map[string]bool{}
	var besideS2 []string
	run := func(s Scenario) (Outcome, error) {
		mu.Lock()
		if s.Name == "s2" {
			for other := range running {
				besideS2 = append(besideS2, other)
			}
		}
		running[s.Name] = true
		mu.Unlock()
		switch s.Name {
		case "s0":
			<-s1Started // so that s1 is asked room beside it
		case "s1":
			close(s1Started)
			select { // held until s2 has started (or it never will beside s1)
			case <-s1Ends:
			case <-time.After(2 * time.Second):
			}
		case "s2":
			close(s1Ends)
		}
		mu.Lock()
		delete(running, s.Name)
		mu.Unlock()
		return Outcome{Scenario: s}, nil
	}
	asked := 0
	room := func(time.Time) bool {
		asked++
		return asked != 2 // s1 is given room, s2 first is not
	}
	runAll(context.Background(), list, 4, room, run, func(int, Result) {})
	if len(besideS2) != 1 || besideS2[0] != "s1" {
		t.Fatalf("s2 ran beside %v, want [s1]", besideS2)
	}
}

// The catalogue starts light scenarios first, spreads the heavy start-ups
// (ZooKeeper's first) among light ones, ends with the shortest light ones,
// and keeps the exclusive ones for the end: every scenario once.
func TestStartOrderSpreadsHeavyStartUpsAndEndsShort(t *testing.T) {
	list := Catalogue()
	order := startOrder(list)
	if len(order) != len(list) {
		t.Fatalf("%d in the order, %d in the list", len(order), len(list))
	}
	seen := map[int]bool{}
	for _, i := range order {
		if seen[i] {
			t.Fatalf("%s twice in the order", list[i].Name)
		}
		seen[i] = true
	}
	burst := func(k int) int { _, b := list[order[k]].startUp(); return b }
	var exclusive, heavy, zk int
	for k, i := range order {
		s := list[i]
		switch {
		case s.Exclusive():
			exclusive++
			continue
		case exclusive > 0:
			t.Fatalf("%s (side by side) after an exclusive one", s.Name)
		}
		if burst(k) == 0 {
			continue
		}
		heavy++
		if burst(k) == 2 {
			zk++
			if zk != heavy {
				t.Errorf("%s (ZooKeeper) after a lighter start-up", s.Name)
			}
		}
		if k < leadLight {
			t.Errorf("%s (heavy) starts at %d, before %d light ones", s.Name, k, leadLight)
		}
		for j := max(0, k-heavyGap); j < k; j++ {
			if burst(j) > 0 {
				t.Errorf("%s (heavy) starts %d after %s (heavy)", s.Name, k-j, list[order[j]].Name)
			}
		}
	}
	if exclusive != 3 || zk != 4 || heavy != 10 {
		t.Fatalf("%d exclusive, %d heavy, %d ZooKeeper; want 3, 10, 4", exclusive, heavy, zk)
	}
	// The light ones after the last heavy one, the longest first: the
	// catalogue ends on its shortest.
	last := len(order) - exclusive - 1
	for k := last; k > 0 && burst(k-1) == 0; k-- {
		if a, b := list[order[k-1]].cost(), list[order[k]].cost(); a < b {
			t.Errorf("%s (%v) starts before the longer %s (%v)", list[order[k-1]].Name, a, list[order[k]].Name, b)
		}
	}
	if c := list[order[last]].cost(); c > 4*time.Second {
		t.Errorf("the last to start, %s, takes %v", list[order[last]].Name, c)
	}
}

// With fewer light scenarios than leadLight, they all start first, then
// the heavy ones, the longest first.
func TestStartOrderWithFewLightOnes(t *testing.T) {
	list := []Scenario{{Name: "a", Lock: "zk"}, {Name: "b", Lock: "zk"}, {Name: "c", Lock: "token"}}
	list[1].Run.TimeLimit = 5 * time.Second
	got := startOrder(list)
	if fmt.Sprint(got) != "[2 1 0]" {
		t.Fatalf("order %v, want [2 1 0]", got)
	}
}

// The room is judged on what happened since the start before (or, after a
// refusal, since the end it waited for): runAll passes that moment.
func TestRunAllJudgesSinceTheLastStartOrEnd(t *testing.T) {
	list := []Scenario{{Name: "s0"}, {Name: "s1"}, {Name: "s2"}}
	var mu sync.Mutex
	started, ended := map[string]time.Time{}, map[string]time.Time{}
	release := make(chan struct{})
	run := func(s Scenario) (Outcome, error) {
		mu.Lock()
		started[s.Name] = time.Now()
		mu.Unlock()
		if s.Name == "s0" {
			<-release
		}
		mu.Lock()
		ended[s.Name] = time.Now()
		mu.Unlock()
		return Outcome{Scenario: s}, nil
	}
	var asked []time.Time
	room := func(since time.Time) bool {
		mu.Lock()
		asked = append(asked, since)
		n := len(asked)
		mu.Unlock()
		if n == 2 { // s2 is refused once: it waits for an end
			go func() { time.Sleep(10 * time.Millisecond); close(release) }()
			return false
		}
		return true
	}
	runAll(context.Background(), list, 4, room, run, func(int, Result) {})
	if len(asked) != 3 {
		t.Fatalf("room asked %d times, want 3", len(asked))
	}
	if d := started["s0"].Sub(asked[0]); asked[0].IsZero() || d < 0 || d > time.Second {
		t.Errorf("s1 judged since %v, s0 started %v", asked[0], started["s0"])
	}
	if d := started["s1"].Sub(asked[1]); d < 0 || d > time.Second {
		t.Errorf("s2 judged since %v, s1 started %v", asked[1], started["s1"])
	}
	if asked[2].Before(ended["s0"]) && asked[2].Before(ended["s1"]) {
		t.Errorf("s2 judged again since %v, before any end (s0 %v, s1 %v)", asked[2], ended["s0"], ended["s1"])
	}
}

// A refusal with nothing ending asks again roomAgain later: a start-up's
// burst passes without an end, and s1 starts beside the long s0.
func TestRunAllAsksAgainWithoutAnEnd(t *testing.T) {
	list := []Scenario{{Name: "s0"}, {Name: "s1"}}
	s1Started := make(chan struct{})
	var besideS0 bool
	run := func(s Scenario) (Outcome, error) {
		switch s.Name {
		case "s0":
			select {
			case <-s1Started:
				besideS0 = true
			case <-time.After(3 * roomAgain):
			}
		case "s1":
			close(s1Started)
		}
		return Outcome{Scenario: s}, nil
	}
	var asked []time.Time
	var refused time.Time
	runAll(context.Background(), list, 4, func(since time.Time) bool {
		asked = append(asked, time.Now())
		if len(asked) == 1 {
			refused = time.Now()
			return false
		}
		if since.After(refused.Add(time.Millisecond)) {
			t.Errorf("asked again on the windows since %v, after the refusal at %v", since, refused)
		}
		return true
	}, run, func(int, Result) {})
	if !besideS0 || len(asked) != 2 {
		t.Fatalf("s1 beside s0: %v, room asked %d times; want true and 2", besideS0, len(asked))
	}
	if d := asked[1].Sub(asked[0]); d < roomAgain {
		t.Fatalf("asked again after %v, before roomAgain (%v)", d, roomAgain)
	}
}

// A window that began a sliver before the event (the start that follows
// the judgement at a window's end) counts as after it; one that began
// earlier does not.
func TestSamplerCountsAWindowBegunJustBeforeTheEvent(t *testing.T) {
	t0 := time.Unix(1000, 0)
	s := newSampler(roomWindows, roomWindow)
	for k, x := range []float64{1.9, 1.9, 1.9, 0.2, 0.2} {
		s.add(window{start: t0.Add(time.Duration(k) * roomWindow), idle: x})
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	third := t0.Add(2 * roomWindow)
	if !s.enough(third.Add(time.Millisecond), roomWindows, roomAfter) {
		t.Error("a window begun 1ms before the event did not count as after it")
	}
	if s.enough(third.Add(roomWindow/windowSlack+time.Millisecond), roomWindows, roomAfter) {
		t.Error("a window begun more than a twentieth of a window before the event counted as after it")
	}
}

// On a machine with room, each start after the first waits for three
// windows after the one before it, not four: the window begun just before
// a start (at the end of the judgement that allowed it) counts.
func TestRunAllStartsThreeWindowsApart(t *testing.T) {
	const window = 50 * time.Millisecond
	list := make([]Scenario, 5)
	for i := range list {
		list[i].Name = fmt.Sprintf("s%d", i)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := newSampler(roomWindows, window)
	go s.run(ctx, func(d time.Duration) float64 { time.Sleep(d); return 2 })
	var mu sync.Mutex
	var starts []time.Time
	run := func(sc Scenario) (Outcome, error) {
		mu.Lock()
		starts = append(starts, time.Now())
		mu.Unlock()
		time.Sleep(time.Second)
		return Outcome{Scenario: sc}, nil
	}
	runAll(ctx, list, len(list), s.room(ctx), run, func(int, Result) {})
	for k := 2; k < len(starts); k++ {
		if gap := starts[k].Sub(starts[k-1]); gap < roomAfter*window-window/2 || gap > (roomAfter+1)*window-window/4 {
			t.Errorf("start %d came %v after the one before, want about %v", k, gap, roomAfter*window)
		}
	}
}
