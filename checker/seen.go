package checker

import (
	"slices"

	"github.com/lockharness/lockharness/history"
)

// Seen is what a check kept of the history besides its verdict, for
// whoever shows the verdict (the report, the explanation of a violation),
// so that nobody reads the history again to find it or checks it again to
// draw it. It is not part of results.json.
type Seen struct {
	// Complete is true when the check went through the whole history:
	// then the rest says what the history holds. A check that was
	// cancelled while it read, or that could not read on, has seen a
	// prefix only.
	Complete bool
	// Events is how many events the history has, End the time of the
	// latest (run-clock nanoseconds).
	Events int
	End    int64
	// Truncated is true when the last line was cut off (a killed run)
	// and dropped: every earlier line was complete.
	Truncated bool
	// Clients is true when some event is a client's: a history of faults
	// alone has nothing to check.
	Clients bool
	// Nemesis is every nemesis event, in order.
	Nemesis []history.Op
	// ClientFaults are the invocations of the client pauses and crashes,
	// in order.
	ClientFaults []history.Op

	named map[int64]namedEvent // the events violations name (see Event)
	views map[string]*View     // per key porcupine refuted (see Config.Views)
}

// namedEvent is an event a violation names, with when the call it
// completes was invoked (its own time for an invocation, or for a
// completion without one).
type namedEvent struct {
	op      history.Op
	invoked int64
}

// Event is the event of history index i if a violation of the result
// names it, and when the call it completes was invoked: its process's
// latest invocation of the same function before it (the event's own time
// for an invocation, or for a completion without one).
// False when the check did not keep it: no violation names it, or the
// violation was found in a window of a long history after the window that
// held the event (a stale write long after its claim began, a key that
// stayed unavailable through a recovery the windows cut).
func (s *Seen) Event(i int64) (op history.Op, invoked int64, ok bool) {
	e, ok := s.named[i]
	return e.op, e.invoked, ok
}

// Add takes the next event of the history into s, as the check does with
// every event it reads: whoever has a Seen of a check that was cut short
// completes it so (Complete is theirs to set).
func (s *Seen) Add(op *history.Op) {
	s.Events++
	s.End = max(s.End, op.Time)
	if op.Process.IsNemesis() {
		s.Nemesis = append(s.Nemesis, keepOp(op))
		return
	}
	s.Clients = true
	if op.Type == history.Invoke && (op.F == history.FPause || op.F == history.FCrash) {
		s.ClientFaults = append(s.ClientFaults, keepOp(op))
	}
}

// keepOp copies an event to be kept beyond a pass over the history: its
// value too, so that it does not keep the decoder's slab of values alive.
func keepOp(op *history.Op) history.Op {
	o := *op
	if o.Value != nil {
		v := *o.Value
		o.Value = &v
	}
	return o
}

// name keeps the events of ops (a window of the history, in index order)
// that the violations vs name, with the time the call each one completes
// was invoked: the window of a completion holds its invocation.
func (s *Seen) name(ops []history.Op, vs ...[]Violation) {
	want := map[int64]bool{}
	for _, v := range slices.Concat(vs...) {
		for _, e := range v.Events {
			if _, done := s.named[e]; !done {
				want[e] = true
			}
		}
	}
	if len(want) == 0 {
		return
	}
	if s.named == nil {
		s.named = map[int64]namedEvent{}
	}
	type pf struct {
		p history.Process
		f string
	}
	last := map[pf]int64{} // latest invocation of each process and function
	for i := range ops {
		op := &ops[i]
		k := pf{op.Process, op.F}
		if want[op.Index] {
			t, ok := last[k]
			if !ok || op.Type == history.Invoke {
				t = op.Time
			}
			s.named[op.Index] = namedEvent{op: keepOp(op), invoked: t}
		}
		if op.Type == history.Invoke {
			last[k] = op.Time
		}
	}
}

// prune lets go of the events no violation of vs names (a window's
// findings that a later one's replaced), and of the views of keys not in
// keys.
func (s *Seen) prune(vs []Violation, keys []string) {
	if s.named != nil {
		keep := map[int64]bool{}
		for _, v := range vs {
			for _, e := range v.Events {
				keep[e] = true
			}
		}
		for i := range s.named {
			if !keep[i] {
				delete(s.named, i)
			}
		}
	}
	for k := range s.views {
		if !slices.Contains(keys, k) {
			delete(s.views, k)
		}
	}
}
