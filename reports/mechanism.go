package reports

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/history"
)

// Explain returns, by index into res.Violations, what the history can say
// about a violation beyond its own description: for now, how an overlap on
// a lock over several nodes (Redlock) came about, from the nodes each grant
// rested on and the faults that struck them. It reads what the check saw
// (res.Seen: the grants, the nemesis events) as the run's record rec says
// to read the faults, not the history. Violations it cannot explain have
// no entry.
func Explain(rec Record, res checker.Result) map[int]string {
	faults := newFaultBook(rec.FaultKinds).faultsUntil(res.Seen.Nemesis, res.Seen.End)
	return explain(&res.Seen, res, faults)
}

// events gives the events violations name, and when the call each
// completes was invoked (checker.Seen.Event).
type events interface {
	Event(i int64) (op history.Op, invoked int64, ok bool)
}

// explain is Explain of the events ev gives and the faults derived.
func explain(ev events, res checker.Result, faults []Fault) map[int]string {
	out := map[int]string{}
	for i, v := range res.Violations {
		if s := quorumMechanism(v, ev, faults); s != "" {
			out[i] = s
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// quorumMechanism explains an overlap between two claims that each rested
// on a majority of independent nodes (the grant events record which nodes
// granted them, history.Value.Nodes). Two majorities share a node, and that
// node granted the second client while the first client's key was still
// meant to be there: the key vanished early. The explanation names the
// shared node(s), the faults on them between the two grants that make a
// key vanish (a clock jumping forward, strobing, resetting from behind,
// running fast; a kill), and whether the first claim stood on a bare
// majority, where one such node is enough. It is empty when the grants do
// not record their nodes.
func quorumMechanism(v checker.Violation, ev events, faults []Fault) string {
	if v.Kind != checker.KindOverlap || len(v.Events) < 2 || len(v.Processes) < 2 {
		return ""
	}
	ga, from, okA := ev.Event(v.Events[0])
	gc, _, okC := ev.Event(v.Events[1])
	if !okA || !okC || ga.Value == nil || gc.Value == nil || len(ga.Value.Nodes) == 0 || len(gc.Value.Nodes) == 0 {
		return ""
	}
	a, c := clientName(v.Processes[0]), clientName(v.Processes[1])
	na, nc := ga.Value.Nodes, gc.Value.Nodes
	var shared, fresh []string
	for _, n := range nc {
		if slices.Contains(na, n) {
			shared = append(shared, n)
		} else {
			fresh = append(fresh, n)
		}
	}
	if len(shared) == 0 {
		return ""
	}
	// The first key was set between the first grant's invocation (from)
	// and its completion; the second grant completed at gc.Time.
	var b strings.Builder
	fmt.Fprintf(&b, "%s's %s rested on %s", capitalise(a), grantWord(ga), nodeList(na))
	switch q := ga.Value.Quorum; {
	case q > 0 && len(na) == q:
		fmt.Fprintf(&b, ", exactly the quorum of %d: a bare majority, which one node losing its key breaks", q)
	case q > 0:
		fmt.Fprintf(&b, ", %d more than the quorum of %d", len(na)-q, q)
	}
	b.WriteString(". ")

	causes := vanished(&b, a, shared, faults, from, gc.Time)
	fmt.Fprintf(&b, "%s then got %s", capitalise(c), nodeList(nc))
	if len(fresh) > 0 {
		fmt.Fprintf(&b, ": %s, where %s's key had gone, and %s, which %s never held", nodeList(shared), a, nodeList(fresh), a)
	}
	b.WriteString(".")
	if len(causes) > 0 && strings.Contains(strings.Join(causes, " "), "clock") {
		b.WriteString(" The validity check times only the client's own steps: it cannot see a node's clock jump.")
	}
	return b.String()
}

// vanished writes how the first grant's key vanished from the nodes
// shared between from and to: the faults there that make a key vanish
// (keyLoss), which it returns, or the clock faults an old history records
// in words only, or none.
func vanished(b *strings.Builder, a string, shared []string, faults []Fault, from, to int64) (causes []string) {
	var unread []string
	for _, n := range shared {
		for _, f := range faults {
			if s := keyLoss(f, n, from, to); s != "" {
				causes = append(causes, s)
			} else if s := unreadClock(f, n, from, to); s != "" {
				unread = append(unread, s)
			}
		}
	}
	switch {
	case len(causes) > 0:
		b.WriteString(capitalise(strings.Join(causes, "; ")))
		fmt.Fprintf(b, ", so %s's key on %s vanished before its lease ended. ", a, nodeList(shared))
	case len(unread) > 0:
		fmt.Fprintf(b, "Its key on %s vanished before its lease ended; the history records %s in words only (it was recorded before nemesis events had fields), so whether that made the key vanish is not read from it. ", nodeList(shared), strings.Join(unread, "; "))
	default:
		fmt.Fprintf(b, "Its key on %s vanished before its lease ended, with no clock fault or kill recorded there. ", nodeList(shared))
	}
	return causes
}

// keyLoss says how fault f made node's keys vanish early between from and
// to, or "" when it did not: a clock that jumped forward, strobed, was reset
// from behind (a jump forward) or ran fast in that interval, or a node that
// was killed (restarted empty unless persisted).
func keyLoss(f Fault, node string, from, to int64) string {
	if !slices.Contains(f.Targets, node) {
		return ""
	}
	during := f.Start <= to && f.End >= from // in force at some point between
	at := func(t int64) bool { return from <= t && t <= to }
	switch f.Family {
	case "clock":
		switch f.F {
		case "strobe-clock":
			if !during {
				return ""
			}
			s := fmt.Sprintf("the clock of %s was strobing (%s) from %s", node, f.Detail, fmtTime(f.Start))
			if jump, ok := strobeJump(f); ok {
				s += fmt.Sprintf(": each flip forward is a jump of %s that expires at once every key set before it", fmtOffset(jump))
			}
			return s
		case "drift-clock":
			if f.Rate > 1 && during {
				return fmt.Sprintf("the clock of %s was running fast (%s) from %s, expiring keys early", node, f.Detail, fmtTime(f.Start))
			}
			return ""
		}
		var parts []string
		if f.HasDelta && f.Delta > 0 && at(f.Start) {
			parts = append(parts, fmt.Sprintf("the clock of %s jumped %s at %s", node, fmtOffset(f.Delta), fmtTime(f.Start)))
		}
		if f.Stopped && f.HasOffset && f.Offset < 0 && at(f.End) {
			parts = append(parts, fmt.Sprintf("the clock of %s, set back %s at %s, was reset at %s: a jump forward of %s", node, strings.TrimPrefix(fmtOffset(f.Offset), "-"), fmtTime(f.Start), fmtTime(f.End), fmtOffset(-f.Offset)))
		}
		return strings.Join(parts, "; ")
	case "kill":
		if at(f.Start) || (f.Stopped && at(f.End)) {
			s := fmt.Sprintf("node %s was killed at %s", node, fmtTime(f.Start))
			if f.Stopped {
				s += fmt.Sprintf(" and restarted at %s", fmtTime(f.End))
			}
			return s
		}
	}
	return ""
}

// unreadClock describes a clock fault on node in force between from and to
// whose effect the history does not record in fields (an old history: its
// detail is words only), or "" for any other fault.
func unreadClock(f Fault, node string, from, to int64) string {
	if f.Family != "clock" || f.HasDelta || f.HasOffset || f.Rate != 0 || f.Strobe != nil ||
		!slices.Contains(f.Targets, node) || f.Start > to || f.End < from {
		return ""
	}
	s := fmt.Sprintf("a clock change on %s at %s", node, fmtTime(f.Start))
	if f.Detail != "" {
		s += " (" + f.Detail + ")"
	}
	return s
}

// strobeJump is the size of a strobe's flip, from the two offsets the
// event recorded (none in a history recorded before they were).
func strobeJump(f Fault) (time.Duration, bool) {
	if len(f.Strobe) != 2 || f.Strobe[0] == f.Strobe[1] {
		return 0, false
	}
	return (f.Strobe[0] - f.Strobe[1]).Abs(), true
}

func grantWord(op history.Op) string {
	if op.F == history.FRenew {
		return "renewed lease"
	}
	return "grant"
}

// nodeList writes node names as "n1, n2 and n4".
func nodeList(ns []string) string {
	if len(ns) == 0 {
		return "no node"
	}
	return andList(ns)
}
