package shrink

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/schedule"
)

// recorded is a schedule as a random run records it: eight faults at the
// times they struck, one of which (the pause of a holder at 5.2 s, 2.5 s
// long against a lease of 1 s) is the one that breaks the lock.
func recorded() schedule.Schedule {
	s := schedule.Schedule{Lock: "set-nx-ex", Seed: 7, TimeLimit: 20 * time.Second, Recovery: 4 * time.Second,
		Workload: schedule.Workload{Clients: 5, Keys: 3, TTL: time.Second}}
	add := func(at time.Duration, nem, action string, params map[string]string, targets ...string) {
		s.Steps = append(s.Steps, schedule.Step{At: at, Nemesis: nem, Action: action, Targets: targets, Params: params,
			Struck: at + 3*time.Millisecond})
	}
	add(1*time.Second, "partition", "start", nil, "c1->n1")
	add(2*time.Second, "partition", "stop", nil)
	add(3*time.Second, "clock", "bump", map[string]string{"delta": "+1m0s"}, "n1")
	add(4*time.Second, "clock", "reset", nil, "n1")
	add(5200*time.Millisecond, "client-pause", "holder", map[string]string{"duration": "2.5s"})
	add(9*time.Second, "latency", "start", map[string]string{"latency": "100ms"})
	add(12*time.Second, "latency", "stop", nil)
	add(15*time.Second, "kill", "kill", nil, "n1")
	s.Steps[7].NotDone = "the run phase ended first"
	return s
}

// breaks is the fake lock's truth: it breaks when a holder pauses for
// more than its lease, inside the run phase, with another client to take
// the lock, and the recovery is long enough for the checker to see it.
func breaks(s schedule.Schedule) bool {
	for _, st := range s.Steps {
		d, _ := time.ParseDuration(st.Params["duration"])
		if st.Nemesis == "client-pause" && d > s.Workload.TTL && st.At+500*time.Millisecond <= s.TimeLimit &&
			s.Workload.Clients >= 2 && s.Recovery >= 300*time.Millisecond {
			return true
		}
	}
	return false
}

// always answers every run by pred.
func always(pred func(schedule.Schedule) bool) Try {
	return func(_ context.Context, s schedule.Schedule) (int, int, error) {
		if pred(s) {
			return 1, 1, nil
		}
		return 0, 1, nil
	}
}

func TestSearchFindsTheOneFaultThatMatters(t *testing.T) {
	var log []string
	opt := Options{Report: func(a Attempt) {
		log = append(log, fmt.Sprintf("%d %s %d/%d %v", a.N, a.Change, a.Reproduced, a.Of, a.Kept))
	}}
	res, err := Search(context.Background(), recorded(), always(breaks), opt)
	if err != nil {
		t.Fatal(err)
	}
	if res.Stopped != StopDone {
		t.Fatalf("stopped %q, want done", res.Stopped)
	}
	best := res.Best
	if len(best.Steps) != 1 || best.Steps[0].Nemesis != "client-pause" {
		t.Fatalf("steps %+v, want the client pause alone", best.Steps)
	}
	d, _ := time.ParseDuration(best.Steps[0].Params["duration"])
	if d <= time.Second || d > 1100*time.Millisecond {
		t.Errorf("pause %v, want just over the lease (1 s)", d)
	}
	if best.Workload.Clients != 2 || best.Workload.Keys != 1 {
		t.Errorf("clients %d keys %d, want 2 and 1", best.Workload.Clients, best.Workload.Keys)
	}
	if want := best.Steps[0].At + 500*time.Millisecond; best.TimeLimit > want+timeQuantum {
		t.Errorf("time limit %v, want at most %v", best.TimeLimit, want+timeQuantum)
	}
	if best.Recovery > 400*time.Millisecond {
		t.Errorf("recovery %v, want at most 400ms", best.Recovery)
	}
	if !breaks(best) {
		t.Error("the best schedule does not break the lock")
	}
	if res.After.Steps != 1 || res.Before.Steps != 8 || res.After.Length >= res.Before.Length/4 {
		t.Errorf("before %v after %v", res.Before, res.After)
	}
	if res.Baseline != [2]int{2, 2} || log[0] != "1 the schedule as it ran 2/2 false" {
		t.Errorf("baseline %v, first attempt %q", res.Baseline, log[0])
	}
	if len(log) != res.Attempts || len(res.Changes) == 0 {
		t.Errorf("%d attempts reported, %d counted, %d changes", len(log), res.Attempts, len(res.Changes))
	}
	// The same answers give the same search.
	var again []string
	opt.Report = func(a Attempt) {
		again = append(again, fmt.Sprintf("%d %s %d/%d %v", a.N, a.Change, a.Reproduced, a.Of, a.Kept))
	}
	res2, err := Search(context.Background(), recorded(), always(breaks), opt)
	if err != nil || !reflect.DeepEqual(log, again) || !reflect.DeepEqual(res, res2) {
		t.Errorf("a second search differs: %v\n%v\n%v", err, log, again)
	}
}

