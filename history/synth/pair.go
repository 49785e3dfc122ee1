package synth

import (
	"math"

	"github.com/lockharness/lockharness/history"
)

// pair is one key and its two processes taking turns: the holder's cycle
// (acquire, read, write, release) while the other's acquire is refused.
// Each cycle is planned as a queue of events, recorded one per step.
type pair struct {
	key     string
	shape   Shape
	procs   [2]int
	h       int   // which of procs holds next
	counter int64 // the storage's value
	fence   int64
	busy    int64 // a crashed holder's lease runs until then (MaxInt64: for good)
	grants  int64
	q       []func(*gen)
}

func (g *gen) newPair(key string, shape Shape) *pair {
	return &pair{key: key, shape: shape, procs: [2]int{g.proc(), g.proc()}}
}

func (p *pair) step(g *gen) bool {
	if len(p.q) == 0 && !p.plan(g) {
		return false
	}
	f := p.q[0]
	p.q = p.q[1:]
	f(g)
	return true
}

// then queues events.
func (p *pair) then(fs ...func(*gen)) { p.q = append(p.q, fs...) }

// ev is one event of process *pp (read when it is recorded: a slot
// replaced in the meantime records as its new process).
func (p *pair) ev(pp *int, typ history.Type, f string, v func() *history.Value, errText string) func(*gen) {
	return func(g *gen) {
		var val *history.Value
		if v != nil {
			val = v()
		}
		g.ev(*pp, typ, f, p.key, val, errText)
	}
}

// plan queues the next cycle: a refused attempt while a crashed holder's
// lease runs, else a holder's cycle of the shape's kind. False once the
// clients have recorded enough.
func (p *pair) plan(g *gen) bool {
	if g.done() {
		return false
	}
	hp, op := &p.procs[p.h], &p.procs[1-p.h]
	if g.t <= p.busy {
		p.then(p.ev(hp, history.Invoke, history.FAcquire, nil, ""), p.ev(hp, history.Fail, history.FAcquire, nil, "lock not acquired"))
		return true
	}
	r := g.rng.IntN(400)
	if p.shape == Crash && r == 0 {
		p.crashAcquiring(hp)
		return true
	}
	var inv int64
	p.grants++
	token := tok(p.grants<<8 | int64(len(p.key)))
	p.fence++
	fence := p.fence
	p.then(func(g *gen) { inv = g.ev(*hp, history.Invoke, history.FAcquire, p.key, nil, "") },
		p.ev(op, history.Invoke, history.FAcquire, nil, ""),
		p.ev(hp, history.OK, history.FAcquire, func() *history.Value {
			if p.shape == CrashNoExpiry {
				return &history.Value{Token: token, Fence: fence}
			}
			return &history.Value{Token: token, Deadline: inv + TTL, Fence: fence}
		}, ""),
		p.ev(op, history.Fail, history.FAcquire, nil, "lock not acquired"))
	if p.shape == LongHolds {
		p.renewals(hp, op, token)
	}
	read := p.counter
	p.then(p.ev(hp, history.Invoke, history.FRead, nil, ""),
		p.ev(hp, history.OK, history.FRead, func() *history.Value { return counter(read) }, ""))
	switch {
	case p.shape == Crash && r < 3:
		// Dead in its critical section: its lease runs until its deadline.
		p.then(p.ev(hp, history.Invoke, history.FCrash, nil, ""),
			p.ev(hp, history.Info, history.FCrash, nil, "client crashed"),
			func(g *gen) { p.busy = inv + TTL; *hp = g.proc() })
	case p.shape == CrashNoExpiry && r < 3:
		// Dead in its critical section, holding a lease that never
		// runs out: the key is refused for good.
		p.then(p.ev(hp, history.Invoke, history.FCrash, nil, ""),
			p.ev(hp, history.Info, history.FCrash, nil, "client crashed"),
			func(g *gen) { p.busy = math.MaxInt64; *hp = g.proc() })
	case p.shape == Unmatched && r < 4:
		// No write: the slot lets go and goes on as a new process.
		p.then(p.ev(hp, history.Invoke, history.FRelease, func() *history.Value { return &history.Value{Token: token} }, ""),
			p.ev(hp, history.OK, history.FRelease, nil, ""),
			func(*gen) { *hp = g.proc() })
	default:
		p.counter++
		wrote := p.counter
		p.then(p.ev(hp, history.Invoke, history.FWrite, func() *history.Value { return &history.Value{Counter: &wrote, Fence: fence} }, ""),
			p.ev(hp, history.OK, history.FWrite, func() *history.Value { return counter(wrote) }, ""),
			p.ev(hp, history.Invoke, history.FRelease, func() *history.Value { return &history.Value{Token: token} }, ""),
			p.ev(hp, history.OK, history.FRelease, nil, ""))
	}
	p.then(func(*gen) { p.h = 1 - p.h })
	return true
}

// crashAcquiring queues a holder that dies at a failpoint while its
// acquire is in flight (recorded as unknown, as the workload does): the
// server may have granted it, so the key is refused until its lease would
// have run out.
func (p *pair) crashAcquiring(hp *int) {
	var inv int64
	p.then(func(g *gen) { inv = g.ev(*hp, history.Invoke, history.FAcquire, p.key, nil, "") },
		p.ev(hp, history.Info, history.FAcquire, nil, "crashed at failpoint"),
		p.ev(hp, history.Invoke, history.FCrash, nil, ""),
		p.ev(hp, history.Info, history.FCrash, nil, "client crashed"),
		func(g *gen) { p.busy = inv + TTL; *hp = g.proc(); p.h = 1 - p.h })
}

// renewals queues a long hold: 100 renewals of the holder's lease, each
// after 15 refused attempts of the other process.
func (p *pair) renewals(hp, op *int, token string) {
	for range 100 {
		for range 15 {
			p.then(p.ev(op, history.Invoke, history.FAcquire, nil, ""), p.ev(op, history.Fail, history.FAcquire, nil, "lock not acquired"))
		}
		var rinv int64
		p.then(func(g *gen) {
			rinv = g.ev(*hp, history.Invoke, history.FRenew, p.key, &history.Value{Token: token}, "")
		},
			p.ev(hp, history.OK, history.FRenew, func() *history.Value { return &history.Value{Token: token, Deadline: rinv + TTL} }, ""))
	}
}
