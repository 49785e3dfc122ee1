package reports

import (
	"fmt"
	"slices"

	"github.com/lockharness/lockharness/history"
)

// call is one client operation: its invocation and, if the history has it,
// its completion. Plots are drawn from calls, not from raw events. The
// events are the history's own, not copies: a report of a million
// operations would otherwise hold the history twice more.
type call struct {
	Invoke   *history.Op
	Complete *history.Op // noCompletion when not Done
	Done     bool        // false when the history ends (or the client crashed) before a completion
}

// noCompletion is the completion of a call that has none: a zero event,
// never written to.
var noCompletion = &history.Op{}

// Latency is the time from invocation to completion, 0 when not done.
func (c call) Latency() int64 {
	if !c.Done {
		return 0
	}
	return c.Complete.Time - c.Invoke.Time
}

// clientCalls pairs every client invocation with the completion that follows
// it from the same process (a client has at most one operation in flight).
// The result is ordered by invocation.
func clientCalls(ops []history.Op) []call {
	n := 0
	for i := range ops {
		if ops[i].Type == history.Invoke && !ops[i].Process.IsNemesis() {
			n++
		}
	}
	calls := make([]call, 0, n)
	open := map[history.Process]int{} // process → index in calls
	for j := range ops {
		op := &ops[j]
		if op.Process.IsNemesis() {
			continue
		}
		if op.Type == history.Invoke {
			open[op.Process] = len(calls)
			calls = append(calls, call{Invoke: op, Complete: noCompletion})
			continue
		}
		i, ok := open[op.Process]
		if !ok {
			continue // a completion without invocation: nothing to draw
		}
		delete(open, op.Process)
		calls[i].Complete = op
		calls[i].Done = true
	}
	return calls
}

// clientProcesses lists every client process that appears in the history
// or in the holds, in numeric order. A lock's renewer threads (events with
// an Owner) are not clients: their renewals count for their owner's holds.
func clientProcesses(ops []history.Op, extra ...int) []int {
	seen := map[int]bool{}
	for _, op := range ops {
		if !op.Process.IsNemesis() && op.Owner == nil {
			seen[int(op.Process)] = true
		}
	}
	for _, p := range extra {
		if p >= 0 {
			seen[p] = true
		}
	}
	ps := make([]int, 0, len(seen))
	for p := range seen {
		ps = append(ps, p)
	}
	slices.Sort(ps)
	return ps
}

// runEnd is the time of the last event, the right edge of every plot.
func runEnd(ops []history.Op) int64 {
	var end int64
	for _, op := range ops {
		end = max(end, op.Time)
	}
	return end
}

// seconds converts run-clock nanoseconds to seconds.
func seconds(ns int64) float64 { return float64(ns) / 1e9 }

// fmtTime writes a run-clock instant the way people read it: "3.41 s".
func fmtTime(ns int64) string {
	s := seconds(ns)
	switch {
	case s < 10:
		return fmt.Sprintf("%.2f s", s)
	case s < 1000:
		return fmt.Sprintf("%.1f s", s)
	default:
		return fmt.Sprintf("%.0f s", s)
	}
}

// fmtDur writes a duration in the unit that keeps it short.
func fmtDur(ns int64) string {
	switch {
	case ns < 0:
		return "-" + fmtDur(-ns)
	case ns < 1e6:
		return fmt.Sprintf("%.0f µs", float64(ns)/1e3)
	case ns < 1e9:
		return fmt.Sprintf("%.0f ms", float64(ns)/1e6)
	default:
		return fmtTime(ns)
	}
}

// clientName is how a client process is called in words and on axes.
func clientName(p int) string { return fmt.Sprintf("client %d", p) }
