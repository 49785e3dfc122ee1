package reports

import (
	"context"
	"image/color"
	"maps"
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
	v, err := newView(meta, d, src, Normalize(res))
	if err != nil { // holds in memory cannot fail
		panic(err)
	}
	return v
}

// newView is the view of a history from its digest; src replays it. res
// is normalized (Normalize): the timelines take its holds in order of
// start.
func newView(meta RunMeta, d *digest, src source, res checker.Result) (*runView, error) {
	v := &runView{meta: meta, res: res, dig: d, src: src, marks: map[spanKey]*marks{},
		faults: d.faults(), end: d.end}
	v.heal, v.healed = finalHeal(d.nemesis)
	v.why = explain(d, res, v.faults)
	holders := map[int]bool{}
	keys := map[string]bool{}
	if err := res.EachHold(func(h checker.Hold) error {
		holders[h.Process] = true
		keys[h.Key] = true
		v.end = max(v.end, h.Start, h.End)
		return nil
	}); err != nil {
		return nil, err
	}
	extra := slices.Sorted(maps.Keys(holders))
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
	return v, nil
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
	return keyColours[v.keyColourIndex(key)]
}

// keyColourIndex is the index of key's colour in keyColours.
func (v *runView) keyColourIndex(key string) int { return v.keyIdx[key] % len(keyColours) }

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
		ms = map[spanKey]*marks{k: newMarks(k)}
	}
	_ = v.gatherHolds(ms) // holds in memory cannot fail; gatherAll reads a file
	v.marks[k] = ms[k]
	return ms[k]
}

// gatherAll gathers the write marks and holds of wins, in one pass over
// the history and one over the holds.
func (v *runView) gatherAll(ctx context.Context, wins []window) error {
	ks := make([]spanKey, len(wins))
	for i, w := range wins {
		ks[i] = w.key()
	}
	ms, err := gatherMarks(ctx, v.src, ks)
	if err != nil {
		return err
	}
	if err := v.gatherHolds(ms); err != nil {
		return err
	}
	for k, m := range ms {
		v.marks[k] = m
	}
	return nil
}

// gatherHolds adds the result's holds, in order of start, to the marks
// of each window.
func (v *runView) gatherHolds(ms map[spanKey]*marks) error {
	all := slices.Collect(maps.Values(ms))
	return v.res.EachHold(func(h checker.Hold) error {
		e, c := v.holdEnd(h), v.keyColourIndex(h.Key)
		for _, m := range all {
			m.addHold(h, e, c)
		}
		return nil
	})
}
