package reports

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/lockharness/lockharness/history"
)

// Fault is a window of time during which one nemesis fault was (or may have
// been) in force: from the invocation of the event that started it to the
// completion of the event that stopped it. A fault with no stop event lasts
// until the final heal, or to the end of the history when there is none.
type Fault struct {
	Family  string   // "partition", "clock", "pause", "kill", "promote", …
	F       string   // the nemesis function that started it ("start-partition")
	Targets []string // nodes, links or clients
	Detail  string
	Label   string // short text for plots: "clock +60 s on n3"
	Start   int64
	End     int64
	// Stopped is true when an explicit stop event ended the window (false:
	// it lasted until the final heal or the end of the history).
	Stopped bool
	// Unsure is true when the start completed with info: it may not have
	// happened.
	Unsure bool
	// Offset is the clock offset a clock fault set, when its detail names
	// one ("+60s"); HasOffset says whether it did.
	Offset    time.Duration
	HasOffset bool
}

// nemesisAction is one nemesis invocation with its completion.
type nemesisAction struct {
	F       string
	Targets []string
	Detail  string
	Invoke  int64
	End     int64        // completion time (invoke time if none)
	Type    history.Type // ok, fail, info, or invoke when never completed
}

// nemesisActions pairs each nemesis completion with the oldest pending
// invocation of the same function. Nemeses may run concurrently, so pairing
// by function is safer than by order.
func nemesisActions(ops []history.Op) []nemesisAction {
	var acts []nemesisAction
	pending := map[string][]int{}
	for _, op := range ops {
		if !op.Process.IsNemesis() {
			continue
		}
		var targets []string
		var detail string
		if op.Value != nil {
			targets, detail = op.Value.Targets, op.Value.Detail
		}
		if op.Type == history.Invoke {
			pending[op.F] = append(pending[op.F], len(acts))
			acts = append(acts, nemesisAction{F: op.F, Targets: targets, Detail: detail, Invoke: op.Time, End: op.Time, Type: history.Invoke})
			continue
		}
		q := pending[op.F]
		if len(q) == 0 {
			// A completion with no invocation: treat it as instantaneous.
			acts = append(acts, nemesisAction{F: op.F, Targets: targets, Detail: detail, Invoke: op.Time, End: op.Time, Type: op.Type})
			continue
		}
		a := &acts[q[0]]
		pending[op.F] = q[1:]
		a.End, a.Type = op.Time, op.Type
		// The completion may say what was chosen (random targets).
		if len(targets) > 0 {
			a.Targets = targets
		}
		if detail != "" {
			a.Detail = detail
		}
	}
	// Order by when each took effect, so stops come after their starts.
	slices.SortStableFunc(acts, func(a, b nemesisAction) int { return cmpInt(a.End, b.End) })
	return acts
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// family maps a nemesis function to the fault it belongs to and whether it
// starts or stops that fault. Unknown functions are faults of their own
// name that start and never stop (until the final heal).
func family(f string) (fam string, stop bool) {
	switch f {
	case "kill", "crash-node":
		return "kill", false
	case "restart", "start-node":
		return "kill", true
	case "pause", "pause-node":
		return "pause", false
	case "resume", "resume-node":
		return "pause", true
	}
	for _, p := range []string{"start-", "bump-", "strobe-", "drift-"} {
		if rest, ok := strings.CutPrefix(f, p); ok {
			return rest, false
		}
	}
	for _, p := range []string{"stop-", "reset-", "heal-"} {
		if rest, ok := strings.CutPrefix(f, p); ok {
			return rest, true
		}
	}
	return f, false
}

// Faults derives the fault windows of a history from its nemesis events.
// end is where unstopped faults end when there is no final heal.
func Faults(ops []history.Op) []Fault {
	end := runEnd(ops)
	var out []Fault
	var open []int // indexes into out
	closeWhere := func(at int64, match func(f *Fault) bool) {
		keep := open[:0]
		for _, i := range open {
			if match(&out[i]) {
				out[i].End = max(at, out[i].Start)
				out[i].Stopped = true
				continue
			}
			keep = append(keep, i)
		}
		open = keep
	}
	for _, a := range nemesisActions(ops) {
		if a.F == history.FFinalHeal {
			if a.Type == history.Fail {
				continue
			}
			for _, i := range open {
				out[i].End = max(a.End, out[i].Start)
			}
			open = open[:0]
			continue
		}
		if a.Type == history.Fail {
			continue // it certainly did not happen
		}
		fam, stop := family(a.F)
		if stop {
			closeWhere(a.End, func(f *Fault) bool {
				return f.Family == fam && (len(a.Targets) == 0 || intersects(f.Targets, a.Targets))
			})
			continue
		}
		// A new fault of a family on the same targets replaces the old one
		// (a second clock bump sets a new offset).
		closeWhere(a.Invoke, func(f *Fault) bool {
			return f.Family == fam && slices.Equal(f.Targets, a.Targets)
		})
		f := Fault{Family: fam, F: a.F, Targets: a.Targets, Detail: a.Detail, Start: a.Invoke, End: end, Unsure: a.Type != history.OK}
		f.Offset, f.HasOffset = parseOffset(a.Detail)
		f.Label = faultLabel(f)
		open = append(open, len(out))
		out = append(out, f)
	}
	slices.SortStableFunc(out, func(a, b Fault) int { return cmpInt(a.Start, b.Start) })
	return out
}

func intersects(a, b []string) bool {
	for _, x := range a {
		if slices.Contains(b, x) {
			return true
		}
	}
	return false
}

var offsetRE = regexp.MustCompile(`[+-]?\d+(\.\d+)?(ns|us|µs|ms|s|m|h)(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))*`)

// parseOffset finds a signed duration ("+60s", "-1m30s") in a nemesis
// detail.
func parseOffset(detail string) (time.Duration, bool) {
	m := offsetRE.FindString(detail)
	if m == "" {
		return 0, false
	}
	d, err := time.ParseDuration(m)
	if err != nil {
		return 0, false
	}
	return d, true
}

// fmtOffset writes a clock offset as "+60 s".
func fmtOffset(d time.Duration) string {
	sign := "+"
	if d < 0 {
		sign, d = "-", -d
	}
	s := d.Seconds()
	if s == float64(int64(s)) {
		return fmt.Sprintf("%s%d s", sign, int64(s))
	}
	if d < time.Second {
		return fmt.Sprintf("%s%d ms", sign, d.Milliseconds())
	}
	return fmt.Sprintf("%s%.1f s", sign, s)
}

// targetList joins targets, eliding after a few so labels stay short.
func targetList(ts []string, n int) string {
	if len(ts) <= n {
		return strings.Join(ts, ", ")
	}
	return strings.Join(ts[:n], ", ") + fmt.Sprintf(" +%d", len(ts)-n)
}

func faultLabel(f Fault) string {
	var b strings.Builder
	switch {
	case f.Family == "clock" && f.HasOffset:
		b.WriteString("clock " + fmtOffset(f.Offset))
		if len(f.Targets) > 0 {
			b.WriteString(" on " + targetList(f.Targets, 3))
		}
	default:
		b.WriteString(f.Family)
		if f.Detail != "" && f.Detail != f.Family {
			b.WriteString(" (" + f.Detail + ")")
		}
		if len(f.Targets) > 0 {
			b.WriteString(" " + targetList(f.Targets, 3))
		}
	}
	if f.Unsure {
		b.WriteString(" ?")
	}
	return b.String()
}

// finalHeal returns when the final heal completed, if it did.
func finalHeal(ops []history.Op) (int64, bool) {
	for _, op := range ops {
		if op.Process.IsNemesis() && op.F == history.FFinalHeal && op.Type == history.OK {
			return op.Time, true
		}
	}
	return 0, false
}

var nodeRE = regexp.MustCompile(`^n(\d+)$`)
var clientRE = regexp.MustCompile(`^c(\d+)$`)

// targetWords names a target in a sentence: n3 is "node 3", c2 "client 2".
func targetWords(t string) string {
	if m := nodeRE.FindStringSubmatch(t); m != nil {
		return "node " + m[1]
	}
	if m := clientRE.FindStringSubmatch(t); m != nil {
		return "client " + m[1]
	}
	return t
}

func targetsWords(ts []string) string {
	ws := make([]string, len(ts))
	for i, t := range ts {
		ws[i] = targetWords(t)
	}
	switch len(ws) {
	case 0:
		return ""
	case 1:
		return ws[0]
	}
	if len(ws) > 4 {
		ws = append(ws[:4], fmt.Sprintf("%d more", len(ts)-4))
	}
	return strings.Join(ws[:len(ws)-1], ", ") + " and " + ws[len(ws)-1]
}

// Sentence tells what the fault was, in the past tense, relative to an
// instant at which something went wrong.
func (f Fault) Sentence(at int64) string {
	active := f.Start <= at && at <= f.End
	who := targetsWords(f.Targets)
	var s string
	switch f.Family {
	case "clock":
		what := f.Detail
		if f.HasOffset {
			what = "jumped " + fmtOffset(f.Offset)
		}
		if who == "" {
			who = "a node"
		}
		s = fmt.Sprintf("%s's clock had %s at %s", who, what, fmtTime(f.Start))
	case "partition":
		s = "a network partition"
		if who != "" {
			s += " (" + targetList(f.Targets, 4) + ")"
		}
		s += " had begun at " + fmtTime(f.Start)
	case "kill":
		s = fmt.Sprintf("%s had been killed at %s", orSome(who, "a node"), fmtTime(f.Start))
	case "pause":
		s = fmt.Sprintf("%s had been paused at %s", orSome(who, "a node"), fmtTime(f.Start))
	case "promote", "failover":
		s = fmt.Sprintf("%s had been promoted at %s", orSome(who, "a replica"), fmtTime(f.Start))
	default:
		s = fmt.Sprintf("%s began at %s", f.Label, fmtTime(f.Start))
	}
	if !active && f.End < at {
		s += fmt.Sprintf(" (over at %s)", fmtTime(f.End))
	}
	if f.Unsure {
		s += " (maybe: its outcome is unknown)"
	}
	return s
}

func orSome(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// contextLookback is how long before a violation a fault that has already
// ended still counts as context: the damage of a kill or a partition shows
// after it is over.
const contextLookback = 5 * int64(time.Second)

// faultsAround returns the faults in force during [start, end] or that ended
// shortly before it.
func faultsAround(faults []Fault, start, end int64) []Fault {
	var out []Fault
	for _, f := range faults {
		if f.Start <= end && f.End >= start-contextLookback {
			out = append(out, f)
		}
	}
	return out
}
