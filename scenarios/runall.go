package scenarios

import (
	"cmp"
	"context"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/sut"
)

// Exclusive reports whether the scenario must run with nothing beside it.
// Sentinel's failure detection and election run on timers of their own
// (down-after, failover timeouts) that a loaded machine stretches, so a
// Sentinel scenario gets the machine to itself; every other scenario's
// schedule is the harness's own and keeps its margins beside another.
func (s Scenario) Exclusive() bool { return s.Sentinel() }

// DefaultParallel is how many scenarios RunAll runs side by side at most
// by default: three per CPU. A scenario spends most of its time in
// scripted waits: two Redis scenarios took 1.65s of CPU, the harness's and
// its servers', in 12.2s (about 0.14 CPU each), so six on two cores use
// well under one, and RunAll starts another only while a CPU's worth is
// idle (see RunAll). Measured on a quiet two-core machine, the 23
// scenarios of the first part of the catalogue: 153s one after another,
// 88s two at a time, 57–72s four, 47–53s six. On another machine of the
// kind the same part took 134s with six, one at a time, until the room was
// judged over a second (see room.go): 56s.
func DefaultParallel() int { return max(1, 3*runtime.NumCPU()) }

// Result is one scenario's run in RunAll.
type Result struct {
	Outcome Outcome
	Err     error
}

// RunAll runs the scenarios of list, up to parallel at a time and the
// exclusive ones alone, and calls done for each in the order of list, as
// soon as it and every one before it have finished: the output reads as
// if they ran one after another. Scenarios are independent (each has its
// own topology on its own ports, and its own run directory). Once ctx is
// done no scenario starts; those that never started are not reported.
//
// A scenario starts beside others only when the machine has room: a CPU's
// worth of idle time, the median of five 200ms windows, three of them at
// least taken after the start before it (or after the refusal it waited
// on; see room.go); without it, it asks again once one of them ends, or a
// second later if none has (roomAgain). On a machine loaded by something
// else (CI neighbours, a CPU-load soak) the scenarios run one after
// another, as they always have, rather than starve each other's schedules.
func RunAll(ctx context.Context, list []Scenario, opts Options, parallel int, done func(i int, r Result)) {
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	smp := newSampler(roomWindows, roomWindow)
	go smp.run(sctx, idleCPUs)
	runAll(ctx, list, parallel, smp.room(sctx), func(s Scenario) (Outcome, error) { return Run(ctx, s, opts) }, done)
}

// runAll is RunAll with the machine's room and the run of one scenario
// passed in: room(since) judges the room on the windows taken since the
// last start, or since the end or the second a refusal waited for.
func runAll(ctx context.Context, list []Scenario, parallel int, room func(since time.Time) bool, run func(Scenario) (Outcome, error), done func(i int, r Result)) {
	parallel = max(1, parallel)
	results := make([]chan Result, len(list))
	for i := range results {
		results[i] = make(chan Result, 1)
	}
	slots := &slots{free: parallel, total: parallel}
	slots.cond = sync.NewCond(&slots.mu)

	order := startOrder(list)
	go func() {
		var event time.Time // the last start, or the end or second a refusal waited for
		for k, i := range order {
			s := list[i]
			need := 1
			if s.Exclusive() {
				need = parallel // alone
			} else {
				// No room: ask again once a running scenario ends, or a
				// judgement's length later, whichever comes first; with
				// none running, start. Under load that lasts they run one
				// after another; a moment without room (another's start)
				// waits only until it has passed.
				for ctx.Err() == nil {
					gen, busy := slots.state()
					if !busy || room(event) {
						break
					}
					refused := time.Now()
					if slots.waitGive(ctx, gen, roomAgain) {
						event = time.Now() // an end: judged on what followed it
					} else {
						event = refused // judged on the windows since the refusal: four or five by now
					}
				}
			}
			if ctx.Err() != nil || !slots.take(ctx, need) {
				for _, j := range order[k:] {
					close(results[j])
				}
				return
			}
			event = time.Now()
			go func() {
				defer slots.give(need)
				o, err := run(s)
				results[i] <- Result{Outcome: o, Err: err}
			}()
		}
	}()
	for i := range list {
		if r, ok := <-results[i]; ok {
			done(i, r)
		}
	}
}

