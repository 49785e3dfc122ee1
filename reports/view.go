package reports

import (
	"image/color"
	"slices"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/history"
)

// runView is a run digested once for every figure: calls paired, faults
// derived, keys numbered.
type runView struct {
	meta   RunMeta
	res    checker.Result
	ops    []history.Op
	calls  []call
	procs  []int
	faults []Fault
	heal   int64
	healed bool
	end    int64
	keys   []string
	keyIdx map[string]int
	// why explains violations by index (Explain).
	why map[int]string
}

func newRunView(meta RunMeta, ops []history.Op, res checker.Result) *runView {
	v := &runView{meta: meta, res: res, ops: ops, calls: clientCalls(ops), faults: Faults(ops), end: runEnd(ops)}
	v.heal, v.healed = finalHeal(ops)
	v.why = explain(ops, res, v.faults)
	var extra []int
	keys := map[string]bool{}
	for _, h := range res.Holds {
		extra = append(extra, h.Process)
		keys[h.Key] = true
		v.end = max(v.end, h.Start, h.End)
	}
	for _, vi := range res.Violations {
		extra = append(extra, vi.Processes...)
		v.end = max(v.end, vi.End)
	}
	for _, c := range v.calls {
		if c.Invoke.F == history.FAcquire && c.Invoke.Key != "" {
			keys[c.Invoke.Key] = true
		}
	}
	v.procs = clientProcesses(ops, extra...)
	for k := range keys {
		v.keys = append(v.keys, k)
	}
	slices.Sort(v.keys)
	v.keyIdx = map[string]int{}
	for i, k := range v.keys {
		v.keyIdx[k] = i
	}
	return v
}

// violationWords is ViolationWords of violation i, followed by what the
// history explains about it.
func (v *runView) violationWords(i int) string {
	s := ViolationWords(v.res.Violations[i], v.faults)
	if why := v.why[i]; why != "" {
		s += " " + why
	}
	return s
}

// keyColour is the colour of holds of key.
func (v *runView) keyColour(key string) color.NRGBA {
	return keyColours[v.keyIdx[key]%len(keyColours)]
}

// holdEnd is where a hold's bar ends: its end, or the end of the run for a
// claim that never ended.
func (v *runView) holdEnd(h checker.Hold) int64 {
	if h.End < 0 {
		return v.end
	}
	return h.End
}

// verdictWord is how the verdict reads in a title.
func verdictWord(vd checker.Verdict) string {
	switch vd {
	case checker.Valid:
		return "VALID"
	case checker.Invalid:
		return "INVALID"
	}
	return "UNKNOWN"
}
