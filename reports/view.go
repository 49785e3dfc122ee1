package reports

import (
	"context"
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
	dig    *digest
	src    source // the history again, for the timeline's write marks
	marks  map[spanKey]*marks
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
	src := sliceSource(ops)
	d, err := digestOf(context.Background(), src, wanted(res))
	if err != nil { // a slice cannot fail
		panic(err)
	}
	return newView(meta, d, src, res)
}

// newView is the view of a history from its digest; src replays it.
func newView(meta RunMeta, d *digest, src source, res checker.Result) *runView {
	v := &runView{meta: meta, res: res, dig: d, src: src, marks: map[spanKey]*marks{},
		faults: d.faults(), end: d.end}
	v.heal, v.healed = finalHeal(d.nemesis)
	v.why = explain(d, res, v.faults)
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
	for k := range d.acqKeys {
		keys[k] = true
	}
	v.procs = clientProcesses(d.procs, extra...)
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

// marksOf are the write marks of window w: gathered for every window of
// a render at once (gatherAll), or here by a pass of their own.
func (v *runView) marksOf(w window) *marks {
	k := w.key()
	if m, ok := v.marks[k]; ok {
		return m
	}
	ms, err := gatherMarks(context.Background(), v.src, []spanKey{k})
	if err != nil || ms[k] == nil {
		return newMarks(k)
	}
	v.marks[k] = ms[k]
	return ms[k]
}

// gatherAll gathers the write marks of wins in one pass.
func (v *runView) gatherAll(ctx context.Context, wins []window) error {
	ks := make([]spanKey, len(wins))
	for i, w := range wins {
		ks[i] = w.key()
	}
	ms, err := gatherMarks(ctx, v.src, ks)
	if err != nil {
		return err
	}
	for k, m := range ms {
		v.marks[k] = m
	}
	return nil
}
