package run

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/reports"
)

// waitRun waits out the time limit, unless ctx ends first (interrupted)
// or the workload does: every client gone, each because its lock broke
// (an adapter that crashed at start or broke the protocol; see
// workloads.Mutex's client loop), so that nothing is left to test and the
// run stops at once instead of waiting out the limit. The workload's
// error is put back for teardown.
func (r *runner) waitRun(ctx context.Context) (interrupted bool) {
	t := time.NewTimer(r.cfg.TimeLimit)
	defer t.Stop()
	var poll <-chan time.Time
	if r.ev != nil && r.cfg.EndEarly.Run {
		tick := time.NewTicker(evidencePoll)
		defer tick.Stop()
		poll = tick.C
	}
	for {
		select {
		case <-ctx.Done():
			return true
		case <-t.C:
			return false
		case <-poll:
			if r.runSettled() {
				fmt.Fprintf(r.log, "run       ended early at %s: the script done, its faults over and their evidence in\n", r.executed.since(time.Now()))
				return false
			}
		case err := <-r.wlDone:
			return r.clientsEnded(ctx, err)
		}
	}
}

// clientsEnded is the end of the run phase when the workload ended
// before it with err.
func (r *runner) clientsEnded(ctx context.Context, err error) (interrupted bool) {
	r.wlDone <- err
	r.clientsGone = err != nil
	if !r.clientsGone { // ended without an error: only ctx ends it so
		return !wait(ctx, time.Until(r.start.Add(r.cfg.TimeLimit)))
	}
	fmt.Fprintf(r.log, "run       every client's lock broke: the run stops early\n")
	return false
}

// maxLostReasons bounds the clients' errors a lost run's reason quotes.
const maxLostReasons = 3

// lostReason is the workload's error in one line: each client's, the
// first few, joined.
func lostReason(err error) string {
	var parts []string
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			parts = append(parts, e.Error())
		}
	} else {
		parts = strings.Split(err.Error(), "\n")
	}
	slices.Sort(parts) // the clients in order, whichever broke first
	if n := len(parts); n > maxLostReasons {
		parts = append(parts[:maxLostReasons], fmt.Sprintf("and %d more clients", n-maxLostReasons))
	}
	return strings.ReplaceAll(strings.Join(parts, "; "), "\n", " ")
}

// nothingTested is the error of a run whose clients all broke before any
// of them completed an acquire: there is no evidence to judge.
func (r *runner) nothingTested(res checker.Result) error {
	if r.lost == nil {
		return nil
	}
	for _, n := range res.Counts["acquire"] { // the final reads are the harness's own
		if n > 0 {
			return nil
		}
	}
	return &lostError{msg: fmt.Sprintf("nothing could be tested: %s (the run's history and the adapters' logs are in %s)", lostReason(r.lost), r.dir), err: r.lost}
}

// lostError is a run that tested nothing: its message in one line, the
// clients' errors inside.
type lostError struct {
	msg string
	err error
}

func (e *lostError) Error() string { return e.msg }
func (e *lostError) Unwrap() error { return e.err }

// judgeLost makes the verdict of a run whose clients' locks broke
// mid-run unknown, with the reason, unless the lock promise or the
// resource was found broken in what was recorded: a violation in the
// kept history stands, but a valid verdict, or a liveness failure (the
// clients stopped), is not evidence about the time the run lost.
func (r *runner) judgeLost(res checker.Result) checker.Result {
	if r.lost == nil {
		return res
	}
	why := "the run's evidence was lost: " + lostReason(r.lost) + "; the history up to then is kept and checked"
	if res.Checkers[checker.LockPromise].Verdict == checker.Invalid || res.Checkers[checker.Resource].Verdict == checker.Invalid {
		return res
	}
	res.Verdict = checker.Unknown
	if res.Reason != "" {
		why += "; " + res.Reason
	}
	res.Reason = why
	return res
}

// markLost says in the run's record why its results are incomplete.
func (r *runner) markLost(rec *reports.Record) {
	if r.lost != nil && rec.Partial == "" {
		rec.Partial = "the run's evidence was lost: " + lostReason(r.lost)
	}
}
