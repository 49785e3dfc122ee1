package reports

import (
	"cmp"
	"fmt"
	"image/color"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockharness/lockharness/checker"
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
	// Stopped is true when an explicit stop event ended the window, Healed
	// when the final heal did; neither when it lasted to the end of the
	// history.
	Stopped, Healed bool
	// Unsure is true when the start completed with info: it may not have
	// happened.
	Unsure bool
	// Offset is where a clock fault left the node's clock, relative to
	// real time, as the nemesis confirmed it; Delta is the jump itself.
	// HasOffset and HasDelta say whether the event recorded them (a
	// history recorded before nemesis events had fields records neither).
	Offset, Delta       time.Duration
	HasOffset, HasDelta bool
	// Rate is a drifting clock's rate (0: not recorded); Strobe the two
	// offsets a strobing clock flips between (nil: not recorded).
	Rate   float64
	Strobe []time.Duration
	// Asked is the length the nemesis asked for, for a fault that has one
	// of its own (a client pause, a renewer stall), 0 otherwise: its
	// window in the history is not its length.
	Asked time.Duration
	// Kind is what the run's record says of its family: what a sentence
	// calls it, its colour, whether it happens at an instant.
	Kind history.FaultKind
}

// nemesisAction is one nemesis invocation with its completion.
type nemesisAction struct {
	F       string
	Targets []string
	Detail  string
	Invoke  int64
	End     int64        // completion time (invoke time if none)
	Type    history.Type // ok, fail, info, or invoke when never completed
	// What the event means, from its structured fields (history.Value):
	// the fault it starts, those it ends, whether it is only a mark, and
	// the clocks it set. Structured is false for an event recorded before
	// those fields existed, whose meaning comes from its f.
	Fault      string
	Ends       []string
	Mark       bool
	Clocks     []history.NodeClock
	Structured bool
	Dur        int64 // the length asked for (history.Value.Duration), 0 if none
}

// absorb takes what an event's value says into the action: the completion
// may say what was chosen (random targets) and what the fault did.
func (a *nemesisAction) absorb(v *history.Value) {
	if v == nil {
		return
	}
	if len(v.Targets) > 0 {
		a.Targets = v.Targets
	}
	if v.Detail != "" {
		a.Detail = v.Detail
	}
	if v.Duration > 0 {
		a.Dur = v.Duration
	}
	if v.Fault != "" || len(v.Ends) > 0 || v.Mark || len(v.Clocks) > 0 {
		a.Structured = true
		a.Fault, a.Ends, a.Mark = v.Fault, v.Ends, v.Mark
	}
	if len(v.Clocks) > 0 {
		a.Clocks = v.Clocks
	}
}

// meaning is the fault the action starts and those it ends: from its
// fields, or for an old history from its f as the book reads it.
func (a nemesisAction) meaning(b *faultBook) (start string, stops []string, marker bool) {
	if a.Structured {
		return a.Fault, a.Ends, a.Mark
	}
	if b.marks[a.F] {
		return "", nil, true
	}
	start, stops = b.family(a.F)
	return start, stops, false
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
		if op.Type == history.Invoke {
			pending[op.F] = append(pending[op.F], len(acts))
			a := nemesisAction{F: op.F, Invoke: op.Time, End: op.Time, Type: history.Invoke}
			a.absorb(op.Value)
			acts = append(acts, a)
			continue
		}
		q := pending[op.F]
		if len(q) == 0 {
			// A completion with no invocation: treat it as instantaneous.
			a := nemesisAction{F: op.F, Invoke: op.Time, End: op.Time, Type: op.Type}
			a.absorb(op.Value)
			acts = append(acts, a)
			continue
		}
		a := &acts[q[0]]
		pending[op.F] = q[1:]
		a.End, a.Type = op.Time, op.Type
		a.absorb(op.Value)
	}
	// Order by when each took effect, so stops come after their starts.
	slices.SortStableFunc(acts, func(a, b nemesisAction) int { return cmp.Compare(a.End, b.End) })
	return acts
}

// faultBook is how a run's faults are read and drawn, from the fault
// kinds of its record: each kind by name, and for histories recorded
// before nemesis events carried their meaning (history.Value.Fault and
// Ends; newer events say it themselves) the nemesis functions that start
// a fault of a kind, end one, or only mark a moment.
type faultBook struct {
	kinds  map[string]history.FaultKind
	starts map[string]string   // f → the kind it starts
	stops  map[string][]string // f → the kinds it ends, in the record's order
	marks  map[string]bool
}

