package checker

import (
	"context"
	"fmt"
	"io"
	"maps"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/lockharness/lockharness/history"
)

// MaxViewEvents bounds the history of which a check keeps porcupine's
// views (Config.Views): a view is drawn from the key's history, kept in
// memory until the check ends, and a longer history has its violations on
// the report's timeline and in words instead.
const MaxViewEvents = 400_000

// maxVisOps bounds the operations of one model shown in a view; beyond it
// a window around the first violation is shown.
const maxVisOps = 4000

// visTimeout bounds the porcupine runs behind a view.
const visTimeout = 10 * time.Second

// View is porcupine's picture of one key's history (see Config.Views): the
// lease-mutex model (failed and unknown acquires included, as no-ops),
// plus the counter model when its check fails, annotated with the
// nemesis's events, client crashes and pauses, and the violations the
// checkers found. Porcupine's clock is the history index (see instant);
// every operation's tooltip gives its run-clock times. A key with more
// than a few thousand operations is shown in a window around its first
// violation, starting from a state that allows anything (a free lock, any
// counter value), so the picture stays small enough for a browser. The
// picture is of the key's part of the window the check refuted it in: of
// its whole history, unless the history was long enough to be checked in
// windows.
type View struct {
	key   string
	model porcupine.Model
	info  porcupine.LinearizationInfo
}

// WriteHTML writes the view as porcupine's HTML page.
func (v *View) WriteHTML(w io.Writer) error {
	if err := porcupine.Visualize(v.model, v.info, w); err != nil {
		return fmt.Errorf("visualize %s: %w", v.key, err)
	}
	return nil
}

// View is porcupine's view of key, kept by a check with Config.Views of
// a history of at most MaxViewEvents events, for each key in
// NonLinearizableKeys; false for any other key, and when the check was
// cut short before it drew the view.
func (r *Result) View(key string) (*View, bool) {
	v, ok := r.Seen.views[key]
	return v, ok
}

// viewInput is what a view is drawn from, taken from the window of the
// history in which the check refuted the key: its operations on either
// model, its violations of the lock promise, and what happened around
// them. The porcupine runs wait for the end of the check (draw), so that
// they never hold up the verdict.
type viewInput struct {
	key         string
	lease       []porcupine.Operation
	sects       []Section
	counterInit CounterState
	vs          []Violation
	nemesis     []nemesisEvent
	marks       []history.Op // client crashes, and pauses of the key's clients
	lastIndex   int64
}

// viewOf is what key's view is drawn from in the window ops (prepared p,
// claims byKey), whose counter starts at counter and whose critical
// sections are secs.
func viewOf(ops []history.Op, p *prepared, byKey map[string][]claim, secs map[string][]Section, key string, counter int64) *viewInput {
	in := &viewInput{key: key, lease: leaseOps(p, key, true), sects: secs[key],
		counterInit: CounterState{A: counter, N: 1}, nemesis: p.nemesis, lastIndex: p.lastIndex}
	for _, v := range analyseClaims(p, map[string][]claim{key: byKey[key]}).violations {
		if v.Key == key {
			in.vs = append(in.vs, v)
		}
	}
	for i := range ops {
		op := &ops[i]
		if op.Process.IsNemesis() || op.Type == history.Invoke {
			continue
		}
		if op.F == history.FCrash || (op.F == history.FPause && op.Key == key) {
			in.marks = append(in.marks, *op)
		}
	}
	return in
}

// draw runs porcupine on the view's operations and annotates what it
// found.
func (in *viewInput) draw(ctx context.Context) *View {
	counter := counterOps(in.sects)
	counterBad := checkLinearizable(ctx, counterModel(in.counterInit), counter, visTimeout)
	counterShown := counterBad.res != porcupine.Ok && len(counter) > 0
	lo, hi := int64(0), in.lastIndex
	windowed := len(in.lease) > maxVisOps || (counterShown && len(counter) > maxVisOps)
	leaseInit, counterInit := leaseFree, in.counterInit
	if windowed {
		lo, hi = visWindow(in.lease, in.focus(counterBad))
		counterInit = CounterState{} // allow anything at the cut
	}
	all := in.operations(counter, counterShown, lo, hi)
	model := combinedModel(leaseInit, counterInit)
	_, info := porcupineCheck(ctx, model, all, visTimeout)
	info.AddAnnotations(in.annotations(windowed, lo, hi))
	return &View{key: in.key, model: model, info: info}
}

