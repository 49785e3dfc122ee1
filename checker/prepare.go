package checker

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/lockharness/lockharness/history"
)

// never is the end of a lease without expiry, and the return time of an
// operation whose effect may still happen (porcupine's "info" convention).
const never = math.MaxInt64

// call is one client operation: its invocation paired with its completion.
type call struct {
	proc  int
	f     string
	key   string
	typ   history.Type // completion type; Info when the history ends first
	start int64        // invoke time
	end   int64        // completion time; never when it never completed
	inv   int64        // history index of the invocation
	done  int64        // history index of the completion, -1 if none
	in    *history.Value
	out   *history.Value
}

// completed reports whether the history records the completion.
func (c *call) completed() bool { return c.done >= 0 }

// nemesisEvent is one fault-injector operation, for annotations.
type nemesisEvent struct {
	f          string
	start, end int64
	typ        history.Type
	in, out    *history.Value
	idx        int64 // history index of the invocation
	endIdx     int64 // of the completion; idx when there is none
}

// prepared is a history digested once for every checker.
type prepared struct {
	calls     []call // client operations, in invocation order
	nemesis   []nemesisEvent
	heal      int64 // time of the last final-heal ok, -1 if none
	first     int64 // time of the first event
	last      int64 // time of the last event
	lastIndex int64 // history index of the last event
	crashedAt map[int]int64
	keys      []string // every key a client operation named, sorted
}

// unusableError says why a history cannot be judged.
type unusableError struct{ msg string }

func (e *unusableError) Error() string { return "unusable history: " + e.msg }

func unusable(format string, args ...any) error {
	return &unusableError{msg: fmt.Sprintf(format, args...)}
}

// prepare pairs invocations with completions and checks the conventions
// every checker relies on: index order is time order, every completion
// follows an invocation of the same f by the same process, and a crashed
// process does nothing afterwards. An invocation without completion (a
// killed run) is an unknown outcome.
func prepare(ops []history.Op) (*prepared, error) {
	if !slices.IsSortedFunc(ops, func(a, b history.Op) int { return cmp.Compare(a.Index, b.Index) }) {
		ops = slices.Clone(ops)
		slices.SortStableFunc(ops, func(a, b history.Op) int { return cmp.Compare(a.Index, b.Index) })
	}
	p := &prepared{heal: -1, crashedAt: map[int]int64{}, calls: make([]call, 0, len(ops)/2+1)}
	if len(ops) > 0 {
		p.first = ops[0].Time
	}
	type pendingKey struct {
		proc int
		f    string
	}
	pending := map[pendingKey]int{} // → position in p.calls
	nemPending := map[string]int{}  // nemesis f → position in p.nemesis
	keys := map[string]struct{}{}
	var prevTime int64 = math.MinInt64
	for i := range ops {
		op := &ops[i]
		if err := op.Validate(); err != nil {
			return nil, unusable("event %d: %v", op.Index, err)
		}
		if i > 0 && op.Index == ops[i-1].Index {
			return nil, unusable("two events have index %d", op.Index)
		}
		if op.Time < prevTime {
			return nil, unusable("time goes backwards at event %d (%d after %d)", op.Index, op.Time, prevTime)
		}
		prevTime = op.Time
		p.last, p.lastIndex = op.Time, op.Index

		if op.Process.IsNemesis() {
			switch op.Type {
			case history.Invoke:
				nemPending[op.F] = len(p.nemesis)
				p.nemesis = append(p.nemesis, nemesisEvent{f: op.F, start: op.Time, end: -1, typ: history.Info, in: op.Value, idx: op.Index, endIdx: op.Index})
			default:
				if j, ok := nemPending[op.F]; ok {
					delete(nemPending, op.F)
					p.nemesis[j].end, p.nemesis[j].typ, p.nemesis[j].out, p.nemesis[j].endIdx = op.Time, op.Type, op.Value, op.Index
				} else {
					// A nemesis may record an event without invocation (a
					// notice); it is only ever shown, so accept it.
					p.nemesis = append(p.nemesis, nemesisEvent{f: op.F, start: op.Time, end: op.Time, typ: op.Type, out: op.Value, idx: op.Index, endIdx: op.Index})
				}
				if op.F == history.FFinalHeal && op.Type == history.OK {
					p.heal = op.Time
				}
			}
			continue
		}

		proc := int(op.Process)
		if t, dead := p.crashedAt[proc]; dead && op.F != history.FCrash {
			return nil, unusable("process %d crashed at %s but recorded %s %s at event %d", proc, secs(t), op.F, op.Type, op.Index)
		}
		if op.F == history.FCrash {
			// A crash may be recorded as invoke+info or as a lone info; it
			// is not paired with anything, and it leaves the process's
			// outstanding operation (if any) unknown forever.
			if op.Type != history.Invoke {
				if _, dead := p.crashedAt[proc]; !dead {
					p.crashedAt[proc] = op.Time
				}
			}
			continue
		}
		pk := pendingKey{proc, op.F}
		if op.Type == history.Invoke {
			if j, ok := pending[pk]; ok {
				return nil, unusable("process %d invoked %s at event %d while its %s of event %d was outstanding", proc, op.F, op.Index, op.F, p.calls[j].inv)
			}
			pending[pk] = len(p.calls)
			p.calls = append(p.calls, call{proc: proc, f: op.F, key: op.Key, typ: history.Info,
				start: op.Time, end: never, inv: op.Index, done: -1, in: op.Value})
			if op.Key != "" {
				keys[op.Key] = struct{}{}
			}
			continue
		}
		j, ok := pending[pk]
		if !ok {
			return nil, unusable("event %d: %s %s by process %d without a preceding invocation by that process", op.Index, op.F, op.Type, proc)
		}
		c := &p.calls[j]
		if c.key != op.Key {
			return nil, unusable("event %d: %s %s on key %q completes an invocation on key %q (event %d)", op.Index, op.F, op.Type, op.Key, c.key, c.inv)
		}
		delete(pending, pk)
		c.typ, c.end, c.done, c.out = op.Type, op.Time, op.Index, op.Value
	}
	for k := range keys {
		p.keys = append(p.keys, k)
	}
	sort.Strings(p.keys)
	return p, nil
}

// counts is Result.Counts: completions by f and type; an invocation that
// never completed counts as info, since that is how it is judged.
func counts(ops []history.Op, p *prepared) map[string]map[string]int {
	out := map[string]map[string]int{}
	add := func(f, t string) {
		m := out[f]
		if m == nil {
			m = map[string]int{}
			out[f] = m
		}
		m[t]++
	}
	for i := range ops {
		if ops[i].Type != history.Invoke {
			add(ops[i].F, string(ops[i].Type))
		}
	}
	if p != nil {
		for i := range p.calls {
			if !p.calls[i].completed() {
				add(p.calls[i].f, string(history.Info))
			}
		}
	}
	return out
}

// secs renders run-clock nanoseconds as seconds for sentences.
func secs(ns int64) string {
	if ns == never {
		return "never"
	}
	return fmt.Sprintf("%.3fs", float64(ns)/1e9)
}

// dur renders a duration in nanoseconds for sentences.
func dur(ns int64) string {
	return fmt.Sprintf("%.3fs", float64(ns)/1e9)
}