func newFaultBook(kinds []history.FaultKind) *faultBook {
	b := &faultBook{kinds: map[string]history.FaultKind{}, starts: map[string]string{}, stops: map[string][]string{}, marks: map[string]bool{}}
	for _, k := range kinds {
		b.kinds[k.Name] = k
		for _, f := range k.StartedBy {
			b.starts[f] = k.Name
		}
		for _, f := range k.EndedBy {
			b.stops[f] = append(b.stops[f], k.Name)
		}
		for _, f := range k.Marks {
			b.marks[f] = true
		}
	}
	return b
}

// kind is what the record says of the kind name; only its name when it
// says nothing.
func (b *faultBook) kind(name string) history.FaultKind {
	if k, ok := b.kinds[name]; ok {
		return k
	}
	return history.FaultKind{Name: name}
}

// family maps a nemesis function of an old history to the fault it
// starts, or the faults it stops. Functions of the same family replace
// each other on the same targets (a second clock bump sets a new offset).
// A stop ends the open faults of its families whose targets it names;
// when it names none of them (or no target at all), it ends them all:
// demoting the old master ends the split brain that promoting a replica
// began, whichever node each names. Functions the book does not know
// follow the start-X/stop-X convention, and otherwise start a fault of
// their own name.
func (b *faultBook) family(f string) (start string, stops []string) {
	start = b.starts[f]
	if fams, ok := b.stops[f]; ok {
		return start, fams
	}
	if start != "" {
		return start, nil
	}
	for _, p := range []string{"start-", "bump-", "strobe-", "drift-"} {
		if rest, ok := strings.CutPrefix(f, p); ok {
			return rest, nil
		}
	}
	for _, p := range []string{"stop-", "reset-", "heal-"} {
		if rest, ok := strings.CutPrefix(f, p); ok {
			return "", []string{rest}
		}
	}
	return f, nil
}

// defaultFaultColour is the shade of a fault whose kind has no colour of
// its own.
var defaultFaultColour = color.NRGBA{R: 188, G: 189, B: 34}

// colour is the translucent shade of a fault family (color.NRGBA:
// color.RGBA would be read as premultiplied and come out wrong).
func (b *faultBook) colour(family string, alpha uint8) color.NRGBA {
	c := defaultFaultColour
	if s := b.kind(family).Colour; len(s) == 7 && s[0] == '#' {
		if v, err := strconv.ParseUint(s[1:], 16, 32); err == nil {
			c = color.NRGBA{R: uint8(v >> 16), G: uint8(v >> 8), B: uint8(v)}
		}
	}
	c.A = alpha
	return c
}

// Faults derives the fault windows of a history from its nemesis events,
// as the run's record rec says to read them. Faults with no stop event end
// at the final heal, or at the end of the history when there is none. A
// clock fault on several nodes becomes one fault per node, each with its
// own offset.
func Faults(rec Record, ops []history.Op) []Fault {
	return newFaultBook(rec.FaultKinds).faultsUntil(ops, runEnd(ops))
}

// faultsUntil is Faults of a history that ends at end (ops may hold only
// its nemesis events).
func (b *faultBook) faultsUntil(ops []history.Op, end int64) []Fault {
	var out []Fault
	var open []int // indexes into out
	for _, a := range nemesisActions(ops) {
		if a.F == history.FFinalHeal {
			if a.Type == history.Fail {
				continue
			}
			for _, i := range open {
				out[i].End, out[i].Healed = max(a.End, out[i].Start), true
			}
			open = open[:0]
			continue
		}
		start, stops, marker := a.meaning(b)
		if a.Type == history.Fail || marker {
			continue // it certainly did not happen, or it is no fault
		}
		if len(stops) > 0 {
			open = closeFaults(out, open, stops, a.Targets, a.End)
		}
		if start == "" {
			continue
		}
		for _, f := range splitFault(a, start, end) {
			f.Kind = b.kind(start)
			// A new fault of a family on the same targets replaces the old.
			keep := open[:0]
			for _, i := range open {
				if out[i].Family == f.Family && slices.Equal(out[i].Targets, f.Targets) {
					out[i].End, out[i].Stopped = max(a.Invoke, out[i].Start), true
					continue
				}
				keep = append(keep, i)
			}
			open = append(keep, len(out))
			out = append(out, f)
		}
	}
	slices.SortStableFunc(out, func(a, b Fault) int { return cmp.Compare(a.Start, b.Start) })
	return out
}

