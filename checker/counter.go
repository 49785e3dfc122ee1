package checker

import (
	"fmt"

	"github.com/anishathalye/porcupine"

	"github.com/lockharness/lockharness/history"
)

// WriteOutcome is how a critical section's write ended.
type WriteOutcome uint8

// Write outcomes. Only an accepted write changed the counter for sure; an
// unknown one may have.
const (
	WriteNone     WriteOutcome = iota // the section only read
	WriteAccepted                     // write ok, storage applied it
	WriteRejected                     // write ok but storage refused the stale fencing token
	WriteFailed                       // write fail: certainly not applied
	WriteUnknown                      // write info or never completed
)

func (w WriteOutcome) String() string {
	return [...]string{"none", "accepted", "rejected", "failed", "unknown"}[w]
}

// Section is one critical section on the protected resource, the input of
// the counter model: read the counter (Read, if HasRead), then maybe write
// Wrote.
type Section struct {
	Process int
	HasRead bool
	Read    int64
	Write   WriteOutcome
	Wrote   int64
	// Final marks the verification read after the run.
	Final bool
	// History indexes of the read invocation and the write completion (or
	// invocation), -1 when absent; times of the section.
	ReadIndex, WriteIndex int64
	Start, End            int64
	// The section's interval in history indexes, porcupine's clock: from
	// its first invocation to its last completion (MaxInt64 when a write's
	// outcome is unknown: it may still land).
	Call, Return int64
}

// CounterState is the set of values the counter may hold: {A} when N is 1,
// {A, B} when N is 2 (after a write of unknown outcome), any value when N
// is 0 (the start of a window cut out of a longer history).
type CounterState struct {
	A, B int64
	N    int8
}

func (s CounterState) has(v int64) bool {
	return s.N == 0 || s.A == v || (s.N == 2 && s.B == v)
}

func counterSet(a, b int64) CounterState {
	switch {
	case a == b:
		return CounterState{A: a, N: 1}
	case a < b:
		return CounterState{A: a, B: b, N: 2}
	}
	return CounterState{A: b, B: a, N: 2}
}

// CounterStep is the counter transition: a section that read v is legal
// only if the counter may hold v; an accepted write sets it to the value
// written, an unknown write leaves it at v or the value written, anything
// else leaves it at v.
func CounterStep(s CounterState, in Section) (bool, CounterState) {
	if in.HasRead && !s.has(in.Read) {
		return false, s
	}
	switch {
	case in.Write == WriteAccepted:
		return true, CounterState{A: in.Wrote, N: 1}
	case in.Write == WriteUnknown && in.HasRead:
		return true, counterSet(in.Read, in.Wrote)
	case in.Write == WriteUnknown:
		return true, CounterState{} // a blind write of unknown outcome: anything
	case in.HasRead:
		return true, CounterState{A: in.Read, N: 1}
	}
	return true, s
}

// CounterModel is the porcupine model of one key's protected counter
// (inputs are Section, outputs are ignored; pass nil). The counter starts
// at 0 on a fresh storage node.
func CounterModel() porcupine.Model {
	return counterModel(CounterState{A: 0, N: 1})
}

func counterModel(init CounterState) porcupine.Model {
	return porcupine.Model{
		Init: func() any { return init },
		Step: func(state, input, _ any) (bool, any) {
			return CounterStep(state.(CounterState), input.(Section))
		},
		Hash: func(state any) uint64 {
			s := state.(CounterState)
			return uint64(s.A)*0x9e3779b97f4a7c15 ^ uint64(s.B)<<7 ^ uint64(s.N)
		},
		DescribeOperation: func(input, _ any) string { return describeSection(input.(Section)) },
		DescribeState: func(state any) string {
			s := state.(CounterState)
			switch s.N {
			case 0:
				return "any"
			case 1:
				return fmt.Sprint(s.A)
			}
			return fmt.Sprintf("%d or %d", s.A, s.B)
		},
	}
}

