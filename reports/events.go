package reports

import (
	"fmt"
	"maps"
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

// clientProcesses lists every client process that appears in the history
// (seen) or in the holds (extra), in numeric order. A lock's renewer
// threads (events with an Owner) are not clients: their renewals count for
// their owner's holds.
func clientProcesses(seen map[int]bool, extra ...int) []int {
	all := maps.Clone(seen)
	for _, p := range extra {
		if p >= 0 {
			all[p] = true
		}
	}
	return slices.Sorted(maps.Keys(all))
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
