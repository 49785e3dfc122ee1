// Package shrink searches for a smaller schedule that still breaks a lock
// the same way: from the schedule an INVALID run executed, it tries
// candidates that drop fault steps, shorten the run and the faults, use
// fewer clients and keys and make time-based steps await a holder, and
// keeps a candidate only when it reproduces the same violation kind on the
// same checker in most of its runs (delta debugging, greedy: the first
// candidate that reproduces becomes the schedule the next candidates are
// made from).
//
// The package is pure: running a candidate is the Try function the caller
// gives (the command line runs it through the real run path; the tests
// give a fake), and the clock is Options.Now. The same schedule, the same
// answers of Try and the same clock give the same search.
package shrink

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/schedule"
)

// Target is the failure a candidate must reproduce: a fatal violation of
// this kind reported by this checker.
type Target struct {
	Checker string
	Kind    string
}

func (t Target) String() string { return t.Checker + "/" + t.Kind }

// checkerOrder ranks the checkers a target is chosen from: a broken lock
// promise is the story; the resource and liveness findings follow from it.
var checkerOrder = []string{checker.LockPromise, checker.Resource, checker.Liveness}

// Targets are the distinct failures among vs (its fatal violations), the
// lock-promise ones first, then resource, then liveness, each checker's in
// the order they first occur.
func Targets(vs []checker.Violation) []Target {
	var out []Target
	rank := func(c string) int {
		if i := slices.Index(checkerOrder, c); i >= 0 {
			return i
		}
		return len(checkerOrder)
	}
	for _, v := range vs {
		t := Target{v.Checker, v.Kind}
		if v.Fatal && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	slices.SortStableFunc(out, func(a, b Target) int { return rank(a.Checker) - rank(b.Checker) })
	return out
}

// Reproduces reports whether vs hold a fatal violation of target t.
func Reproduces(vs []checker.Violation, t Target) bool {
	for _, v := range vs {
		if v.Fatal && v.Checker == t.Checker && v.Kind == t.Kind {
			return true
		}
	}
	return false
}

// ErrRefused marks an error of Try that refuses the candidate itself (a
// configuration the run does not accept, such as a time limit too short
// for its steps): the candidate does not reproduce and the search goes on.
// Any other error of Try ends the search.
var ErrRefused = errors.New("candidate refused")

// Try runs schedule s and says in how many of its runs (of) the target
// failure came back (reproduced). One call may run s once (of 1) or more
// times; Search calls it until it has Options.Runs runs of a candidate or
// the majority is decided.
type Try func(ctx context.Context, s schedule.Schedule) (reproduced, of int, err error)

// Options bound and observe a search.
type Options struct {
	// Runs is how many runs judge a candidate (default 3); it is kept when
	// more than half of them reproduce.
	Runs int
	// Budget bounds the search's time (0: none) and MaxRuns the runs it
	// makes (0: none). Both are checked between runs: a run in progress
	// finishes.
	Budget  time.Duration
	MaxRuns int
	// Now is the clock the budget is measured with (default time.Now).
	Now func() time.Time
	// Report, when set, is told of each candidate judged.
	Report func(Attempt)
}

// Attempt is one candidate judged: the N-th, the change that made it, how
// many of its runs reproduced the target, whether it was kept, and the
// schedule the search holds after it (cleaned, see Clean) with its size.
type Attempt struct {
	N          int
	Change     string
	Reproduced int
	Of         int
	Kept       bool
	// Refused is why Try refused the candidate (ErrRefused).
	Refused error
	Best    schedule.Schedule
	Size    Size
}

// Stop says why a search ended.
type Stop string

// Why a search ended.
const (
	// StopDone: no candidate of the smallest schedule reproduces.
	StopDone Stop = "done"
	// StopBudget and StopRuns: the time or the runs ran out.
	StopBudget Stop = "budget"
	StopRuns   Stop = "runs"
	// StopInterrupted: ctx was cancelled.
	StopInterrupted Stop = "interrupted"
	// StopNotReproduced: the schedule as given did not reproduce the
	// target in most of its runs, so there is nothing to shrink from.
	StopNotReproduced Stop = "not reproduced"
)

// Result is what a search found.
type Result struct {
	// Best is the smallest schedule that reproduced (the given one,
	// cleaned of what its run recorded, when nothing smaller did), and
	// Changes the changes that made it, in order.
	Best    schedule.Schedule
	Changes []string
	// Before and After are the sizes of the given schedule and of Best.
	Before, After Size
	// Baseline is how many runs of the given schedule reproduced, of how
	// many.
	Baseline [2]int
	// Attempts are the candidates judged, the given schedule first; Runs
	// the runs they took.
	Attempts int
	Runs     int
	Stopped  Stop
}

// Size is what shrinking makes smaller.
type Size struct {
	Steps   int
	Length  time.Duration // the run phase and the recovery
	Clients int
	Keys    int
}

func (z Size) String() string {
	return fmt.Sprintf("%d steps, %v run + recovery, %d clients, %d keys", z.Steps, z.Length, z.Clients, z.Keys)
}

// Measure is the size of s.
func Measure(s schedule.Schedule) Size {
	return Size{Steps: len(s.Steps), Length: s.TimeLimit + s.Recovery, Clients: s.Workload.Clients, Keys: s.Workload.Keys}
}

// Clean is s without what its run recorded of its steps (when each
// struck, what its await waited for, why it did not act): the schedule as
// a replay runs it, and as a file to give a user.
func Clean(s schedule.Schedule) schedule.Schedule {
	s = clone(s)
	for i := range s.Steps {
		st := &s.Steps[i]
		st.Struck, st.Waited, st.Holder, st.NotDone = 0, 0, "", ""
	}
	return s
}
