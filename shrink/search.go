package shrink

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockharness/lockharness/schedule"
)

// DefaultRuns is how many runs judge a candidate when Options.Runs is 0.
const DefaultRuns = 3

// search is one search in progress.
type search struct {
	opt     Options
	try     Try
	start   time.Time
	res     Result
	current schedule.Schedule
	// failed are the changes that did not reproduce: one is not tried
	// again on a smaller schedule. A change that only works once another
	// has been made is missed; the search stays within a budget of
	// minutes, where trying every change again after every step would
	// not.
	failed map[string]bool
	lower  lower
}

// Search shrinks s, the schedule a run executed, against target: it
// judges s itself first (Result.Stopped is StopNotReproduced when most of
// its runs do not reproduce), then, greedily, the candidates of the
// smallest schedule found so far in the order Candidates gives them,
// keeping the first that reproduces in most of its runs and starting over
// from it, until none does or the budget runs out. A cancelled ctx ends
// the search with the best found so far (StopInterrupted). The error is
// Try's, when it is not ErrRefused; the result then holds the best so far
// too.
func Search(ctx context.Context, s schedule.Schedule, try Try, opt Options) (Result, error) {
	if opt.Runs <= 0 {
		opt.Runs = DefaultRuns
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	sr := &search{opt: opt, try: try, start: opt.Now(), current: s, failed: map[string]bool{}, lower: lower{}}
	sr.res.Before = Measure(s)
	sr.res.Best, sr.res.After = Clean(s), sr.res.Before
	if stop, err := sr.baseline(ctx, s); err != nil || stop != "" {
		sr.res.Stopped = stop
		return sr.res, err
	}
	for {
		kept, stop, err := sr.round(ctx)
		if err != nil || stop != "" {
			sr.res.Stopped = stop
			return sr.res, err
		}
		if !kept {
			sr.res.Stopped = StopDone
			return sr.res, nil
		}
	}
}

// baseline judges s itself. When most of its runs do not reproduce, s
// with its time-based faults awaiting a holder is judged next (a fault
// that struck a holder by chance in the run strikes one by design then);
// when that does not reproduce either, the search stops: StopNotReproduced.
func (sr *search) baseline(ctx context.Context, s schedule.Schedule) (Stop, error) {
	rep, of, stop, err := sr.judge(ctx, Candidate{Schedule: s, Change: "the schedule as it ran"})
	sr.res.Baseline = [2]int{rep, of}
	if err != nil || stop != "" || rep*2 > sr.opt.Runs {
		return stop, err
	}
	awaiting, ok := awaitAll(s)
	if !ok {
		return StopNotReproduced, nil
	}
	c := Candidate{Schedule: awaiting, Change: "the schedule as it ran, its faults awaiting a holder"}
	rep, _, stop, err = sr.judge(ctx, c)
	if err != nil || stop != "" {
		return stop, err
	}
	if rep*2 <= sr.opt.Runs {
		return StopNotReproduced, nil
	}
	sr.current = c.Schedule
	sr.res.Best, sr.res.After = Clean(c.Schedule), Measure(c.Schedule)
	sr.res.Changes = append(sr.res.Changes, c.Change)
	return "", nil
}

// round judges the candidates of the current schedule until one
// reproduces (kept) or none is left. A round that raised a lower bound
// counts as kept: the candidates it made were made without it, and the
// next round's try the values between the bound and the current one.
func (sr *search) round(ctx context.Context) (kept bool, stop Stop, err error) {
	raised := false
	for _, c := range candidates(sr.current, sr.lower) {
		if sr.failed[c.memo()] || (c.dim != "" && c.val <= sr.lower[c.dim]) {
			continue
		}
		rep, _, stop, err := sr.judge(ctx, c)
		if err != nil || stop != "" {
			return false, stop, err
		}
		if rep*2 > sr.opt.Runs {
			sr.current = c.Schedule
			sr.res.Best, sr.res.After = Clean(c.Schedule), Measure(c.Schedule)
			sr.res.Changes = append(sr.res.Changes, c.Change)
			return true, "", nil
		}
		sr.failed[c.memo()] = true
		if c.dim != "" && c.val > sr.lower[c.dim] {
			sr.lower[c.dim], raised = c.val, true
		}
	}
	return raised, "", nil
}

// judge runs candidate c until the majority of Options.Runs is decided,
// and reports it. stop is set when the budget ran out or ctx was
// cancelled before the majority was decided.
func (sr *search) judge(ctx context.Context, c Candidate) (rep, of int, stop Stop, err error) {
	a := Attempt{N: sr.res.Attempts + 1, Change: c.Change}
	defer func() {
		if stop == "" && err == nil {
			sr.res.Attempts++
			a.Reproduced, a.Of = rep, of
			a.Kept = a.N > 1 && rep*2 > sr.opt.Runs
			a.Best = sr.res.Best
			if a.Kept {
				a.Best = Clean(c.Schedule)
			}
			a.Size = Measure(a.Best)
			if sr.opt.Report != nil {
				sr.opt.Report(a)
			}
		}
	}()
	clean := Clean(c.Schedule)
	for rep*2 <= sr.opt.Runs && (of-rep)*2 < sr.opt.Runs {
		if stop = sr.exhausted(ctx); stop != "" {
			return rep, of, stop, nil
		}
		r, n, terr := sr.try(ctx, clean)
		if ctx.Err() != nil {
			return rep, of, StopInterrupted, nil
		}
		if errors.Is(terr, ErrRefused) {
			a.Refused = terr
			return 0, of, "", nil
		}
		if terr != nil {
			return rep, of, "", fmt.Errorf("run %q: %w", c.Change, terr)
		}
		if n <= 0 || r < 0 || r > n {
			return rep, of, "", fmt.Errorf("run %q: Try said %d of %d runs reproduced", c.Change, r, n)
		}
		rep, of, sr.res.Runs = rep+r, of+n, sr.res.Runs+n
	}
	return rep, of, "", nil
}

// exhausted says whether the search must stop before its next run.
func (sr *search) exhausted(ctx context.Context) Stop {
	switch {
	case ctx.Err() != nil:
		return StopInterrupted
	case sr.opt.Budget > 0 && sr.opt.Now().Sub(sr.start) >= sr.opt.Budget:
		return StopBudget
	case sr.opt.MaxRuns > 0 && sr.res.Runs >= sr.opt.MaxRuns:
		return StopRuns
	}
	return ""
}
