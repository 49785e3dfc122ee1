package reports

import (
	"cmp"
	"container/heap"
	"slices"
)

// A run with client crashes goes on with a new process in the crashed
// client's place (workloads.Mutex), so it has hundreds of processes, of
// which only as many as the client slots live at once. A row per process
// drew a staircase of mostly empty rows nobody could read; the timeline
// instead gives processes whose lives do not overlap one row, a lane, so
// that it has as many client rows as processes alive at once.

// life is the span of time in which a process has something in the
// timeline: from its first event to the last mark drawn of it.
type life struct {
	Proc     int
	From, To int64
}

// packLanes packs the lives into lanes greedily (interval partitioning):
// in order of start (then of process), each goes into the lowest-numbered
// lane whose last life ended strictly before it starts, or a new lane.
// That takes as many lanes as lives overlap at most. The lanes are
// returned in order of their first process, each its processes in order
// of start: lives that all overlap (a run without crashes) give a lane
// per process, in order of process, as a row per process did.
func packLanes(lives []life) [][]int {
	order := slices.Clone(lives)
	slices.SortFunc(order, func(a, b life) int {
		return cmp.Or(cmp.Compare(a.From, b.From), cmp.Compare(a.Proc, b.Proc))
	})
	var lanes [][]int
	// The lanes in use, by the end of their last life (then number), and
	// those free again, by number.
	busy := &minHeap[busyLane]{less: func(a, b busyLane) bool {
		return a.end < b.end || a.end == b.end && a.lane < b.lane
	}}
	free := &minHeap[int]{less: func(a, b int) bool { return a < b }}
	for _, l := range order {
		for busy.Len() > 0 && busy.xs[0].end < l.From {
			heap.Push(free, heap.Pop(busy).(busyLane).lane)
		}
		lane := len(lanes)
		if free.Len() > 0 {
			lane = heap.Pop(free).(int)
		} else {
			lanes = append(lanes, nil)
		}
		lanes[lane] = append(lanes[lane], l.Proc)
		heap.Push(busy, busyLane{end: max(l.To, l.From), lane: lane})
	}
	slices.SortFunc(lanes, func(a, b []int) int { return cmp.Compare(a[0], b[0]) })
	return lanes
}

// busyLane is a lane in use until end.
type busyLane struct {
	end  int64
	lane int
}

// minHeap is a container/heap of T ordered by less: the lanes in use by
// their end, the free ones by number.
type minHeap[T any] struct {
	xs   []T
	less func(a, b T) bool
}

func (h *minHeap[T]) Len() int           { return len(h.xs) }
func (h *minHeap[T]) Less(i, j int) bool { return h.less(h.xs[i], h.xs[j]) }
func (h *minHeap[T]) Swap(i, j int)      { h.xs[i], h.xs[j] = h.xs[j], h.xs[i] }
func (h *minHeap[T]) Push(x any)         { h.xs = append(h.xs, x.(T)) }
func (h *minHeap[T]) Pop() any {
	x := h.xs[len(h.xs)-1]
	h.xs = h.xs[:len(h.xs)-1]
	return x
}

// spans is, by process, the earliest and latest time seen of it: in a
// slot indexed by the process for processes numbered up to maxOpenSlots
// (a history's processes are numbered from 0, one after another), in a
// map for the others, so that noting an event costs no hashing.
type spans struct {
	slots []timeSpan
	more  map[int]timeSpan
}

type timeSpan struct {
	from, to int64
	ok       bool
}

// see notes that process p has something at time t.
func (s *spans) see(p int, t int64) {
	if p >= 0 && p < maxOpenSlots {
		if p >= len(s.slots) {
			s.slots = append(s.slots, make([]timeSpan, p+1-len(s.slots))...)
		}
		s.slots[p] = s.slots[p].with(t)
		return
	}
	if s.more == nil {
		s.more = map[int]timeSpan{}
	}
	s.more[p] = s.more[p].with(t)
}

// with is sp widened to take in t.
func (sp timeSpan) with(t int64) timeSpan {
	if !sp.ok {
		return timeSpan{from: t, to: t, ok: true}
	}
	return timeSpan{from: min(sp.from, t), to: max(sp.to, t), ok: true}
}

// of is process p's span; false when nothing was seen of it. A nil s
// has seen nothing.
func (s *spans) of(p int) (timeSpan, bool) {
	if s == nil {
		return timeSpan{}, false
	}
	if p >= 0 && p < len(s.slots) {
		return s.slots[p], s.slots[p].ok
	}
	sp, ok := s.more[p]
	return sp, ok
}
