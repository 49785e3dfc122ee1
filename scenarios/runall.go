package scenarios

import (
	"context"
	"runtime"
	"sync"
)

// Exclusive reports whether the scenario must run with nothing beside it.
// Sentinel's failure detection and election run on timers of their own
// (down-after, failover timeouts) that a loaded machine stretches, so a
// Sentinel scenario gets the machine to itself; every other scenario's
// schedule is the harness's own and keeps its margins beside another.
func (s Scenario) Exclusive() bool { return s.Sentinel() }

// DefaultParallel is how many scenarios RunAll runs side by side by
// default: one per CPU. A scenario spends most of its time in scripted
// waits, so this fills the cores without starving any schedule.
func DefaultParallel() int { return max(1, runtime.NumCPU()) }

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
func RunAll(ctx context.Context, list []Scenario, opts Options, parallel int, done func(i int, r Result)) {
	runAll(ctx, list, parallel, func(s Scenario) (Outcome, error) { return Run(ctx, s, opts) }, done)
}

// runAll is RunAll with the run of one scenario passed in.
func runAll(ctx context.Context, list []Scenario, parallel int, run func(Scenario) (Outcome, error), done func(i int, r Result)) {
	parallel = max(1, parallel)
	results := make([]chan Result, len(list))
	for i := range results {
		results[i] = make(chan Result, 1)
	}
	slots := &slots{free: parallel}
	slots.cond = sync.NewCond(&slots.mu)

	// Side-by-side scenarios first, so that they start at once; the
	// exclusive ones then run alone.
	var order []int
	for pass := 0; pass < 2; pass++ {
		for i, s := range list {
			if s.Exclusive() == (pass == 1) {
				order = append(order, i)
			}
		}
	}
	go func() {
		for k, i := range order {
			s := list[i]
			need := 1
			if s.Exclusive() {
				need = parallel
			}
			if ctx.Err() != nil || !slots.take(ctx, need) {
				for _, j := range order[k:] {
					close(results[j])
				}
				return
			}
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

// slots is a counting semaphore whose waiters give up when ctx is done.
type slots struct {
	mu   sync.Mutex
	cond *sync.Cond
	free int
}

func (s *slots) take(ctx context.Context, n int) bool {
	stop := context.AfterFunc(ctx, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.cond.Broadcast()
	})
	defer stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.free < n && ctx.Err() == nil {
		s.cond.Wait()
	}
	if ctx.Err() != nil {
		return false
	}
	s.free -= n
	return true
}

func (s *slots) give(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.free += n
	s.cond.Broadcast()
}
