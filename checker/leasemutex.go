package checker

import (
	"context"
	"fmt"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/lockharness/lockharness/history"
)

// LeaseOpKind is what a lease-mutex operation does to the model.
type LeaseOpKind uint8

// The lease-mutex operations.
const (
	// LeaseNoop is a failed or unknown acquire or renew: legal in every
	// state, changing nothing. (An unknown acquire that did happen could
	// only have made the key held by its process; a free key allows
	// everything a held one does, so "it did not happen" is always the
	// more permissive choice and porcupine loses nothing by taking it.
	// The checker therefore leaves them out; visualisations show them.)
	LeaseNoop LeaseOpKind = iota
	// LeaseGrant is an acquire ok or renew ok: the process now holds the
	// key until Deadline.
	LeaseGrant
	// LeaseRelease is a release ok.
	LeaseRelease
	// LeaseGiveUp is a release that failed or whose outcome is unknown:
	// either way the process stopped claiming the key when it invoked it.
	LeaseGiveUp
	// LeaseLost is a release or renew that the lock answered with a
	// definite "not held" about the lease in force (see claim): legal only
	// if the process does not hold the key or its lease has run out by the
	// answer's completion. A release that was answered so also gives up.
	LeaseLost
)

// LeaseOp is the input of one lease-mutex operation. Instants are a
// run-clock time and a history index (see instant).
type LeaseOp struct {
	Kind    LeaseOpKind
	F       string       // acquire, renew or release, for descriptions
	Type    history.Type // its completion, for descriptions
	Process int
	// Deadline of a grant in run-clock ns; never (math.MaxInt64) for a
	// lease without expiry.
	Deadline int64
	// Call and CallIndex: the invocation.
	Call, CallIndex int64
	// Return and ReturnIndex: the completion, the latest instant the
	// operation can have taken effect (both math.MaxInt64 when it never
	// completed).
	Return, ReturnIndex int64
}

func (in LeaseOp) called() instant   { return instant{in.Call, in.CallIndex} }
func (in LeaseOp) returned() instant { return instant{in.Return, in.ReturnIndex} }

// LeaseState is the lease-mutex state: who holds the key and until when,
// and when the last operation took effect.
//
// Holder -1 is free. A holder whose lease has run out is kept (expiry is
// judged when the next operation takes effect). The lease runs out at the
// instant (Deadline, DeadlineIndex): DeadlineIndex is -1 for a lease
// deadline (before every event of that nanosecond), an event's index when
// a grant that expired on arrival cut the lease short at that event.
//
// (Now, NowIndex) is the instant the last operation took effect: the model
// is timed, because whether a lease has run out depends on when an
// operation happens, and an operation ordered after another cannot happen
// before it.
type LeaseState struct {
	Holder        int
	Deadline      int64
	DeadlineIndex int64
	Now, NowIndex int64
}

func (s LeaseState) runsOut() instant { return instant{s.Deadline, s.DeadlineIndex} }

var leaseFree = LeaseState{Holder: -1, DeadlineIndex: -1, Now: -1 << 63, NowIndex: -1}

