package run

import (
	"errors"
	"testing"
	"time"

	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/nemesis"
	"github.com/lockharness/lockharness/schedule"
)

// ev is one event of a test history, at ms milliseconds.
func ev(ms int64, p history.Process, t history.Type, f, key string) history.Op {
	return history.Op{Time: ms * 1e6, Process: p, Type: t, F: f, Key: key}
}

// feed gives e the events.
func feed(e *evidence, ops ...history.Op) {
	for _, op := range ops {
		e.observe(op)
	}
}

// cycle is process p acquiring key (asked at ms), granted 10ms later.
func cycle(ms int64, p history.Process, key string) []history.Op {
	return []history.Op{ev(ms, p, history.Invoke, history.FAcquire, key), ev(ms+10, p, history.OK, history.FAcquire, key)}
}

func release(ms int64, p history.Process, key string) []history.Op {
	return []history.Op{ev(ms, p, history.Invoke, history.FRelease, key), ev(ms+10, p, history.OK, history.FRelease, key)}
}

// A holder struck by the fault keeps the run phase going until it has
// released, and then until two acquires asked for after that are granted:
// the grants before its release are not the evidence.
func TestRunSettlesAfterTheStruckHolderAndTwoGrants(t *testing.T) {
	e := newEvidence()
	feed(e, cycle(0, 0, "k")...)
	feed(e, ev(20, 0, history.Invoke, history.FRead, "k"), ev(30, 0, history.OK, history.FRead, "k"))
	feed(e, ev(40, 1, history.Invoke, history.FAcquire, "k"))
	e.setMark(50e6) // the pause is over; process 0 still holds
	feed(e, ev(60, 1, history.OK, history.FAcquire, "k"))
	feed(e, release(70, 1, "k")...)
	feed(e, cycle(90, 1, "k")...)
	if e.settled(1) {
		t.Fatal("settled while the struck holder had not released")
	}
	feed(e, ev(200, 0, history.Invoke, history.FWrite, "k"), ev(210, 0, history.OK, history.FWrite, "k"))
	feed(e, release(220, 0, "k")...)
	if e.settled(1) {
		t.Fatal("settled before a grant asked for after the holder released")
	}
	feed(e, cycle(240, 1, "k")...)
	if !e.settled(1) || e.settled(2) {
		t.Fatalf("after one grant: settled(1) %v, settled(2) %v; want true, false", e.settled(1), e.settled(2))
	}
	feed(e, release(260, 1, "k")...)
	feed(e, cycle(280, 0, "k")...)
	if !e.settled(2) {
		t.Fatal("not settled after two grants")
	}
}

// A call under way at the mark (a pause, here) is waited for; a crashed
// holder's claim and calls end with its crash, its renewer's too.
func TestRunSettlesOnCallsEndedAndCrashes(t *testing.T) {
	e := newEvidence()
	owner := history.Process(0)
	feed(e, cycle(0, 0, "k")...)
	feed(e, history.Op{Time: 15e6, Process: 100, Owner: &owner, Type: history.Invoke, F: history.FRenew, Key: "k"})
	feed(e, ev(20, 1, history.Invoke, history.FPause, "k"))
	e.setMark(30e6)
	feed(e, ev(40, 0, history.Invoke, history.FCrash, "k"), ev(41, 0, history.Info, history.FCrash, "k"))
	feed(e, cycle(50, 2, "k")...)
	if e.settled(1) {
		t.Fatal("settled while process 1's pause went on")
	}
	feed(e, ev(60, 1, history.OK, history.FPause, "k"))
	feed(e, release(70, 2, "k")...)
	feed(e, cycle(80, 2, "k")...)
	if !e.settled(1) {
		t.Fatal("not settled: the crash should end process 0's claim and its renewer's call")
	}
}