// startOrder is the order runAll starts list in (indexes into list): the
// side-by-side scenarios first, in the order below, then the exclusive
// ones alone, in the order of list.
//
// A scenario that finds no room waits for a running one to end, so what
// costs wall time is a start-up burst at a moment when only long
// scenarios run, and a long scenario started last. The side-by-side ones
// start in this order:
//
//   - leadLight light scenarios (see startUp), the longest first: the
//     first scenario starts without asking for room, and the one after it
//     is judged while the first starts; a heavy one there would leave
//     nothing but itself to end;
//   - then each heavy one, the heaviest start-up first (ZooKeeper's three
//     JVMs), then the longest, each followed by heavyGap light ones: their
//     runs end while the heavy ones still run, and each end asks for room
//     again;
//   - then the rest of the light ones, the longest first, so that the
//     last to start end soon after it (one that starts last and runs 15s
//     is 15s of wall with nothing else to start).
//
// In the order of the catalogue (Redis first, then Redis Cluster, etcd,
// ZooKeeper, MariaDB) the ZooKeeper ones started beside the long etcd and
// cluster ones, each waited 4–6s for room, and the MariaDB ones waited for
// the last ZooKeeper one (a quiet two-core machine, 2026-11-28: 113s, of
// which the Redis ones took the first 44s).
func startOrder(list []Scenario) []int {
	var heavy, light, exclusive []int
	for i, s := range list {
		_, burst := s.startUp()
		switch {
		case s.Exclusive():
			exclusive = append(exclusive, i)
		case burst > 0:
			heavy = append(heavy, i)
		default:
			light = append(light, i)
		}
	}
	longest := func(a, b int) int { return cmp.Compare(list[b].cost(), list[a].cost()) }
	slices.SortStableFunc(light, longest)
	slices.SortStableFunc(heavy, func(a, b int) int {
		_, ba := list[a].startUp()
		_, bb := list[b].startUp()
		return cmp.Or(cmp.Compare(bb, ba), longest(a, b))
	})
	order := make([]int, 0, len(list))
	take := func(n int) {
		n = min(n, len(light))
		order = append(order, light[:n]...)
		light = light[n:]
	}
	if len(heavy) > 0 {
		take(leadLight)
	}
	for _, h := range heavy {
		order = append(order, h)
		take(heavyGap)
	}
	take(len(light))
	return append(order, exclusive...)
}

// leadLight and heavyGap shape startOrder: the light scenarios that start
// before the first heavy one, and after each heavy one. Three after each
// since a start costs three windows instead of five (room.go): on the
// model of the scheduler that chose four (fitted to a quiet run), the
// catalogue took 2-5s less with three, quiet or with a quarter of a CPU
// busy besides, with ZooKeeper's start-ups as measured or shorter, and
// with every scenario 10-15% shorter.
const (
	leadLight = 4
	heavyGap  = 3
)

// cost is about how long the scenario takes: its start-up and its scripted
// phases (Duration, the upper bounds).
func (s Scenario) cost() time.Duration {
	d, _ := s.startUp()
	return d + s.Duration()
}

// startUp is about how long the scenario's deployment takes to start on a
// quiet two-core machine, and how much of a burst that start is: 0 for a
// few redis-server processes or one MariaDB server (its data directory is
// a copy), 1 for a Redis Cluster's six servers or etcd's three members,
// which take seconds (mostly waiting for each other, 0.1–0.3 of a CPU),
// and 2 for ZooKeeper's three JVMs, which take 2–3 CPU-seconds in about
// 2s. Measured in catalogue runs (2026-11-28, harness.log's setup phase):
// ZooKeeper 2.4–3.7s, Redis Cluster 3–3.6s, etcd 1.1–3.2s, MariaDB
// 0.3–0.9s, Redis 0.1–0.3s.
func (s Scenario) startUp() (d time.Duration, burst int) {
	sys := locks.SystemRedis
	if info, err := s.ownRegistry().Lookup(s.Lock); err == nil {
		sys = info.SystemName()
	}
	switch sys {
	case locks.SystemZooKeeper:
		return 3 * time.Second, 2
	case locks.SystemEtcd:
		return 2 * time.Second, 1
	case locks.SystemMariaDB:
		return 500 * time.Millisecond, 0
	case locks.SystemRedis:
		if s.Run.Cluster.WithDefaults().Topology == sut.RedisCluster {
			return 3 * time.Second, 1
		}
	}
	return 200 * time.Millisecond, 0
}

// slots is a counting semaphore whose waiters give up when ctx is done.
type slots struct {
	mu          sync.Mutex
	cond        *sync.Cond
	free, total int
	gen         int // gives so far
}

// state is the number of gives so far and whether any slot is taken.
func (s *slots) state() (gen int, busy bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gen, s.free < s.total
}

// waitGive waits until a slot has been given back since gen, or for d,
// or until ctx is done, and reports whether a slot was given back.
func (s *slots) waitGive(ctx context.Context, gen int, d time.Duration) bool {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.wait(ctx, func() bool { return s.gen != gen })
}

// take takes n slots once they are free, unless ctx is done first.
func (s *slots) take(ctx context.Context, n int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.wait(ctx, func() bool { return s.free >= n }) {
		return false
	}
	s.free -= n
	return true
}

// wait, called with s.mu held, waits until ready() or ctx is done, and
// reports whether ready() came first.
func (s *slots) wait(ctx context.Context, ready func() bool) bool {
	stop := context.AfterFunc(ctx, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.cond.Broadcast()
	})
	defer stop()
	for !ready() && ctx.Err() == nil {
		s.cond.Wait()
	}
	return ctx.Err() == nil
}

func (s *slots) give(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.free += n
	s.gen++
	s.cond.Broadcast()
}