func TestSearchGivesTryCleanSchedulesAndReturnsOne(t *testing.T) {
	try := func(_ context.Context, s schedule.Schedule) (int, int, error) {
		for _, st := range s.Steps {
			if st.Struck != 0 || st.NotDone != "" || st.Holder != "" || st.Waited != 0 {
				return 0, 0, fmt.Errorf("try got a recorded step: %+v", st)
			}
		}
		return 1, 1, nil
	}
	res, err := Search(context.Background(), recorded(), try, Options{MaxRuns: 6})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stopped != StopRuns || res.Runs != 6 {
		t.Errorf("stopped %q after %d runs, want runs after 6", res.Stopped, res.Runs)
	}
	// The first candidate after the baseline drops the step that did not
	// act; the second drops every step: both reproduce here.
	if !slices.Equal(res.Changes, []string{"drop 1 step: 15s kill kill n1", "drop every step"}) {
		t.Errorf("changes %q", res.Changes)
	}
	if res.Best.Steps != nil {
		t.Errorf("best has steps: %+v", res.Best.Steps)
	}
}

func TestSearchKeepsOnlyAMajority(t *testing.T) {
	for _, tc := range []struct {
		answers  []int // of the candidate's runs, in order
		runs     int
		kept     bool
		consumed int
	}{
		{[]int{1, 1}, 3, true, 2},
		{[]int{1, 0, 1}, 3, true, 3},
		{[]int{0, 1, 0}, 3, false, 3},
		{[]int{0, 0}, 3, false, 2},
		{[]int{1, 0}, 2, false, 2}, // half is not most
		{[]int{1, 1, 0, 1}, 5, true, 4},
		{[]int{1}, 1, true, 1},
	} {
		calls := 0
		try := func(_ context.Context, s schedule.Schedule) (int, int, error) {
			if len(s.Steps) == 1 { // the baseline reproduces always
				return 1, 1, nil
			}
			calls++
			if calls > len(tc.answers) {
				return 0, 1, nil
			}
			return tc.answers[calls-1], 1, nil
		}
		s := schedule.Schedule{Lock: "token", TimeLimit: time.Second, Recovery: time.Second, Workload: schedule.Workload{Clients: 2, Keys: 1},
			Steps: []schedule.Step{{At: 10 * time.Millisecond, Nemesis: "kill", Action: "kill"}}}
		var first Attempt
		opt := Options{Runs: tc.runs, MaxRuns: tc.runs/2 + 1 + len(tc.answers), Report: func(a Attempt) {
			if a.N == 2 {
				first = a
			}
		}}
		res, err := Search(context.Background(), s, try, opt)
		if err != nil {
			t.Fatal(err)
		}
		if first.Change != "drop every step" || first.Kept != tc.kept || first.Of != tc.consumed {
			t.Errorf("%v of %d runs: attempt %+v, want kept %v after %d runs (search %v)", tc.answers, tc.runs, first, tc.kept, tc.consumed, res.Stopped)
		}
	}
}

func TestSearchStopsWhenTheRunDoesNotReproduce(t *testing.T) {
	n := 0
	try := func(context.Context, schedule.Schedule) (int, int, error) {
		n++
		return n % 2, 1, nil // 1, 0, 1 … : but the second 0 comes at run 4
	}
	res, err := Search(context.Background(), recorded(), always(func(schedule.Schedule) bool { return false }), Options{})
	// The run's schedule, then the same with its faults awaiting a holder.
	if err != nil || res.Stopped != StopNotReproduced || res.Baseline != [2]int{0, 2} || res.Attempts != 2 {
		t.Fatalf("stopped %q, baseline %v, %d attempts, err %v", res.Stopped, res.Baseline, res.Attempts, err)
	}
	if !reflect.DeepEqual(res.Best, Clean(recorded())) {
		t.Error("the best of a search that found nothing is not the given schedule, cleaned")
	}
	res, _ = Search(context.Background(), recorded(), try, Options{Runs: 5})
	if res.Baseline != [2]int{3, 5} || res.Stopped == StopNotReproduced {
		t.Errorf("3 of 5 is most: baseline %v stopped %q", res.Baseline, res.Stopped)
	}
}