// The recovery ends only once every key acquired in the run is granted
// by an acquire asked for after the heal: a key that stays stuck keeps it
// going, and a grant asked for before the heal is no evidence.
func TestRecoveryNeedsEveryKeyGrantedAfterTheHeal(t *testing.T) {
	e := newEvidence()
	feed(e, cycle(0, 0, "a")...)
	feed(e, cycle(0, 1, "b")...)
	feed(e, release(20, 1, "b")...)
	feed(e, ev(40, 1, history.Invoke, history.FAcquire, "b"))
	e.setMark(50e6) // the heal: process 0 holds a, process 1 asks for b
	feed(e, ev(60, 1, history.OK, history.FAcquire, "b"))
	feed(e, release(70, 0, "a")...)
	feed(e, release(80, 1, "b")...)
	feed(e, cycle(90, 0, "a")...)
	if e.recovered() {
		t.Fatal("recovered with b granted only to an acquire asked for before the heal")
	}
	feed(e, cycle(100, 1, "b")...)
	if !e.recovered() {
		t.Fatal("not recovered with both keys granted again")
	}
}

// A crashed holder of a lease that never expires keeps its key stuck: no
// grant comes, and the recovery runs its whole length.
func TestRecoveryOfAStuckKeyRunsItsLength(t *testing.T) {
	e := newEvidence()
	feed(e, cycle(0, 0, "k")...)
	feed(e, ev(20, 0, history.Invoke, history.FCrash, "k"), ev(21, 0, history.Info, history.FCrash, "k"))
	e.setMark(30e6)
	for ms := int64(40); ms < 1000; ms += 20 {
		feed(e, ev(ms, 1, history.Invoke, history.FAcquire, "k"), ev(ms+10, 1, history.Fail, history.FAcquire, "k"))
	}
	if e.recovered() {
		t.Fatal("recovered with the key stuck")
	}
}

// The faults are over when the last step has acted and the longest of
// their own lengths (a pause's duration) has run out.
func TestFaultsOver(t *testing.T) {
	steps := []schedule.Step{
		{At: 100 * time.Millisecond, Struck: 300 * time.Millisecond, Params: map[string]string{"duration": "2.5s"}},
		{At: time.Second, Struck: 1200 * time.Millisecond},
		{At: 4 * time.Second, Struck: 4 * time.Second, NotDone: "no holder came", Params: map[string]string{"duration": "9s"}},
	}
	if got, want := faultsOver(steps), 4*time.Second; got != want {
		t.Errorf("faultsOver = %v, want %v", got, want)
	}
	if got, want := faultsOver(steps[:2]), 2800*time.Millisecond; got != want {
		t.Errorf("faultsOver = %v, want %v", got, want)
	}
}

// An early end of the run phase needs a script, and its grants a run
// phase that ends early, in range; the error names the field.
func TestCheckEndEarly(t *testing.T) {
	script := []nemesis.Step{{At: 0, Nemesis: "client-crash", Action: "holder"}}
	for _, tc := range []struct {
		name  string
		c     Config
		field string
	}{
		{"no script", Config{EndEarly: EndEarly{Run: true}}, "EndEarly.Run"},
		{"grants without run", Config{Script: script, EndEarly: EndEarly{Grants: 2, Recovery: true}}, "EndEarly.Grants"},
		{"negative grants", Config{Script: script, EndEarly: EndEarly{Run: true, Grants: -1}}, "EndEarly.Grants"},
		{"too many grants", Config{Script: script, EndEarly: EndEarly{Run: true, Grants: MaxEndGrants + 1}}, "EndEarly.Grants"},
		{"fine", Config{Script: script, EndEarly: EndEarly{Run: true, Grants: 3, Recovery: true}}, ""},
		{"recovery alone, random faults", Config{EndEarly: EndEarly{Recovery: true}}, ""},
	} {
		err := tc.c.checkEndEarly()
		var fe *FieldError
		switch {
		case tc.field == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.field != "" && (!errors.As(err, &fe) || fe.Field != tc.field):
			t.Errorf("%s: got %v, want an error on %s", tc.name, err, tc.field)
		}
	}
}