// closeFaults ends, at time at, the open faults of the given families that
// share a target with targets, or all of them when none does; it returns
// the faults still open.
func closeFaults(out []Fault, open []int, fams, targets []string, at int64) []int {
	match := func(i int, anyTarget bool) bool {
		return slices.Contains(fams, out[i].Family) && (anyTarget || intersects(out[i].Targets, targets))
	}
	anyTarget := true
	for _, i := range open {
		if match(i, false) {
			anyTarget = false
			break
		}
	}
	keep := open[:0]
	for _, i := range open {
		if match(i, anyTarget) {
			out[i].End, out[i].Stopped = max(at, out[i].Start), true
			continue
		}
		keep = append(keep, i)
	}
	return keep
}

// splitFault makes the fault(s) a start action begins: one, or for a
// clock change one per node, each with the clock the event recorded for
// it.
func splitFault(a nemesisAction, fam string, end int64) []Fault {
	mk := func(targets []string) Fault {
		f := Fault{Family: fam, F: a.F, Targets: targets, Detail: a.Detail, Start: a.Invoke, End: end, Unsure: a.Type != history.OK, Asked: time.Duration(a.Dur)}
		if fam == "clock" && len(targets) == 1 {
			for _, c := range a.Clocks {
				if c.Node != targets[0] {
					continue
				}
				if c.Offset != nil {
					f.Offset, f.HasOffset = time.Duration(*c.Offset), true
				}
				if c.Delta != nil {
					f.Delta, f.HasDelta = time.Duration(*c.Delta), true
				}
				f.Rate = c.Rate
				for _, x := range c.Strobe {
					f.Strobe = append(f.Strobe, time.Duration(x))
				}
				// One node's part of a jump on several: its own words.
				if len(a.Targets) > 1 && (f.HasDelta || f.HasOffset) {
					f.Detail = c.Node + " " + clockWords(f)
				}
			}
		}
		f.Label = faultLabel(f)
		return f
	}
	if fam != "clock" || len(a.Targets) < 2 {
		return []Fault{mk(a.Targets)}
	}
	var out []Fault
	for _, t := range a.Targets {
		out = append(out, mk([]string{t}))
	}
	return out
}

// clockWords describes one node's clock jump from its fields, the way the
// nemesis words it: "+1m0s (reads +59.999s)".
func clockWords(f Fault) string {
	var parts []string
	if f.HasDelta {
		parts = append(parts, fmtSkew(f.Delta))
	}
	if f.HasOffset {
		parts = append(parts, "(reads "+fmtSkew(f.Offset)+")")
	}
	return strings.Join(parts, " ")
}

// fmtSkew writes a signed Go duration: "+1m0s", "-30s".
func fmtSkew(d time.Duration) string {
	if d >= 0 {
		return "+" + d.String()
	}
	return d.String()
}

func intersects(a, b []string) bool {
	for _, x := range a {
		if slices.Contains(b, x) {
			return true
		}
	}
	return false
}

