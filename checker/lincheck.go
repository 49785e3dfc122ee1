package checker

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/anishathalye/porcupine"
)

// linResult is porcupine's verdict on one key's history under one model.
type linResult struct {
	res porcupine.CheckResult
	// For Illegal: the operations of the check that failed and its
	// linearization info (to name the operation that cannot be placed).
	ops  []porcupine.Operation
	info porcupine.LinearizationInfo
	// For Unknown: why.
	reason string
}

// chunkMin is the fewest operations a chunk holds before it may be cut.
const chunkMin = 256

// maxWhole bounds the operations porcupine checks in one go after a chunk
// failed: its search copies a bitset of the whole history per step, so
// memory grows with the square of the length (50k operations: ~300 MB).
const maxWhole = 50_000

// checkLinearizable runs porcupine on ops (one key, one model) within
// timeout, in chunks. Porcupine's search copies a bitset of the whole
// history on every step, which is quadratic on long histories, so the
// history is cut at quiescent points (every earlier operation returned
// before any later one was called) and each chunk is checked from the state
// the previous chunk's linearization ended in. That is sound for Ok: the
// linearizations concatenate. It is not for Illegal after the first chunk
// (another linearization of the prefix might end in a state that works), so
// then the prefix up to that chunk is checked in one go, within maxWhole.
//
// ctx cancellation makes the model accept everything so porcupine unwinds
// at once; the result is then Unknown.
func checkLinearizable(ctx context.Context, model porcupine.Model, ops []porcupine.Operation, timeout time.Duration) linResult {
	return checkLin(ctx, model, ops, timeout, false)
}

// checkOwnModel is checkLinearizable of one of the checker's own models
// (the lease mutex, the counter), whose steps are pure and take no time,
// so that a short sequential history is stepped through on the caller's
// goroutine (see seqInline): a model that may block in a step needs the
// goroutine to return when ctx is done.
func checkOwnModel(ctx context.Context, model porcupine.Model, ops []porcupine.Operation, timeout time.Duration) linResult {
	return checkLin(ctx, model, ops, timeout, true)
}

// checkLin is checkLinearizable; pure says the model's steps never block.
func checkLin(ctx context.Context, model porcupine.Model, ops []porcupine.Operation, timeout time.Duration, pure bool) linResult {
	if len(ops) == 0 {
		return linResult{res: porcupine.Ok}
	}
	l := newLinCheck(ctx, model, ops, timeout)
	switch sequential(ctx, l.model, l.ops, l.deadline, pure) {
	case seqOk:
		return linResult{res: porcupine.Ok}
	case seqOutOfTime:
		return l.unknown()
	}
	chunks := quiescentChunks(l.ops)
	if len(chunks) == 1 {
		return l.whole(len(l.ops))
	}
	return l.chunked(chunks)
}

// linCheck is one run of checkLinearizable: the operations sorted by
// call, the model whose steps accept everything once ctx is done, and
// the deadline.
type linCheck struct {
	ctx      context.Context
	model    porcupine.Model
	ops      []porcupine.Operation
	timeout  time.Duration
	deadline time.Time
}

func newLinCheck(ctx context.Context, model porcupine.Model, ops []porcupine.Operation, timeout time.Duration) linCheck {
	byCall := func(a, b porcupine.Operation) int { return cmp.Compare(a.Call, b.Call) }
	if !slices.IsSortedFunc(ops, byCall) {
		// Sorted, not in place: ops is the caller's. (Sorted already, as
		// most are, it is only read, as the caller's is.)
		ops = slices.Clone(ops)
		slices.SortStableFunc(ops, byCall)
	}
	step := model.Step
	model.Step = func(s, in, out any) (bool, any) {
		if ctx.Err() != nil {
			return true, s
		}
		return step(s, in, out)
	}
	return linCheck{ctx: ctx, model: model, ops: ops, timeout: timeout, deadline: time.Now().Add(timeout)}
}

// unknown is the result of a check that was cancelled or ran out of time.
func (l *linCheck) unknown() linResult {
	if l.ctx.Err() != nil {
		return linResult{res: porcupine.Unknown, reason: "cancelled: " + context.Cause(l.ctx).Error()}
	}
	return linResult{res: porcupine.Unknown, reason: "porcupine timed out after " + l.timeout.String()}
}

// whole checks the prefix ops[:n] from the initial state: a prefix cut at
// a quiescent point is linearizable if the whole history is.
func (l *linCheck) whole(n int) linResult {
	left := time.Until(l.deadline)
	if left <= 0 || l.ctx.Err() != nil {
		return l.unknown()
	}
	if n > maxWhole {
		return linResult{res: porcupine.Unknown, reason: fmt.Sprintf("porcupine would have to re-check %d operations in one go (more than %d)", n, maxWhole)}
	}
	res, info := porcupineCheck(l.ctx, l.model, l.ops[:n], left)
	if l.ctx.Err() != nil || res == porcupine.Unknown {
		return l.unknown()
	}
	return linResult{res: res, ops: l.ops[:n], info: info}
}

