package run

import (
	"sync"
	"time"

	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/schedule"
)

// A phase may end before its time once the evidence its verdicts rest on
// is in (EndEarly, docs/schedules.md#ending-early). The time limit and the
// recovery stay the upper bounds; ending early only ever happens on
// positive evidence, never because nothing happened:
//
//   - The run phase of a script ends once every step has acted (or can no
//     longer: not done), every fault's own length has run out (a pause's
//     duration), every claim and every call open at that moment has
//     ended (a release answered, a pause over, or its process crashed),
//     and Grants more acquires, asked for after that, were granted. A
//     violation the faults cause needs a holder the fault struck to act
//     again, or the next holder to be granted: both are waited for. A
//     script that needs more (a fault the script leaves in force until
//     the final heal, a violation that comes later still) does not end
//     early: its schedule does not ask for it.
//   - The recovery ends once every claim and call open at the final heal
//     has ended and every key acquired in the run has been granted again
//     by an acquire asked for after the heal: the grant is liveness's
//     evidence (checker/liveness.go: a success shows liveness however
//     short the window), and the aftermath of the faults is over. A key
//     that stays stuck keeps the recovery going to its full length, so
//     an unavailable key is still judged unavailable.
//
// The exposure rules (Config.Require) still judge whether the run tested
// anything: a run that ended before its fault struck a holder is not
// evidence, whatever it ended by.

// evidence follows a run's history as it is recorded (Recorder.Observe)
// and says whether a phase has what it needs. It is pure bookkeeping: the
// runner feeds it events and asks it at times of its choosing.
type evidence struct {
	mu sync.Mutex
	// claims are the lock claims in force, by process and key: an
	// acquire granted (or of unknown outcome) and not yet released.
	claims map[claimOf]bool
	// calls are the processes with an operation under way (a pause
	// included), each process one at a time.
	calls map[history.Process]bool
	// owner is the client a renewer thread acts for: its crash ends the
	// thread's calls too.
	owner   map[history.Process]history.Process
	crashed map[history.Process]bool
	// keys are the keys acquires asked for, at any time.
	keys map[string]bool

	// marked: the phase's mark is set. waiting are the claims and calls
	// open at the mark, not ended yet; cleared is when the last of them
	// ended (-1: not yet); grants count the acquires asked for after
	// cleared and granted; regranted are the keys granted by an acquire
	// asked for after the mark.
	marked    bool
	mark      int64
	waiting   map[claimOf]bool
	cleared   int64
	grants    int
	asked     map[history.Process]int64
	regranted map[string]bool
}

// claimOf names a claim, or (key "") a call of a process.
type claimOf struct {
	p   history.Process
	key string
}

func newEvidence() *evidence {
	return &evidence{claims: map[claimOf]bool{}, calls: map[history.Process]bool{}, owner: map[history.Process]history.Process{},
		crashed: map[history.Process]bool{}, keys: map[string]bool{}, asked: map[history.Process]int64{}}
}

// observe takes one event, in the order recorded.
func (e *evidence) observe(op history.Op) {
	if op.Process.IsNemesis() {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	p := op.Process
	if op.Owner != nil {
		e.owner[p] = *op.Owner
	}
	if op.F == history.FCrash {
		e.crash(p, op.Time)
		return
	}
	if e.crashed[p] || (op.Owner != nil && e.crashed[*op.Owner]) {
		return
	}
	if op.Type == history.Invoke {
		e.calls[p] = true
		if op.F == history.FAcquire {
			e.keys[op.Key] = true
			e.asked[p] = op.Time
		}
		return
	}
	delete(e.calls, p)
	e.ended(claimOf{p: p}, op.Time)
	switch op.F {
	case history.FAcquire:
		e.acquired(op)
	case history.FRelease:
		delete(e.claims, claimOf{p, op.Key})
		e.ended(claimOf{p, op.Key}, op.Time)
	}
}

// acquired takes an acquire's completion: a grant (or an outcome not
// known, which the workload gives back with a release) opens a claim.
func (e *evidence) acquired(op history.Op) {
	c := claimOf{op.Process, op.Key}
	if op.Type == history.Fail {
		return
	}
	e.claims[c] = true
	if op.Type != history.OK || !e.marked {
		return
	}
	asked := e.asked[op.Process]
	if asked > e.mark {
		e.regranted[op.Key] = true
	}
	if e.cleared >= 0 && asked > e.cleared {
		e.grants++
	}
}

// crash ends every claim and call of p and of its renewer threads: a
// crashed client never completes anything again.
func (e *evidence) crash(p history.Process, at int64) {
	e.crashed[p] = true
	for q, o := range e.owner {
		if o == p {
			e.crashed[q] = true
		}
	}
	for c := range e.claims {
		if e.crashed[c.p] {
			delete(e.claims, c)
		}
	}
	for q := range e.calls {
		if e.crashed[q] {
			delete(e.calls, q)
		}
	}
	for c := range e.waiting {
		if e.crashed[c.p] {
			e.ended(c, at)
		}
	}
}

// ended takes c, which ended at at, off the claims and calls the mark
// waits for.
func (e *evidence) ended(c claimOf, at int64) {
	if !e.marked || !e.waiting[c] {
		return
	}
	delete(e.waiting, c)
	if len(e.waiting) == 0 {
		e.cleared = at
	}
}

// setMark begins a phase's wait at run-clock time at: the claims and
// calls open now are what it waits for.
func (e *evidence) setMark(at int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.marked, e.mark, e.cleared, e.grants = true, at, -1, 0
	e.regranted = map[string]bool{}
	e.waiting = map[claimOf]bool{}
	for c := range e.claims {
		e.waiting[c] = true
	}
	for p := range e.calls {
		e.waiting[claimOf{p: p}] = true
	}
	if len(e.waiting) == 0 {
		e.cleared = at
	}
}

// settled reports whether the run phase has its evidence: the mark set,
// everything open then ended, and grants acquires asked for after that
// granted.
func (e *evidence) settled(grants int) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.marked && e.cleared >= 0 && e.grants >= grants
}