// LeaseStep is the lease-mutex transition. It is the claim definition of
// buildClaims in sequential form, and the property test holds them to
// agreeing.
//
// Each operation takes effect at one instant between its invocation and its
// completion, and not before the previous operation in the linearization
// did; the step picks the earliest such instant at which the operation is
// legal (legality only grows with time and an earlier instant leaves more
// room to what follows, so that choice loses nothing). "The lease has run
// out by t" compares instants.
//
//   - a grant by p is legal once the key is free, held by p, or its
//     holder's lease has run out; afterwards p holds it until the grant's
//     deadline, or until its own lease's if p held the key with a later
//     one (extensions never shorten). A grant whose deadline is not after
//     its own return promises nothing: it is legal and changes nothing.
//   - a release ok by p is legal once the key is free, held by p, or its
//     holder's lease has run out (it then removed an expired key);
//     afterwards the key is free.
//   - a release that failed or is unknown is legal; if p held the key it is
//     free afterwards (p's claim ended when it invoked the release).
//   - a "not held" answer to p (LeaseLost) is legal unless p holds the key
//     with a lease that runs out after the answer's return; a release so
//     answered then gives up as above, a renew changes nothing.
//   - a no-op is legal and changes nothing. Renews absorbed by their
//     process's release (see claim) are no-ops.
func LeaseStep(s LeaseState, in LeaseOp) (bool, LeaseState) {
	at := instant{s.Now, s.NowIndex}
	if c := in.called(); at.less(c) {
		at = c
	}
	ret := in.returned()
	if ret.less(at) {
		return false, s
	}
	// when is the earliest instant ≥ at by which the key is free for p.
	when := at
	if s.Holder != -1 && s.Holder != in.Process && at.less(s.runsOut()) {
		when = s.runsOut()
	}
	switch in.Kind {
	case LeaseGrant:
		d := deadlineAt(in.Deadline)
		if !ret.less(d) {
			// It promises nothing and changes nothing.
			s.Now, s.NowIndex = at.t, at.i
			return true, s
		}
		if ret.less(when) {
			return false, s
		}
		next := LeaseState{Holder: in.Process, Deadline: in.Deadline, DeadlineIndex: -1, Now: when.t, NowIndex: when.i}
		if s.Holder == in.Process && when.less(s.runsOut()) && d.less(s.runsOut()) {
			// A live lease is extended, never shortened.
			next.Deadline, next.DeadlineIndex = s.Deadline, s.DeadlineIndex
		}
		return true, next
	case LeaseRelease:
		if ret.less(when) {
			return false, s
		}
		return true, LeaseState{Holder: -1, DeadlineIndex: -1, Now: when.t, NowIndex: when.i}
	case LeaseLost:
		if s.Holder == in.Process && ret.less(s.runsOut()) {
			return false, s
		}
		if in.F == history.FRelease && s.Holder == in.Process {
			s.Holder, s.Deadline, s.DeadlineIndex = -1, 0, -1
		}
	case LeaseGiveUp:
		if s.Holder == in.Process {
			s.Holder, s.Deadline, s.DeadlineIndex = -1, 0, -1
		}
	}
	s.Now, s.NowIndex = at.t, at.i
	return true, s
}

// LeaseMutexModel is the "lease mutex" porcupine model of DESIGN.md for
// one key's operations (inputs are LeaseOp, outputs are ignored; pass nil).
// It has no Partition: the checker partitions by key itself.
func LeaseMutexModel() porcupine.Model {
	return leaseModel(leaseFree)
}

func leaseModel(init LeaseState) porcupine.Model {
	return porcupine.Model{
		Init: func() any { return init },
		Step: func(state, input, _ any) (bool, any) {
			return LeaseStep(state.(LeaseState), input.(LeaseOp))
		},
		Hash: func(state any) uint64 {
			s := state.(LeaseState)
			return uint64(s.Holder+1)*0x9e3779b97f4a7c15 ^ uint64(s.Deadline) ^ uint64(s.DeadlineIndex)<<17 ^ uint64(s.NowIndex)*0xbf58476d1ce4e5b9
		},
		DescribeOperation: func(input, _ any) string { return describeLeaseOp(input.(LeaseOp)) },
		DescribeState:     func(state any) string { return describeLeaseState(state.(LeaseState)) },
	}
}

func describeLeaseOp(in LeaseOp) string {
	s := fmt.Sprintf("p%d %s %s", in.Process, in.F, in.Type)
	if in.Kind == LeaseGrant {
		s += " until " + secs(in.Deadline)
	}
	return s
}

func describeLeaseState(s LeaseState) string {
	if s.Holder == -1 {
		return "free"
	}
	return fmt.Sprintf("held by p%d until %s", s.Holder, secs(s.Deadline))
}

// leaseOps is key's lease-mutex history, with history indexes as
// porcupine's clock (see instant). With noops, failed and unknown acquires
// and renews are included (for pictures); the checker leaves them out (see
// LeaseNoop). An operation that never completed returns at MaxInt64, except
// where that cannot matter (noops, give-ups), to keep the search and the
// pictures small.
func leaseOps(p *prepared, key string, noops bool) []porcupine.Operation {
	return boxLeaseOps(leaseInputs(nil, p, p.callsOf(key), noops))
}

// leaseInput is one operation of leaseOps before porcupine's boxing: its
// input, client, call and return.
type leaseInput struct {
	in        LeaseOp
	client    int
	call, ret int64
}