func describeSection(in Section) string {
	s := fmt.Sprintf("p%d", in.Process)
	if in.Final {
		s += " final"
	}
	if in.HasRead {
		s += fmt.Sprintf(" read %d", in.Read)
	}
	if in.Write != WriteNone {
		s += fmt.Sprintf(", write %d %s", in.Wrote, in.Write)
	}
	return s
}

// sections is every key's critical sections, in the order they began. A
// section is a read ok followed by the same process's write on that key;
// a read with no write before the process's next read or release of that
// key is read-only (a section lies within its claim: the workload writes
// before it releases, or not at all); a write with no read before it is
// blind. Reads that failed or are unknown
// saw nothing and are left out.
func sections(p *prepared) map[string][]Section {
	acquired := map[int]bool{}
	for i := range p.calls {
		if p.calls[i].f == history.FAcquire {
			acquired[p.calls[i].proc] = true
		}
	}
	return sectionsFinal(p, acquired, true)
}

// sectionsFinal is sections for one window of a history: acquired holds
// every process known to have acquired (in this window or before), and
// final says whether the window is the last, the only one whose latest
// read may be the final one.
func sectionsFinal(p *prepared, acquired map[int]bool, final bool) map[string][]Section {
	open := map[procKey]int{} // → position in out[key]
	out := map[string][]Section{}
	lastRead := map[string]int{} // key → position of its latest read ok section
	for i := range p.calls {
		c := &p.calls[i]
		k := procKey{c.proc, c.key}
		switch c.f {
		case history.FRead:
			if c.typ != history.OK || c.out == nil || c.out.Counter == nil {
				continue
			}
			delete(open, k)
			s := Section{Process: c.proc, HasRead: true, Read: *c.out.Counter, ReadIndex: c.inv, WriteIndex: -1,
				Start: c.start, End: c.end, Call: c.inv, Return: c.done}
			open[k] = len(out[c.key])
			lastRead[c.key] = len(out[c.key])
			out[c.key] = append(out[c.key], s)
		case history.FRelease:
			// The claim ends: a read not yet followed by its write
			// never will be (a later write of the process is blind).
			delete(open, k)
		case history.FWrite:
			var s *Section
			if j, ok := open[k]; ok {
				s = &out[c.key][j]
				delete(open, k)
			} else {
				out[c.key] = append(out[c.key], Section{Process: c.proc, ReadIndex: -1, Start: c.start, Call: c.inv})
				s = &out[c.key][len(out[c.key])-1]
			}
			s.addWrite(c)
		}
	}
	if final {
		// The final read: the key's last read, by a process that never
		// acquired anything (the runner's verification read after
		// teardown).
		for key, j := range lastRead {
			s := &out[key][j]
			if !acquired[s.Process] && s.Write == WriteNone {
				s.Final = true
			}
		}
	}
	return out
}

// addWrite ends section s with write c: its outcome, the value it wrote
// (as its invocation says, else its completion, else one more than the
// section read) and when it ended: never, for a write of unknown outcome,
// which may still land.
func (s *Section) addWrite(c *call) {
	s.WriteIndex = c.done
	if !c.completed() {
		s.WriteIndex = c.inv
	}
	switch {
	case c.typ == history.OK && c.out != nil && c.out.Rejected:
		s.Write = WriteRejected
	case c.typ == history.OK:
		s.Write = WriteAccepted
	case c.typ == history.Fail:
		s.Write = WriteFailed
	default:
		s.Write = WriteUnknown
	}
	s.Wrote = s.Read + 1
	if c.in != nil && c.in.Counter != nil {
		s.Wrote = *c.in.Counter
	} else if c.out != nil && c.out.Counter != nil {
		s.Wrote = *c.out.Counter
	}
	s.End, s.Return = c.end, c.done
	if s.Write == WriteUnknown {
		s.End, s.Return = never, never
	}
}

// counterOps is key's counter history for porcupine.
func counterOps(secs []Section) []porcupine.Operation {
	out := make([]porcupine.Operation, len(secs))
	for i, s := range secs {
		out[i] = porcupine.Operation{ClientId: s.Process, Input: s, Call: s.Call, Return: s.Return}
	}
	return out
}
