package checker

import (
	"fmt"
	"strings"

	"github.com/lockharness/lockharness/history"
)

// DisturbedPrefix begins Result.Reason when a valid verdict became unknown
// because a server exited without the harness asking.
const DisturbedPrefix = "disturbed: "

// disturbances lists, in words, each unplanned server exit the history
// records (history.FServerExit among the nemesis events nem), in order:
// "n1 exited unexpectedly at 3.2 s".
func disturbances(nem []history.Op) []string {
	var out []string
	for _, op := range nem {
		if op.F != history.FServerExit || op.Value == nil {
			continue
		}
		for _, n := range op.Value.Targets {
			out = append(out, fmt.Sprintf("%s exited unexpectedly at %.1f s", n, float64(op.Time)/1e9))
		}
	}
	return out
}

// judgeDisturbance names in the coverage every server exit nobody planned
// (a server killed from outside, or crashed, and brought back by the next
// heal) and makes a valid verdict unknown. Why not valid: the run then
// tested the lock under a fault its configuration does not describe, at a
// moment nobody chose, so it is not the run its reproduce line replays,
// and a run that reads as clean must have been one; the checkers' own
// verdicts stand (a correct lock stays valid in each), and Coverage says
// what happened. Why not invalid: nothing the lock did is wrong. An
// invalid verdict stays invalid: a violation is a fact whatever else
// happened, and the disturbance is named beside it.
func judgeDisturbance(res *Result, nem []history.Op) {
	res.Coverage.Disturbed = disturbances(nem)
	if res.Verdict != Valid || len(res.Coverage.Disturbed) == 0 {
		return
	}
	res.Verdict = Unknown
	res.Reason = DisturbedPrefix + strings.Join(res.Coverage.Disturbed, "; ") +
		" (no fault planned it): the checkers found no violation, but the run is not the one its configuration describes"
}