// boxLeaseOps is ins as porcupine's operations.
func boxLeaseOps(ins []leaseInput) []porcupine.Operation {
	out := make([]porcupine.Operation, len(ins))
	for i, li := range ins {
		out[i] = porcupine.Operation{ClientId: li.client, Input: li.in, Call: li.call, Return: li.ret}
	}
	return out
}

// leaseInputs is leaseOps before boxing, of the key whose calls (their
// places in p.calls, p.keyCalls') are calls, in buf's array if it has
// room (a caller going key by key reuses one).
func leaseInputs(buf []leaseInput, p *prepared, calls []int, noops bool) []leaseInput {
	out := buf[:0]
	if cap(out) < len(calls) {
		out = make([]leaseInput, 0, len(calls)) // at most one each
	}
	for _, i := range calls {
		c := &p.calls[i]
		in := LeaseOp{F: c.f, Type: c.typ, Process: c.proc, Call: c.start, CallIndex: c.inv, Return: c.end, ReturnIndex: c.done}
		if !c.completed() {
			in.ReturnIndex = never
		}
		ret := in.ReturnIndex
		switch c.f {
		case history.FAcquire, history.FRenew:
			if c.lost {
				in.Kind = LeaseLost
			} else if c.typ == history.OK && !c.absorbed {
				in.Kind = LeaseGrant
				in.Deadline = never
				if c.out != nil && c.out.Deadline != 0 {
					in.Deadline = c.out.Deadline
				}
			} else if !noops {
				continue
			} else if !c.completed() {
				ret = p.lastIndex
				in.Return, in.ReturnIndex = p.last, p.lastIndex
			}
		case history.FRelease:
			in.Kind = LeaseGiveUp
			switch {
			case c.typ == history.OK:
				in.Kind = LeaseRelease
			case c.lost:
				in.Kind = LeaseLost
			case !noops || !c.completed():
				// A release that failed, whose outcome is unknown, or
				// that never completes (its process crashed with it in
				// flight, or the history ended first) gives up at its
				// invocation: the claims' definition (any release ends
				// its claim at its invocation), and the one instant in
				// its interval the check needs. Placing it there loses
				// nothing: giving up only ever frees a key its process
				// holds; a free key allows every step a held one does,
				// for every process; its own process records nothing
				// until it completes (forever, after a crash) but its
				// watchdog's renews, which markRenewals absorbs (no-ops);
				// and every operation placed after it that began before
				// the invocation is placed no earlier than in a
				// linearization that gave up later (legality in LeaseStep
				// only grows with time). What the interval would cost: a
				// give-up is legal anywhere, so porcupine tried it at
				// every point of an interval that a timed-out release
				// stretches over seconds, each point a state of its own
				// (the state holds the instant), and a run of 50 clients
				// under latency and clock faults made it search one
				// 256-operation chunk for 30 s and say unknown (issue
				// 27); a release that never completes, at MaxInt64,
				// would leave no quiescent cut after it (quiescentChunks).
				// Pictures (noops) show a completed one's interval; the
				// property test holds both to the same verdict.
				ret = c.inv
				in.Return, in.ReturnIndex = c.start, c.inv
			}
		default:
			continue
		}
		out = append(out, leaseInput{in: in, client: c.proc, call: c.inv, ret: ret})
	}
	return out
}

// sequentialLease reports whether ins (a key's, from init) is sequential
// and legal: each operation returns before the next is called, and the
// model takes every step. That is checkOwnModel's Ok, as sequential finds
// it (ins sequential are sorted by call, as it sorts them; it steps the
// same pure model, which a done ctx would make accept everything: so
// ctx must not be done by the end, nor the deadline passed), without
// boxing every operation for porcupine, which most keys of a run of many
// keys never need. false: check them with checkOwnModel. deadline is the
// caller's, made once for all of a window's keys (reading the clock twice
// a key was a fiftieth of the check of a million keys): no later than
// porcupine's for this key would be, so the replay says Ok only where
// porcupine would have had the time to.
func sequentialLease(ctx context.Context, init LeaseState, ins []leaseInput, deadline time.Time) bool {
	if ctx.Err() != nil {
		return false
	}
	s := init
	for i := range ins {
		if i > 0 && ins[i-1].ret >= ins[i].call {
			return false
		}
		ok, next := LeaseStep(s, ins[i].in)
		if !ok {
			return false
		}
		s = next
	}
	return ctx.Err() == nil && !time.Now().After(deadline)
}