// fmtOffset writes a clock offset as "+60 s".
func fmtOffset(d time.Duration) string {
	sign := "+"
	if d < 0 {
		sign, d = "-", -d
	}
	s := d.Seconds()
	switch {
	case d < time.Second:
		return fmt.Sprintf("%s%d ms", sign, d.Round(time.Millisecond).Milliseconds())
	case math.Abs(s-math.Round(s)) < 0.05:
		return fmt.Sprintf("%s%.0f s", sign, s)
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
	case f.Family == "clock":
		b.WriteString("clock")
		if f.Detail != "" {
			b.WriteString(" " + f.Detail)
		}
		if len(f.Targets) > 0 {
			b.WriteString(" on " + targetList(f.Targets, 3))
		}
	case f.Family == "partition" && f.Detail != "":
		b.WriteString("partition " + f.Detail)
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
		what := "changed (" + f.Detail + ")"
		switch {
		case f.F == "strobe-clock":
			what = "begun strobing " + f.Detail
		case f.F == "drift-clock":
			what = "begun running at " + strings.Replace(f.Detail, "rate x", "rate ×", 1)
		case f.HasDelta && f.HasOffset && (f.Offset-f.Delta).Abs() > 500*time.Millisecond:
			what = fmt.Sprintf("jumped %s (to %s)", fmtOffset(f.Delta), fmtOffset(f.Offset))
		case f.HasDelta:
			what = "jumped " + fmtOffset(f.Delta)
		case f.HasOffset:
			what = "jumped " + fmtOffset(f.Offset)
		}
		if who == "" {
			who = "a node"
		}
		s = fmt.Sprintf("%s's clock had %s at %s", who, what, fmtTime(f.Start))
	case "partition":
		s = "a network partition"
		if f.Detail != "" {
			s += " (" + f.Detail + ")"
		} else if who != "" {
			s += " (" + targetList(f.Targets, 4) + ")"
		}
		s += " had begun at " + fmtTime(f.Start)
	case "kill":
		s = fmt.Sprintf("%s had been killed at %s", orSome(who, "a node"), fmtTime(f.Start))
	case "pause":
		s = fmt.Sprintf("%s had been paused at %s", orSome(who, "a node"), fmtTime(f.Start))
	case "promote":
		s = fmt.Sprintf("%s had been promoted at %s while the old master still served", orSome(who, "a replica"), fmtTime(f.Start))
	case "replication cut":
		s = fmt.Sprintf("replication (%s) had been frozen at %s", orSome(targetList(f.Targets, 3), "a link"), fmtTime(f.Start))
	case "master paused", "master isolated":
		s = strings.Join(strings.Fields(fmt.Sprintf("the master %s had been %s at %s", who, strings.TrimPrefix(f.Family, "master "), fmtTime(f.Start))), " ")
	default:
		s = fmt.Sprintf("%s began at %s", f.Label, fmtTime(f.Start))
	}
	if !active && f.End < at && (f.Stopped || f.Healed) {
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

// FaultGroup is the faults of one kind (and, for client pauses and clock
// jumps, one size) told once: "17 client pauses of 1.5 s = 1.5 × TTL
// (1 s), 17 struck a holder, 17 outlived the lease", with each of them in
// Items for whoever unfolds the group.
type FaultGroup struct {
	Title string
	Items []FaultItem
}

// FaultItem is one fault of a group: what, on whom, when, how it ended
// and how large it was.
type FaultItem struct {
	Label, From, To, EndedBy, Size string
}

// GroupFaults groups the nemesis's faults by family, a clock jump by
// its size as well, in the order each group's first began; the title says
// how many, how large against the scale (when scaled) and, from the
// run's coverage, how many struck a holder. Client pauses the nemesis
// asked for are left to GroupClientPauses, which sees each pause the
// client took.
func GroupFaults(faults []Fault, s Scale, scaled bool, cov checker.Coverage) []FaultGroup {
	var groups []FaultGroup
	index := map[string]int{}
	fs := map[string]map[string]bool{} // group → the nemesis f that started its faults
	for _, f := range faults {
		if f.Family == "pause-client" {
			continue
		}
		key := f.Family
		if f.Family == "clock" {
			key += " " + clockWords(f) + f.Detail
		}
		i, ok := index[key]
		if !ok {
			i = len(groups)
			index[key] = i
			groups = append(groups, FaultGroup{})
			fs[key] = map[string]bool{}
		}
		fs[key][f.F] = true
		groups[i].Items = append(groups[i].Items, faultItem(f, s, scaled))
	}
	for key, i := range index {
		groups[i].Title = groupTitle(faults, key, groups[i], s, scaled, cov, fs[key])
	}
	return groups
}

// faultItem is one fault as a group lists it.
func faultItem(f Fault, s Scale, scaled bool) FaultItem {
	it := FaultItem{Label: f.Label, From: fmtTime(f.Start), To: fmtTime(f.End), EndedBy: "end of history"}
	if scaled {
		it.Size = f.Size(s)
	}
	switch {
	case f.Stopped:
		it.EndedBy = "its stop event"
	case f.Healed:
		it.EndedBy = "final heal"
	}
	return it
}

// groupTitle says a group of faults in one line: how many, of which
// kind, their lengths against the TTL, how many struck a holder.
func groupTitle(faults []Fault, key string, g FaultGroup, s Scale, scaled bool, cov checker.Coverage, fs map[string]bool) string {
	var lens []time.Duration
	var first Fault
	found := false
	for _, f := range faults {
		k := f.Family
		if f.Family == "clock" {
			k += " " + clockWords(f) + f.Detail
		}
		if k != key {
			continue
		}
		if !found {
			first, found = f, true
		}
		if d := faultLength(f); d > 0 {
			lens = append(lens, d)
		}
	}
	name := cmp.Or(first.Kind.Label, first.Family)
	title := plural(len(g.Items), name)
	if first.Family == "clock" {
		title = fmt.Sprintf("%s (%s)", plural(len(g.Items), "clock change"), strings.TrimSpace(orSome(clockWords(first), first.Detail)))
	}
	if r := lengthRange(lens, s, scaled); r != "" {
		title += " " + r
	}
	struck, took := 0, 0
	for _, f := range slices.Sorted(maps.Keys(fs)) {
		struck += cov.Faults[f].StruckHolder
		took += cov.Faults[f].TookEffect
	}
	if took > 0 {
		title += fmt.Sprintf(", %d struck a holder", struck)
	}
	return title
}

// faultLength is how long a fault lasted or was asked to, 0 when it has
// no length of its own (an instant, a fault still in force at the end).
func faultLength(f Fault) time.Duration {
	if f.Kind.Instant || f.Family == "clock" {
		return 0
	}
	if f.Asked > 0 {
		return f.Asked
	}
	if (f.Stopped || f.Healed) && f.End > f.Start {
		return time.Duration(f.End - f.Start)
	}
	return 0
}

// lengthRange says lengths of time as one ("of 1.5 s = 1.5 × TTL") or a
// range ("of 0.8 s to 2.1 s = 0.8 to 2.1 × TTL"), against the TTL when
// scaled.
func lengthRange(lens []time.Duration, s Scale, scaled bool) string {
	if len(lens) == 0 {
		return ""
	}
	lo, hi := slices.Min(lens), slices.Max(lens)
	ttl := scaled && s.TTL > 0
	if fmtLength(lo) == fmtLength(hi) {
		if ttl {
			return fmt.Sprintf("of %s = %s", fmtLength(lo), s.Times(lo))
		}
		return "of " + fmtLength(lo)
	}
	out := fmt.Sprintf("of %s to %s", fmtLength(lo), fmtLength(hi))
	if ttl {
		out += fmt.Sprintf(" = %s to %s", ratio(float64(lo)/float64(s.TTL)), s.Times(hi))
	}
	return out
}

// GroupClientPauses groups the client pauses of a history (the
// invocations of ops, as checker.Seen.ClientFaults keeps them) by their
// length: "17 client pauses of 1.5 s = 1.5 × TTL (1 s), 17 struck a
// holder, 17 outlived the lease". The coverage's counts are of all the
// pauses: a group says them when it is the only one, else a group of
// their own says them.
func GroupClientPauses(ops []history.Op, s Scale, scaled bool, cov checker.PauseCoverage) []FaultGroup {
	var groups []FaultGroup
	index := map[time.Duration]int{}
	var lens []time.Duration
	for _, op := range ops {
		if op.F != history.FPause || op.Type != history.Invoke || op.Process.IsNemesis() {
			continue
		}
		var d time.Duration
		if op.Value != nil {
			d = time.Duration(op.Value.Duration)
		}
		i, ok := index[d]
		if !ok {
			i = len(groups)
			index[d] = i
			groups = append(groups, FaultGroup{})
			lens = append(lens, d)
		}
		it := FaultItem{Label: clientName(int(op.Process)), From: fmtTime(op.Time), EndedBy: "its own end"}
		if d > 0 {
			it.To = fmtTime(op.Time + int64(d))
			if scaled && s.TTL > 0 {
				it.Size = fmt.Sprintf("%s = %s", fmtLength(d), s.Times(d))
			} else {
				it.Size = fmtLength(d)
			}
		}
		if op.Value != nil && op.Value.Detail != "" {
			it.Label += ", at " + op.Value.Detail
		}
		groups[i].Items = append(groups[i].Items, it)
	}
	for i := range groups {
		title := plural(len(groups[i].Items), "client pause")
		if lens[i] > 0 {
			title += " " + lengthRange([]time.Duration{lens[i]}, s, scaled)
		}
		groups[i].Title = title
	}
	if cov.Total > 0 {
		counts := fmt.Sprintf("%d struck a holder, %d outlived the lease", cov.StruckHolder, cov.OutlivedLease)
		if len(groups) == 1 {
			groups[0].Title += ", " + counts
		} else if len(groups) > 1 {
			groups = append(groups, FaultGroup{Title: fmt.Sprintf("Of all %s, %s", plural(cov.Total, "client pause"), counts)})
		}
	}
	return groups
}