// fakeClock advances by step at every call of try.
type fakeClock struct {
	now  time.Time
	step time.Duration
}

func (c *fakeClock) Now() time.Time { return c.now }

func TestSearchKeepsToItsBudget(t *testing.T) {
	clock := &fakeClock{now: time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC), step: time.Minute}
	runs := 0
	try := func(ctx context.Context, s schedule.Schedule) (int, int, error) {
		clock.now = clock.now.Add(clock.step)
		runs++
		return always(breaks)(ctx, s)
	}
	res, err := Search(context.Background(), recorded(), try, Options{Budget: 10 * time.Minute, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stopped != StopBudget || runs != 10 || res.Runs > 10 {
		t.Errorf("stopped %q after %d runs (%d counted), want budget after 10", res.Stopped, runs, res.Runs)
	}
	if len(res.Changes) == 0 || !breaks(res.Best) || res.After.Steps >= res.Before.Steps {
		t.Errorf("no progress kept within the budget: %v → %v, %q", res.Before, res.After, res.Changes)
	}
}

func TestSearchInterruptedKeepsTheBestSoFar(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runs := 0
	try := func(ctx context.Context, s schedule.Schedule) (int, int, error) {
		runs++
		if runs == 9 {
			cancel()
			return 0, 0, ctx.Err()
		}
		return always(breaks)(ctx, s)
	}
	var kept []string
	res, err := Search(ctx, recorded(), try, Options{Report: func(a Attempt) {
		if a.Kept {
			kept = append(kept, a.Change)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stopped != StopInterrupted || len(kept) == 0 || !slices.Equal(kept, res.Changes) {
		t.Fatalf("stopped %q, kept %q, changes %q", res.Stopped, kept, res.Changes)
	}
	if !breaks(res.Best) || res.After != Measure(res.Best) {
		t.Errorf("best so far %v does not break, or its size %v is not %v", res.Best, res.After, Measure(res.Best))
	}
}

func TestSearchGoesOnPastARefusedCandidate(t *testing.T) {
	var refused []string
	try := func(ctx context.Context, s schedule.Schedule) (int, int, error) {
		if s.Workload.Clients < 3 {
			return 0, 0, fmt.Errorf("%w: clients %d: this lock needs 3", ErrRefused, s.Workload.Clients)
		}
		return always(breaks)(ctx, s)
	}
	res, err := Search(context.Background(), recorded(), try, Options{Report: func(a Attempt) {
		if a.Refused != nil {
			refused = append(refused, a.Change)
		}
	}})
	if err != nil || res.Stopped != StopDone {
		t.Fatalf("err %v stopped %q", err, res.Stopped)
	}
	if res.Best.Workload.Clients != 3 || !slices.Contains(refused, "clients 2") {
		t.Errorf("clients %d, refused %q", res.Best.Workload.Clients, refused)
	}
}

func TestSearchEndsOnAnErrorOfTry(t *testing.T) {
	boom := errors.New("redis-server: not found")
	runs := 0
	try := func(ctx context.Context, s schedule.Schedule) (int, int, error) {
		runs++
		if runs > 4 {
			return 0, 0, boom
		}
		return always(breaks)(ctx, s)
	}
	res, err := Search(context.Background(), recorded(), try, Options{})
	if !errors.Is(err, boom) {
		t.Fatalf("err %v, want %v", err, boom)
	}
	if len(res.Changes) != 1 || res.Best.Steps == nil {
		t.Errorf("best so far lost: %q", res.Changes)
	}
	_, err = Search(context.Background(), recorded(), func(context.Context, schedule.Schedule) (int, int, error) { return 2, 1, nil }, Options{})
	if err == nil || !strings.Contains(err.Error(), "2 of 1") {
		t.Errorf("a Try that says 2 of 1: %v", err)
	}
}

func TestDropStepsHalvesThenOneByOne(t *testing.T) {
	s := recorded()
	s.Steps = s.Steps[:4]
	var got []string
	for _, c := range dropSteps(s, nil) {
		got = append(got, fmt.Sprint(len(c.Schedule.Steps), " ", c.Change))
	}
	want := []string{
		"0 drop every step",
		"2 drop 2 steps: 1s partition start c1->n1, 2s partition stop",
		"2 drop 2 steps: 3s clock bump n1, 4s clock reset n1",
		"3 drop 1 step: 1s partition start c1->n1",
		"3 drop 1 step: 2s partition stop",
		"3 drop 1 step: 3s clock bump n1",
		"3 drop 1 step: 4s clock reset n1",
	}
	if !slices.Equal(got, want) {
		t.Errorf("candidates\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(s.Steps) != 4 {
		t.Error("dropSteps changed its argument")
	}
	// Five steps: 5, 3+2, 2+2+1 and singles; the step that did not act
	// goes alone first.
	s = recorded()
	s.Steps = s.Steps[3:]
	var sizes []int
	for _, c := range dropSteps(s, nil) {
		sizes = append(sizes, len(s.Steps)-len(c.Schedule.Steps))
	}
	if want := []int{1, 5, 3, 2, 2, 2, 1, 1, 1, 1, 1, 1}; !slices.Equal(sizes, want) {
		t.Errorf("dropped %v, want %v", sizes, want)
	}
}

func TestCandidatesShortenAndCount(t *testing.T) {
	s := recorded()
	byChange := map[string]schedule.Schedule{}
	for _, c := range Candidates(s) {
		if _, dup := byChange[c.Change]; dup {
			t.Errorf("two candidates named %q", c.Change)
		}
		byChange[c.Change] = c.Schedule
	}
	for _, want := range []string{
		"time_limit 17.5s", "time_limit 18.8s", // above the last step (15 s)
		"recovery 2s", "recovery 3s",
		"clients 2", "clients 4", "clients 1", "keys 1", "keys 2",
		"step 3s clock bump n1: delta +30s", "step 3s clock bump n1: delta +45s",
		"step 5.2s client-pause holder: duration 1.25s", "step 5.2s client-pause holder: duration 1.88s",
		"step 9s latency start: latency 50ms", "step 9s latency start: latency 80ms",
		"step 1s partition start c1->n1 awaits a holder", "step 15s kill kill n1 awaits a holder",
		"twice as fast: steps at half their times (the last at 7.5s), time_limit 10s",
	} {
		if _, ok := byChange[want]; !ok {
			t.Errorf("no candidate %q", want)
		}
	}
	for change := range byChange {
		if strings.Contains(change, "stop awaits") || strings.Contains(change, "reset n1 awaits") || strings.Contains(change, "holder awaits") {
			t.Errorf("a heal or a holder's step awaits a holder: %q", change)
		}
	}
	if c := byChange["step 1s partition start c1->n1 awaits a holder"]; c.Steps[0].Await == nil || s.Steps[0].Await != nil {
		t.Error("the await candidate did not await, or changed the schedule it came from")
	}
	if s.Steps[2].Params["delta"] != "+1m0s" {
		t.Error("a candidate changed the schedule's params")
	}
	// A step naming c3 keeps four clients.
	s.Steps[0].Targets = []string{"c3->n1"}
	for _, c := range fewerClients(s, nil) {
		if c.Schedule.Workload.Clients < 4 {
			t.Errorf("%q leaves fewer clients than the steps name", c.Change)
		}
	}
}

func TestCandidatesOfTheWorkloadsOwnPause(t *testing.T) {
	s := schedule.Schedule{Lock: "set-nx-ex", TimeLimit: 4 * time.Second, Recovery: 2 * time.Second,
		Workload: schedule.Workload{Clients: 5, Keys: 1, TTL: time.Second, ClientPause: 1500 * time.Millisecond, ClientPauseRate: 0.1}}
	var got []string
	for _, c := range Candidates(s) {
		got = append(got, c.Change)
	}
	want := []string{"time_limit 2s", "time_limit 3s", "recovery 1s", "recovery 1.5s", "clients 2", "clients 4", "clients 1",
		"workload client_pause 750ms", "workload client_pause 1.13s", "workload client_pause_rate 0.05"}
	if !slices.Equal(got, want) {
		t.Errorf("candidates %q\nwant %q", got, want)
	}
}

func TestShorter(t *testing.T) {
	for _, tc := range []struct {
		d, floor, q time.Duration
		want        []time.Duration
	}{
		{4 * time.Second, 0, timeQuantum, []time.Duration{2 * time.Second, 3 * time.Second}},
		{1100 * time.Millisecond, time.Second, timeQuantum, nil},
		{1200 * time.Millisecond, time.Second, timeQuantum, []time.Duration{1100 * time.Millisecond}},
		{10 * time.Millisecond, 0, paramQuantum, nil},
		{20 * time.Millisecond, 0, paramQuantum, []time.Duration{10 * time.Millisecond}},
		{time.Second, time.Second, timeQuantum, nil},
	} {
		if got := shorter(tc.d, tc.floor, tc.q); !slices.Equal(got, tc.want) {
			t.Errorf("shorter(%v, %v, %v) = %v, want %v", tc.d, tc.floor, tc.q, got, tc.want)
		}
	}
}

func TestTargetsAndReproduces(t *testing.T) {
	vs := []checker.Violation{
		{Checker: "resource", Kind: "stale-write", Fatal: false},
		{Checker: "resource", Kind: "lost-update", Fatal: true},
		{Checker: "liveness", Kind: "orphan-lock", Fatal: true},
		{Checker: "lock-promise", Kind: "foreign-release", Fatal: true},
		{Checker: "lock-promise", Kind: "overlap", Fatal: true},
		{Checker: "lock-promise", Kind: "foreign-release", Fatal: true},
	}
	want := []Target{{"lock-promise", "foreign-release"}, {"lock-promise", "overlap"}, {"resource", "lost-update"}, {"liveness", "orphan-lock"}}
	if got := Targets(vs); !slices.Equal(got, want) {
		t.Errorf("targets %v, want %v", got, want)
	}
	if !Reproduces(vs, Target{"lock-promise", "overlap"}) || Reproduces(vs, Target{"resource", "stale-write"}) || Reproduces(vs, Target{"resource", "overlap"}) {
		t.Error("Reproduces: a non-fatal finding or another checker's kind counted")
	}
	if want[0].String() != "lock-promise/foreign-release" {
		t.Errorf("String %q", want[0])
	}
}

// Halving the step times that did not reproduce is not tried again with
// another time limit: the step times are what failed.
func TestSearchDoesNotRetryAFailedSpeedUp(t *testing.T) {
	s := recorded()
	s.Steps = s.Steps[4:5] // the pause alone, at 5.2 s
	tried := map[string]int{}
	notFaster := func(s schedule.Schedule) bool { return breaks(s) && s.Steps[0].At >= 5*time.Second }
	_, err := Search(context.Background(), s, always(notFaster), Options{Report: func(a Attempt) {
		if strings.HasPrefix(a.Change, "twice as fast") {
			tried[a.Change[:strings.Index(a.Change, "), time_limit")]]++
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(tried) != 1 {
		t.Errorf("speed-ups tried: %v, want one", tried)
	}
	for k, n := range tried {
		if n != 1 {
			t.Errorf("%q tried %d times", k, n)
		}
	}
}

// A run whose fault struck a holder by chance does not reproduce as it
// ran; with its faults awaiting a holder it does, and the search goes on
// from there.
func TestSearchMakesFaultsAwaitWhenTheRunDoesNotReproduce(t *testing.T) {
	s := recorded()
	s.Steps = s.Steps[:2] // a partition's start and stop
	struck := func(s schedule.Schedule) bool {
		return len(s.Steps) > 0 && s.Steps[0].Action == "start" && s.Steps[0].Await != nil
	}
	res, err := Search(context.Background(), s, always(struck), Options{})
	if err != nil || res.Stopped != StopDone {
		t.Fatalf("err %v, stopped %q", err, res.Stopped)
	}
	if res.Baseline != [2]int{0, 2} || len(res.Changes) == 0 || res.Changes[0] != "the schedule as it ran, its faults awaiting a holder" {
		t.Errorf("baseline %v, changes %q", res.Baseline, res.Changes)
	}
	if len(res.Best.Steps) != 1 || res.Best.Steps[0].Await == nil {
		t.Errorf("best steps %+v, want the start alone, awaiting a holder", res.Best.Steps)
	}
	// The stop heals: it awaits nothing.
	a, ok := awaitAll(s)
	if !ok || a.Steps[0].Await == nil || a.Steps[1].Await != nil || s.Steps[0].Await != nil {
		t.Errorf("awaitAll: %+v", a.Steps)
	}
}