// chunked checks the chunks one after the other, each from the state the
// linearization of the one before ended in.
func (l *linCheck) chunked(chunks [][]porcupine.Operation) linResult {
	state := l.model.Init()
	done := 0
	for i, ch := range chunks {
		done += len(ch)
		left := time.Until(l.deadline)
		if left <= 0 || l.ctx.Err() != nil {
			return l.unknown()
		}
		m := l.model
		s0 := state
		m.Init = func() any { return s0 }
		res, info := porcupineCheck(l.ctx, m, ch, left)
		if l.ctx.Err() != nil || res == porcupine.Unknown {
			return l.unknown()
		}
		if res == porcupine.Illegal {
			if i == 0 {
				return linResult{res: res, ops: ch, info: info}
			}
			if r := l.whole(done); r.res != porcupine.Ok {
				return r
			}
			return l.whole(len(l.ops)) // the prefix passed another way: check it all
		}
		lins := info.PartialLinearizations()
		if len(lins) != 1 || len(lins[0]) == 0 || len(lins[0][0]) != len(ch) {
			return l.whole(len(l.ops)) // not the shape porcupine documents; do not guess
		}
		for _, id := range lins[0][0] {
			_, state = l.model.Step(state, ch[id].Input, ch[id].Output)
		}
	}
	return linResult{res: porcupine.Ok}
}

// Outcomes of stepping a sequential history.
type seqOutcome int

const (
	seqNotApplicable seqOutcome = iota // concurrent or illegal: porcupine decides
	seqOk
	seqOutOfTime // the deadline passed or ctx is done
)

// sequential decides ops (sorted by call) when none of them overlaps the
// next: such a history has exactly one linearization, the order itself, so
// stepping the model through it is porcupine's verdict without the search.
// That is most keys of a run with many keys, and every key of a lock that
// is never contended. A history that is concurrent, or illegal (porcupine
// explains which operation cannot be placed), is not applicable.
//
// It honours the same bounds as porcupine: the model is stepped in its own
// goroutine (but for a few steps of a pure model, see seqInline), which
// the caller stops waiting for when ctx is done, and a check that
// outlasts its deadline is out of time, never Ok.
func sequential(ctx context.Context, model porcupine.Model, ops []porcupine.Operation, deadline time.Time, pure bool) seqOutcome {
	for i := 1; i < len(ops); i++ {
		if ops[i-1].Return >= ops[i].Call {
			return seqNotApplicable
		}
	}
	if pure && len(ops) <= seqInline {
		// A few steps of a model that never blocks: taken here, without
		// a goroutine to wait on (a window of a fresh key per cycle has
		// thousands of such keys, and the goroutine, its channel and the
		// select cost more than the steps). ctx is asked first and last,
		// as below.
		if ctx.Err() != nil {
			return seqOutOfTime
		}
		return stepSequential(ctx, model, ops, deadline)
	}
	done := make(chan seqOutcome, 1)
	go func() { done <- stepSequential(ctx, model, ops, deadline) }()
	select {
	case r := <-done:
		return r
	case <-ctx.Done():
		return seqOutOfTime
	}
}

// seqInline is the most operations of a pure model (checkOwnModel)
// sequential steps through on the caller's goroutine: so few that they
// take microseconds, and the wait for ctx they skip is as short.
const seqInline = 64

// stepSequential steps the model through ops (sequential's).
func stepSequential(ctx context.Context, model porcupine.Model, ops []porcupine.Operation, deadline time.Time) seqOutcome {
	s := model.Init()
	for i := range ops {
		if i%1024 == 1023 && (ctx.Err() != nil || time.Now().After(deadline)) {
			return seqOutOfTime
		}
		ok, next := model.Step(s, ops[i].Input, ops[i].Output)
		if !ok {
			return seqNotApplicable
		}
		s = next
	}
	if ctx.Err() != nil || time.Now().After(deadline) {
		return seqOutOfTime // (a cancelled model accepts every step)
	}
	return seqOk
}

// porcupineCheck runs porcupine in its own goroutine and returns Unknown as
// soon as ctx is done. The model's Step already accepts everything once ctx
// is cancelled, so porcupine unwinds, but on a long history even that
// takes a while (it copies a bitset of the history per step); the caller
// need not wait for it. The abandoned search ends on its own: the model
// accepts every step, and the timeout bounds it.
func porcupineCheck(ctx context.Context, model porcupine.Model, ops []porcupine.Operation, timeout time.Duration) (porcupine.CheckResult, porcupine.LinearizationInfo) {
	type out struct {
		res  porcupine.CheckResult
		info porcupine.LinearizationInfo
	}
	done := make(chan out, 1)
	go func() {
		res, info := porcupine.CheckOperationsVerbose(model, ops, timeout)
		done <- out{res, info}
	}()
	select {
	case o := <-done:
		return o.res, o.info
	case <-ctx.Done():
		return porcupine.Unknown, porcupine.LinearizationInfo{}
	}
}

// quiescentChunks cuts ops (sorted by call) where every earlier operation
// returned strictly before the next is called, into chunks of at least
// chunkMin operations.
func quiescentChunks(ops []porcupine.Operation) [][]porcupine.Operation {
	var out [][]porcupine.Operation
	begin := 0
	maxRet := int64(-1 << 63)
	for i := range ops {
		if i-begin >= chunkMin && maxRet < ops[i].Call {
			out = append(out, ops[begin:i])
			begin = i
		}
		maxRet = max(maxRet, ops[i].Return)
	}
	return append(out, ops[begin:])
}

// firstUnplaced is the operation porcupine could not add to its longest
// linearization: of the operations outside it, the one called first.
func firstUnplaced(r linResult) (porcupine.Operation, bool) {
	lins := r.info.PartialLinearizations()
	if len(lins) == 0 {
		return porcupine.Operation{}, false
	}
	in := make([]bool, len(r.ops))
	longest := 0
	for _, l := range lins[0] {
		if len(l) > longest {
			longest = len(l)
			clear(in)
			for _, id := range l {
				in[id] = true
			}
		}
	}
	best := -1
	for id, placed := range in {
		if !placed && (best < 0 || r.ops[id].Call < r.ops[best].Call) {
			best = id
		}
	}
	if best < 0 {
		return porcupine.Operation{}, false
	}
	return r.ops[best], true
}
