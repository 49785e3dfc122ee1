package scenarios

import (
	"context"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The room rule (RunAll): a scenario starts beside others only while the
// median of five 200ms windows of the machine's idle time is a CPU or
// more, and the judgement sees the load of what it follows (the start
// before it, or the end or second a refusal waited for).
//
// The windows used to be taken after the judgement was asked for, five in
// a row: a second per start, and 52 starts of the catalogue one a second
// at least. Now a sampler takes 200ms windows back to back for the whole of
// RunAll, and a judgement waits only until three of the five latest began
// after the event it follows. The rule is the same: the same five windows'
// median against the same threshold. Three of five after the event are a
// majority: when they agree they decide the median alone (three windows
// below a CPU make the median below a CPU, whatever the two older ones
// were), so the load the last start leaves (a ZooKeeper ensemble's 2-3s
// burst, a CPU-load soak) refuses as it did; the two older windows weigh in
// only where the three disagree, which is what the median is for: a start's
// own burst fills one or two windows (0.90 and 1.06 CPUs idle, then 1.4 to
// 1.9, on a quiet two-core machine; judged on one window, every scenario
// ran alone: the catalogue's first 23 in 134s, one at a time). Under
// lasting load every window lacks room, old or new, and the scenarios run
// one after another as before.
//
// A refusal asks again when a running scenario ends, as it always did, or
// roomAgain later if none has: room also comes back without an end, when a
// start-up's burst has passed (a ZooKeeper ensemble's, or a Redis
// Cluster's formation), and the next judgement is then on the windows
// taken since the refusal (four or five of the five). Waiting for an
// end left the machine with a CPU idle for seconds beside long scenarios
// (the quiet runs: 4-6 s after each ZooKeeper start).
const (
	roomWindow  = 200 * time.Millisecond
	roomWindows = 5 // the median's windows
	roomAfter   = 3 // of them, begun after the judged event: a majority
	roomAgain   = roomWindows * roomWindow
)

// window is one of the sampler's measurements: how many CPUs' worth of
// time went idle over the window that began at start.
type window struct {
	start time.Time
	idle  float64
}

// sampler keeps the latest windows of the machine's idle time, taken back
// to back by run, for judgements to wait on (typicalSince).
type sampler struct {
	mu      sync.Mutex
	cond    *sync.Cond
	windows []window // the latest, oldest first
	keep    int
	length  time.Duration // of a window
}

func newSampler(keep int, length time.Duration) *sampler {
	s := &sampler{keep: keep, length: length}
	s.cond = sync.NewCond(&s.mu)
	return s
}

// run takes windows back to back until ctx is done: measure(d) measures
// one window of length d (idleCPUs, or a fake in tests).
func (s *sampler) run(ctx context.Context, measure func(time.Duration) float64) {
	for ctx.Err() == nil {
		w := window{start: time.Now()}
		w.idle = measure(s.length)
		s.add(w)
	}
}

func (s *sampler) add(w window) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.windows = append(s.windows, w)
	if len(s.windows) > s.keep {
		s.windows = slices.Delete(s.windows, 0, len(s.windows)-s.keep)
	}
	s.cond.Broadcast()
}

// room is the room rule on the sampler's windows: room(since) reports
// whether the median of the latest roomWindows, roomAfter of them taken
// after since, is a CPU idle or more (false once ctx is done).
func (s *sampler) room(ctx context.Context) func(since time.Time) bool {
	return func(since time.Time) bool {
		idle, ok := s.typicalSince(ctx, since, roomWindows, roomAfter)
		return ok && idle >= 1
	}
}

// typicalSince waits until the sampler has n windows of which at least
// after began after since (see enough), and returns the median of the
// latest n; ok is false if ctx ended first.
func (s *sampler) typicalSince(ctx context.Context, since time.Time, n, after int) (idle float64, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	stop := context.AfterFunc(ctx, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.cond.Broadcast()
	})
	defer stop()
	for !s.enough(since, n, after) {
		if ctx.Err() != nil {
			return 0, false
		}
		s.cond.Wait()
	}
	latest := make([]float64, 0, n)
	for _, w := range s.windows[len(s.windows)-n:] {
		latest = append(latest, w.idle)
	}
	return median(latest), true
}

// enough, with s.mu held, reports whether the latest n windows are there
// and at least after of them began after since (or a twentieth of a
// window before it: see windowSlack).
func (s *sampler) enough(since time.Time, n, after int) bool {
	if len(s.windows) < n {
		return false
	}
	k := 0
	for _, w := range s.windows[len(s.windows)-n:] {
		if !w.start.Before(since.Add(-s.length / windowSlack)) {
			k++
		}
	}
	return k >= after
}

// windowSlack: a window that began a windowSlack-th of a window (10ms of
// 200ms) before an event still counts as taken after it. A start follows
// the judgement that allowed it by a fraction of a millisecond, and that
// judgement followed the end of a window, so the next window began just
// before the start: counted as before it, every start cost four windows,
// not three. The scenario's own load begins after the start (its servers
// are forked after), so such a window sees all of it.
const windowSlack = 20

// median of xs (not empty); xs is sorted in place.
func median(xs []float64) float64 {
	slices.Sort(xs)
	m := len(xs) / 2
	if len(xs)%2 == 0 {
		return (xs[m-1] + xs[m]) / 2
	}
	return xs[m]
}

// idleCPUs is how many CPUs' worth of time went idle over window, from
// Linux's /proc/stat; where that cannot be read, every CPU counts as idle
// (the machine's room is unknown, and the caller's limit still holds).
func idleCPUs(window time.Duration) float64 {
	idle0, total0, ok := cpuTimes()
	if !ok {
		time.Sleep(window)
		return float64(runtime.NumCPU())
	}
	time.Sleep(window)
	idle1, total1, ok := cpuTimes()
	if !ok || total1 <= total0 {
		return float64(runtime.NumCPU())
	}
	return float64(idle1-idle0) / float64(total1-total0) * float64(runtime.NumCPU())
}

// cpuTimes reads the idle (idle + iowait) and total jiffies of all CPUs.
func cpuTimes() (idle, total uint64, ok bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, false
	}
	line, _, _ := strings.Cut(string(b), "\n")
	fields := strings.Fields(line)
	if len(fields) < 5 || fields[0] != "cpu" {
		return 0, 0, false
	}
	for i, f := range fields[1:] {
		n, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return 0, 0, false
		}
		if i >= 7 { // guest times are already counted in user and nice
			break
		}
		total += n
		if i == 3 || i == 4 {
			idle += n
		}
	}
	return idle, total, true
}