// focus is where a long view looks: the first violation of the lock
// promise, else the first section porcupine could not place, else the
// beginning (-1).
func (in *viewInput) focus(counterBad linResult) int64 {
	focus := int64(-1)
	for _, v := range in.vs {
		if len(v.Events) > 0 && (focus < 0 || v.Events[0] < focus) {
			focus = v.Events[0]
		}
	}
	if focus < 0 && counterBad.res == porcupine.Illegal {
		if op, ok := firstUnplaced(counterBad); ok {
			focus = op.Call
		}
	}
	return focus
}

// operations are the view's lease operations called within [lo, hi], and
// its counter sections there when shown, each with its run-clock times.
func (in *viewInput) operations(counter []porcupine.Operation, counterShown bool, lo, hi int64) []porcupine.Operation {
	var all []porcupine.Operation
	for _, op := range in.lease {
		if op.Call >= lo && op.Call <= hi {
			lop := op.Input.(LeaseOp)
			op.Metadata = opTimes(lop.Call, lop.Return, op.Call, op.Return)
			all = append(all, op)
		}
	}
	if counterShown {
		for i, op := range counter {
			if op.Call >= lo && op.Call <= hi {
				op.Metadata = opTimes(in.sects[i].Start, in.sects[i].End, op.Call, op.Return)
				all = append(all, op)
			}
		}
	}
	return all
}

// annotations mark, within [lo, hi], the nemesis's events, client crashes
// and pauses, and the violations; and say so when the view is a window.
func (in *viewInput) annotations(windowed bool, lo, hi int64) []porcupine.Annotation {
	var anns []porcupine.Annotation
	inside := func(i int64) bool { return i >= lo && i <= hi }
	if windowed {
		anns = append(anns, porcupine.Annotation{Tag: "note", Start: lo, End: hi,
			Description: fmt.Sprintf("events %d–%d of %d", lo, hi, in.lastIndex+1),
			Details:     "this key's history is long: the picture shows a window around its first violation, starting from a state that allows anything"})
	}
	for _, n := range in.nemesis {
		end := n.endIdx
		if n.end < 0 {
			end = in.lastIndex // still going when the history ends
		}
		if !inside(n.idx) && !inside(end) {
			continue
		}
		anns = append(anns, porcupine.Annotation{Tag: "nemesis", Start: n.idx, End: end,
			Description: n.f, Details: nemesisDetails(n), BackgroundColor: "#f6d7a7"})
	}
	for _, op := range in.marks {
		if inside(op.Index) {
			anns = append(anns, porcupine.Annotation{ClientId: int(op.Process), Start: op.Index,
				Description: op.F, Details: fmt.Sprintf("%s at %s", op.F, secs(op.Time)), BackgroundColor: "#f4b6b6"})
		}
	}
	for _, v := range in.vs {
		s, e := v.Events[0], v.Events[len(v.Events)-1]
		if !inside(s) && !inside(e) {
			continue
		}
		anns = append(anns, porcupine.Annotation{Tag: "violations", Start: min(s, e), End: max(s, e),
			Description: v.Kind, Details: v.Description, BackgroundColor: "#ff8080"})
	}
	return anns
}

// views keeps what the views of the keys the window refuted (nonlin) are
// drawn from, while the history read so far is short enough to keep them
// (MaxViewEvents); past it, it lets go of them all.
func (a *accumulator) views(ops []history.Op, p *prepared, byKey map[string][]claim, last bool, nonlin ...[]string) {
	if !a.cfg.Views || a.viewsOff {
		return
	}
	if a.seen.Events > MaxViewEvents {
		a.viewsOff, a.viewIn = true, nil
		return
	}
	var secs map[string][]Section
	for _, keys := range nonlin {
		for _, key := range keys {
			if _, done := a.viewIn[key]; done {
				continue
			}
			if secs == nil {
				acquired := maps.Clone(a.c.acquired)
				for i := range p.calls {
					if p.calls[i].f == history.FAcquire {
						acquired[p.calls[i].proc] = true
					}
				}
				secs = sectionsFinal(p, acquired, last)
			}
			if a.viewIn == nil {
				a.viewIn = map[string]*viewInput{}
			}
			a.viewIn[key] = viewOf(ops, p, byKey, secs, key, a.c.counter[key])
		}
	}
}

