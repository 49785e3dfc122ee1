package checker

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/lockharness/lockharness/history"
)

// maxVisOps bounds the operations of one model shown in a visualisation;
// beyond it a window around the first violation is shown.
const maxVisOps = 4000

// visTimeout bounds the porcupine runs behind a visualisation.
const visTimeout = 10 * time.Second

// VisualizeKey writes porcupine's HTML visualisation of key's history: the
// lease-mutex model (failed and unknown acquires included, as no-ops), plus
// the counter model when its check fails, annotated with the nemesis's
// events, client crashes and pauses, and the violations the checkers found.
// Porcupine's clock is the history index (see instant); every operation's
// tooltip gives its run-clock times. A key with more than a few thousand
// operations is shown in a window around its first violation, starting from
// a state that allows anything (a free lock, any counter value), so the
// picture stays small enough for a browser.
func VisualizeKey(ops []history.Op, key string, w io.Writer) error {
	p, err := prepare(ops)
	if err != nil {
		return fmt.Errorf("visualize %s: %w", key, err)
	}
	ctx := context.Background()
	byKey := buildClaims(p)
	var vs []Violation
	for _, v := range analyseClaims(p, byKey).violations {
		if v.Key == key {
			vs = append(vs, v)
		}
	}
	lease := leaseOps(p, key, true)
	sects := sections(p)[key]
	counter := counterOps(sects)
	counterBad := checkLinearizable(ctx, CounterModel(), counter, visTimeout)
	counterShown := counterBad.res != porcupine.Ok && len(counter) > 0

	// Where to look: the first violation of the lock promise, else the
	// first section porcupine could not place, else the beginning.
	focus := int64(-1)
	for _, v := range vs {
		if len(v.Events) > 0 && (focus < 0 || v.Events[0] < focus) {
			focus = v.Events[0]
		}
	}
	if focus < 0 && counterBad.res == porcupine.Illegal {
		if op, ok := firstUnplaced(counterBad); ok {
			focus = op.Call
		}
	}
	lo, hi := int64(0), p.lastIndex
	windowed := false
	leaseInit, counterInit := leaseFree, CounterState{A: 0, N: 1}
	if len(lease) > maxVisOps || (counterShown && len(counter) > maxVisOps) {
		windowed = true
		lo, hi = visWindow(lease, focus)
		leaseInit, counterInit = leaseFree, CounterState{} // allow anything at the cut
	}
	var all []porcupine.Operation
	for _, op := range lease {
		if op.Call >= lo && op.Call <= hi {
			op.Metadata = opTimes(op.Input.(LeaseOp).Call, op.Input.(LeaseOp).Return, op.Call, op.Return)
			all = append(all, op)
		}
	}
	if counterShown {
		for i, op := range counter {
			if op.Call >= lo && op.Call <= hi {
				op.Metadata = opTimes(sects[i].Start, sects[i].End, op.Call, op.Return)
				all = append(all, op)
			}
		}
	}

	model := combinedModel(leaseInit, counterInit)
	_, info := porcupine.CheckOperationsVerbose(model, all, visTimeout)

	var anns []porcupine.Annotation
	in := func(i int64) bool { return i >= lo && i <= hi }
	if windowed {
		anns = append(anns, porcupine.Annotation{Tag: "note", Start: lo, End: hi,
			Description: fmt.Sprintf("events %d–%d of %d", lo, hi, p.lastIndex+1),
			Details:     "this key's history is long: the picture shows a window around its first violation, starting from a state that allows anything"})
	}
	for _, n := range p.nemesis {
		end := n.endIdx
		if n.end < 0 {
			end = p.lastIndex // still going when the history ends
		}
		if !in(n.idx) && !in(end) {
			continue
		}
		anns = append(anns, porcupine.Annotation{Tag: "nemesis", Start: n.idx, End: end,
			Description: n.f, Details: nemesisDetails(n), BackgroundColor: "#f6d7a7"})
	}
	for i := range ops {
		op := &ops[i]
		if op.Process.IsNemesis() || op.Type == history.Invoke || !in(op.Index) {
			continue
		}
		if op.F == history.FCrash || (op.F == history.FPause && op.Key == key) {
			anns = append(anns, porcupine.Annotation{ClientId: int(op.Process), Start: op.Index,
				Description: op.F, Details: fmt.Sprintf("%s at %s", op.F, secs(op.Time)), BackgroundColor: "#f4b6b6"})
		}
	}
	for _, v := range vs {
		s, e := v.Events[0], v.Events[len(v.Events)-1]
		if !in(s) && !in(e) {
			continue
		}
		anns = append(anns, porcupine.Annotation{Tag: "violations", Start: min(s, e), End: max(s, e),
			Description: v.Kind, Details: v.Description, BackgroundColor: "#ff8080"})
	}
	info.AddAnnotations(anns)
	if err := porcupine.Visualize(model, info, w); err != nil {
		return fmt.Errorf("visualize %s: %w", key, err)
	}
	return nil
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
		Partition: func(ops []porcupine.Operation) [][]porcupine.Operation {
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
		},
		Init: func() any { return nil },
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
