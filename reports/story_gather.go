package reports

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/history"
)

// StoryFile is the base name of the story of violations of kind (as .png
// and .svg).
func StoryFile(kind string) string { return "story-" + unsafeChars.ReplaceAllString(kind, "_") }

// maxStories is how many stories a report draws: one per kind of
// finding, the most telling kinds first.
const maxStories = 6

// maxStoryEvents bounds the events gathered for one story: a busy lock's
// few seconds around a violation.
const maxStoryEvents = 20000

// storyKinds are the kinds of finding a sequence diagram tells: those
// between clients, the lock and the storage. A final count, a key that
// stayed unavailable or porcupine's refusal have no such sequence.
var storyKinds = []string{checker.KindOverlap, checker.KindForeignRelease, checker.KindLostLease,
	checker.KindStaleWrite, checker.KindLostUpdate, checker.KindFenceBackwards}

// storyPicks are the violations (indexes) that get a story: the most
// telling of each kind that has one (MostTelling), in that order.
func storyPicks(vs []checker.Violation) []int {
	seen := map[string]bool{}
	var out []int
	for _, i := range MostTelling(vs) {
		if k := vs[i].Kind; slices.Contains(storyKinds, k) && !seen[k] && len(out) < maxStories {
			seen[k] = true
			out = append(out, i)
		}
	}
	return out
}

// storyWindow is the span of history a story of vi is drawn from: from
// long enough before its first event for the claim it is about to have
// begun (three leases and the longest client pause, at most 30 s) to its
// end.
type storyWindow struct {
	key    string
	lo, hi int64
	ops    []history.Op
}

func (v *runView) storyWindow(vi checker.Violation) *storyWindow {
	lo, hi := vi.Start, max(vi.End, vi.Start)
	for _, e := range vi.Events {
		if op, inv, ok := v.event(e); ok {
			lo, hi = min(lo, inv), max(hi, op.Time)
		}
	}
	hi = min(hi, max(lo, vi.Start)+storyReach)
	back := 5 * time.Second
	if s, ok := ScaleOf(v.rec); ok && s.TTL > 0 {
		back = 3 * s.TTL
	}
	for _, op := range v.res.Seen.ClientFaults {
		if op.Value != nil {
			back = max(back, 3*time.Duration(op.Value.Duration))
		}
	}
	back = min(back, 30*time.Second)
	return &storyWindow{key: vi.Key, lo: max(0, lo-int64(back)), hi: hi + 100*int64(time.Millisecond)}
}

// see keeps a client event of the window's key, or a client pause or
// crash, that happened in the window.
func (w *storyWindow) see(op *history.Op) {
	if op.Process.IsNemesis() || op.Time < w.lo || op.Time > w.hi || len(w.ops) >= maxStoryEvents {
		return
	}
	if op.Key == w.key || op.F == history.FPause || op.F == history.FCrash {
		w.ops = append(w.ops, keep(op))
	}
}

// gatherStories goes through the history once for the events of every
// story's window, and stops once past them all.
func gatherStories(ctx context.Context, src history.Source, wins []*storyWindow) error {
	var last int64
	for _, w := range wins {
		last = max(last, w.hi)
	}
	_, err := src.Each(ctx, func(op *history.Op) bool {
		if op.Time > last+int64(time.Second) {
			return false
		}
		for _, w := range wins {
			w.see(op)
		}
		return true
	})
	return err
}

// storyRow is a story as index.html shows it: its figure and, beside it,
// which assumption the violation needed broken.
type storyRow struct {
	N          int
	Kind, What string
	Title      string
	PNG, SVG   string
	Broke      Assumption
}

// drawStories writes the story of the most telling finding of each kind
// into dir, and returns what index.html shows of them. A run without
// findings has none and costs no pass over its history.
func (v *runView) drawStories(ctx context.Context, dir string) ([]storyRow, error) {
	picks := storyPicks(v.res.Violations)
	if len(picks) == 0 {
		return nil, nil
	}
	wins := make([]*storyWindow, len(picks))
	for k, i := range picks {
		wins[k] = v.storyWindow(v.res.Violations[i])
	}
	if err := gatherStories(ctx, v.src, wins); err != nil {
		return nil, fmt.Errorf("render stories: %w", err)
	}
	lk := lockOf(v.rec)
	rows := make([]storyRow, 0, len(picks))
	for k, i := range picks {
		vi := v.res.Violations[i]
		st := storyOf(vi, i+1, wins[k].ops, v.faults, lk)
		base := StoryFile(vi.Kind)
		w, h, fig := drawStory(st)
		if err := v.saveStep(ctx, dir, base, w, h, fig); err != nil {
			return rows, err
		}
		rows = append(rows, storyRow{N: i + 1, Kind: vi.Kind, What: findingWord(vi), Title: st.Title, PNG: base + ".png", SVG: base + ".svg",
			Broke: AssumptionOf(vi, wins[k].ops, v.faults, lk)})
	}
	return rows, nil
}