// drawViews draws the views of keys, once the verdict is in, and keeps
// them in res.Seen.
func (a *accumulator) drawViews(res *Result) {
	if a.viewsOff || a.seen.Events > MaxViewEvents || len(a.viewIn) == 0 {
		return
	}
	var keys []string
	for _, k := range res.NonLinearizableKeys {
		if a.viewIn[k] != nil {
			keys = append(keys, k)
		}
	}
	drawn := eachKey(keys, func(_ int, k string) *View { return a.viewIn[k].draw(a.ctx) })
	if a.ctx.Err() != nil {
		return // cut short: porcupine gave up on some of them
	}
	res.Seen.views = map[string]*View{}
	for i, k := range keys {
		res.Seen.views[k] = drawn[i]
	}
}

// visWindow picks a range of history indexes holding at most maxVisOps of
// ops (sorted by call), centred on focus (or at the start).
func visWindow(ops []porcupine.Operation, focus int64) (int64, int64) {
	sorted := sortedCalls(ops)
	at := 0
	if focus >= 0 {
		for at < len(sorted) && sorted[at] < focus {
			at++
		}
	}
	from := max(0, at-maxVisOps/2)
	to := min(len(sorted), from+maxVisOps)
	from = max(0, to-maxVisOps)
	if from >= to {
		return 0, 0
	}
	return sorted[from], sorted[to-1]
}

func sortedCalls(ops []porcupine.Operation) []int64 {
	out := make([]int64, len(ops))
	for i, op := range ops {
		out[i] = op.Call
	}
	// ops come from calls in invocation order: already sorted.
	return out
}

func nemesisDetails(n nemesisEvent) string {
	var parts []string
	for _, v := range []*history.Value{n.in, n.out} {
		if v == nil {
			continue
		}
		if len(v.Targets) > 0 {
			parts = append(parts, strings.Join(v.Targets, ", "))
		}
		if v.Detail != "" {
			parts = append(parts, v.Detail)
		}
	}
	s := fmt.Sprintf("%s %s at %s", n.f, n.typ, secs(n.start))
	if len(parts) > 0 {
		s += ": " + strings.Join(parts, "; ")
	}
	return s
}

func opTimes(start, end, callIdx, retIdx int64) string {
	s := fmt.Sprintf("invoked at %s (event %d)", secs(start), callIdx)
	if end == never || retIdx == never {
		return s + ", never completed"
	}
	return s + fmt.Sprintf(", completed at %s (event %d)", secs(end), retIdx)
}

// combinedModel shows both models in one picture: the lease-mutex
// operations and the counter sections are separate partitions, and the
// state of each partition starts as nil, meaning its model's initial state.
func combinedModel(leaseInit LeaseState, counterInit CounterState) porcupine.Model {
	return porcupine.Model{
		Partition: byModel,
		Init:      func() any { return nil },
		Step: func(state, input, _ any) (bool, any) {
			switch in := input.(type) {
			case LeaseOp:
				s, ok := state.(LeaseState)
				if !ok {
					s = leaseInit
				}
				return LeaseStep(s, in)
			case Section:
				s, ok := state.(CounterState)
				if !ok {
					s = counterInit
				}
				return CounterStep(s, in)
			}
			return false, state
		},
		DescribeOperation: func(input, _ any) string {
			switch in := input.(type) {
			case LeaseOp:
				return describeLeaseOp(in)
			case Section:
				return "counter: " + describeSection(in)
			}
			return fmt.Sprint(input)
		},
		DescribeState: func(state any) string {
			switch s := state.(type) {
			case LeaseState:
				return describeLeaseState(s)
			case CounterState:
				return "counter " + CounterModel().DescribeState(s)
			}
			return "initial"
		},
		DescribeOperationMetadata: func(m any) string {
			if m == nil {
				return ""
			}
			return fmt.Sprint(m)
		},
	}
}

// byModel partitions a view's operations by model: the lease-mutex
// operations, then the counter sections.
func byModel(ops []porcupine.Operation) [][]porcupine.Operation {
	var l, c []porcupine.Operation
	for _, op := range ops {
		if _, ok := op.Input.(LeaseOp); ok {
			l = append(l, op)
		} else {
			c = append(c, op)
		}
	}
	var out [][]porcupine.Operation
	for _, part := range [][]porcupine.Operation{l, c} {
		if len(part) > 0 {
			out = append(out, part)
		}
	}
	return out
}