// recovered reports whether the recovery has its evidence: the mark (the
// final heal) set, everything open then ended, and every key acquires
// asked for granted by an acquire asked for after the mark.
func (e *evidence) recovered() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.marked || e.cleared < 0 || len(e.keys) == 0 {
		return false
	}
	for k := range e.keys {
		if !e.regranted[k] {
			return false
		}
	}
	return true
}

// faultsOver is how long after the start of the run phase the last of
// steps's faults is over: the latest moment a step acted, plus its
// fault's own length when it has one (a pause's or a stall's duration
// param). Steps not done count by their scripted time: no later than
// when they were given up.
func faultsOver(steps []schedule.Step) time.Duration {
	var out time.Duration
	for _, s := range steps {
		at := s.Struck
		if s.NotDone != "" && at == 0 {
			at = s.At
		}
		if d, err := time.ParseDuration(s.Params["duration"]); err == nil && s.NotDone == "" {
			at += d
		}
		out = max(out, at)
	}
	return out
}

// EndEarly says which phases of a run may end before their time once
// their evidence is in (see evidence). The zero value ends none early.
type EndEarly struct {
	// Run ends the run phase of a script early; Grants is how many
	// acquires, asked for once the faults' aftermath is over, must be
	// granted first (0: DefaultEndGrants).
	Run    bool `json:"run,omitempty"`
	Grants int  `json:"grants,omitempty"`
	// Recovery ends the recovery once every key is granted again.
	Recovery bool `json:"recovery,omitempty"`
}

// DefaultEndGrants is the grants a run phase that ends early waits for
// after its faults' aftermath: the first grant after it is where a lock
// the faults broke gives the lock away (the violation is that grant), and
// one more leaves room for the violation that a grant sets up (a retried
// release deleting the next holder's lock).
const DefaultEndGrants = 2

// grants is how many grants the run phase waits for.
func (e EndEarly) grants() int {
	if e.Grants > 0 {
		return e.Grants
	}
	return DefaultEndGrants
}

// evidencePoll is how often a phase that may end early asks whether its
// evidence is in.
const evidencePoll = 20 * time.Millisecond

// followEvidence makes the runner follow its history when a phase may end
// early.
func (r *runner) followEvidence() {
	if !r.cfg.EndEarly.Run && !r.cfg.EndEarly.Recovery {
		return
	}
	r.ev = newEvidence()
	r.rec.Observe(r.ev.observe)
}

// runSettled reports whether the run phase may end: the script over, its
// faults' own lengths run out (the mark is set then) and the evidence in.
func (r *runner) runSettled() bool {
	select {
	case <-r.scriptOver:
	default:
		return false
	}
	if !r.ev.isMarked() {
		r.executed.mu.Lock()
		over := r.executed.start.Add(faultsOver(r.executed.steps))
		r.executed.mu.Unlock()
		if time.Now().Before(over) {
			return false
		}
		r.ev.setMark(r.clock.Now())
	}
	return r.ev.settled(r.cfg.EndEarly.grants())
}

// isMarked reports whether the mark is set.
func (e *evidence) isMarked() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.marked
}
