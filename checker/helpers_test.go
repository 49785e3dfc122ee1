package checker

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/lockharness/lockharness/history"
)

// checkOps is Check of events in memory, which never fails to read them.
func checkOps(ctx context.Context, ops []history.Op, cfg Config) Result {
	r, err := Check(ctx, history.Events(ops), cfg)
	if err != nil {
		panic(err)
	}
	return r
}

// hb builds hand-made histories: events must be added in time order.
type hb struct{ ops []history.Op }

func (b *hb) ev(t int64, p int, typ history.Type, f, key string, v *history.Value) *hb {
	b.ops = append(b.ops, history.Op{Index: int64(len(b.ops)), Time: t, Process: history.Process(p), Type: typ, F: f, Key: key, Value: v})
	return b
}

func (b *hb) inv(t int64, p int, f, key string, v *history.Value) *hb {
	return b.ev(t, p, history.Invoke, f, key, v)
}
func (b *hb) ok(t int64, p int, f, key string, v *history.Value) *hb {
	return b.ev(t, p, history.OK, f, key, v)
}
func (b *hb) fail(t int64, p int, f, key string) *hb { return b.ev(t, p, history.Fail, f, key, nil) }
func (b *hb) info(t int64, p int, f, key string) *hb { return b.ev(t, p, history.Info, f, key, nil) }
func (b *hb) nem(t int64, typ history.Type, f string) *hb {
	return b.ev(t, int(history.Nemesis), typ, f, "", nil)
}

func lease(deadline int64) *history.Value { return &history.Value{Token: "t", Deadline: deadline} }
func fenced(deadline, fence int64) *history.Value {
	return &history.Value{Token: "t", Deadline: deadline, Fence: fence}
}
func ctr(v int64) *history.Value { return &history.Value{Counter: &v} }
func wr(v, fence int64) *history.Value {
	return &history.Value{Counter: &v, Fence: fence}
}
func rejected(v int64) *history.Value { return &history.Value{Counter: &v, Rejected: true} }

// genConfig shapes random lock histories.
type genConfig struct {
	procs, keys, opsPerProc int
	maxLat, maxGap, maxTTL  int64
	pInfo                   float64 // chance an operation's outcome is unknown
	crash                   bool    // processes may crash or stop mid-operation
	// renewers gives each process two renewer threads (watchdogs, with
	// history.Op.Owner) that renew its leases at random moments around
	// its holds: before, during and after its releases, overlapping each
	// other and the client's next acquire, sometimes with an older lease's
	// token, and after a crash.
	renewers bool
	// sessions makes one grant in three a session lease (no deadline;
	// the holder's crash ends it), as a database row lock's.
	sessions bool
}

// genLockHistory makes a random lock history: every process runs
// acquire → (renew)* → release cycles on random keys with random outcomes,
// latencies and lease deadlines, independently of each other, so claims
// overlap or not by chance. Failed releases and renews are a definite "not
// held" (Value.NotHeld) or a refused command at random. Times are small
// integers so that boundary cases (equal times, deadline = return time,
// zero latency) are common.
func genLockHistory(rng *rand.Rand, cfg genConfig) []history.Op {
	type pev struct {
		t  int64
		op history.Op
	}
	// Threads: the processes, then (with renewers) two renewer threads per
	// process, numbered procs+2p and procs+2p+1.
	threads := cfg.procs
	if cfg.renewers {
		threads *= 3
	}
	per := make([][]pev, threads)
	outcome := func(pOK float64) history.Type {
		x := rng.Float64()
		switch {
		case x < cfg.pInfo:
			return history.Info
		case x < cfg.pInfo+(1-cfg.pInfo)*pOK:
			return history.OK
		}
		return history.Fail
	}
	lat := func() int64 { return rng.Int64N(cfg.maxLat + 1) }
	gap := func() int64 { return rng.Int64N(cfg.maxGap + 1) }
	grantValue := func(invoke int64, token string) *history.Value {
		if cfg.sessions && rng.IntN(3) == 0 {
			return &history.Value{Token: token, Session: true}
		}
		if rng.IntN(10) == 0 {
			return &history.Value{Token: token} // never expires
		}
		return &history.Value{Token: token, Deadline: invoke + rng.Int64N(cfg.maxTTL+1)}
	}
	// failValue is a fail's completion: a definite "not held" one time in three.
	failValue := func(token string) *history.Value {
		return &history.Value{Token: token, NotHeld: rng.IntN(3) == 0}
	}
	// hold is a lease as the renewers see it: from the acquire's
	// completion until a little after the client let go of it.
	type hold struct {
		key, token, older string
		from, to          int64
	}
	for p := 0; p < cfg.procs; p++ {
		var holds []hold
		t := int64(1 + rng.IntN(5))
		emit := func(typ history.Type, f, key string, v *history.Value) {
			per[p] = append(per[p], pev{t, history.Op{Time: t, Process: history.Process(p), Type: typ, F: f, Key: key, Value: v}})
		}
		n, leases := 0, 0
		older := ""
	life:
		for n < cfg.opsPerProc {
			key := "lock-" + string(rune('0'+rng.IntN(cfg.keys)))
			emit(history.Invoke, history.FAcquire, key, nil)
			n++
			inv := t
			if cfg.crash && rng.IntN(40) == 0 {
				break life // never completes
			}
			t += lat()
			o := outcome(0.6)
			if o != history.OK {
				emit(o, history.FAcquire, key, nil)
				t += gap()
				continue
			}
			leases++
			token := fmt.Sprintf("t%d.%d", p, leases)
			emit(o, history.FAcquire, key, grantValue(inv, token))
			h := hold{key: key, token: token, older: older, from: t}
			older = token
			t += gap()
			for rng.IntN(3) == 0 && n < cfg.opsPerProc {
				emit(history.Invoke, history.FRenew, key, nil)
				n++
				rinv := t
				t += lat()
				switch o := outcome(0.7); o {
				case history.OK:
					emit(o, history.FRenew, key, grantValue(rinv, token))
				case history.Fail:
					emit(o, history.FRenew, key, failValue(token))
				default:
					emit(o, history.FRenew, key, nil)
				}
				t += gap()
			}
			switch {
			case cfg.crash && rng.IntN(15) == 0:
				emit(history.Info, history.FCrash, key, nil)
				h.to = t + 2*cfg.maxLat
				holds = append(holds, h)
				break life
			case rng.IntN(8) == 0:
				h.to = t
				holds = append(holds, h)
				continue // abandon the lease: acquire again later
			}
			emit(history.Invoke, history.FRelease, key, &history.Value{Token: token})
			n++
			if cfg.crash && rng.IntN(40) == 0 {
				h.to = t + 2*cfg.maxLat
				holds = append(holds, h)
				break life
			}
			t += lat()
			switch o := outcome(0.75); o {
			case history.Fail:
				emit(o, history.FRelease, key, failValue(""))
			default:
				emit(o, history.FRelease, key, nil)
			}
			h.to = t + cfg.maxLat
			holds = append(holds, h)
			t += gap()
		}
		if !cfg.renewers {
			continue
		}
		// Each hold gets renews from one of p's two renewer threads, at
		// random moments from just before its grant to just after its
		// release; the threads' own calls are sequential.
		free := [2]int64{}
		for _, h := range holds {
			if rng.IntN(2) == 0 {
				continue
			}
			r := rng.IntN(2)
			thread := cfg.procs + 2*p + r
			owner := history.Process(p)
			rt := max(free[r], h.from-cfg.maxLat+rng.Int64N(h.to-h.from+2*cfg.maxLat+1))
			remit := func(typ history.Type, v *history.Value) {
				per[thread] = append(per[thread], pev{rt, history.Op{Time: rt, Process: history.Process(thread), Owner: &owner, Type: typ, F: history.FRenew, Key: h.key, Value: v}})
			}
			for k := 1 + rng.IntN(3); k > 0; k-- {
				token := h.token
				if h.older != "" && rng.IntN(4) == 0 {
					token = h.older // a stale watchdog of the previous lease
				}
				remit(history.Invoke, nil)
				rinv := rt
				rt += lat()
				switch o := outcome(0.6); o {
				case history.OK:
					remit(o, grantValue(rinv, token))
				case history.Fail:
					remit(o, failValue(token))
				default:
					remit(o, &history.Value{Token: token})
				}
				rt += gap()
			}
			free[r] = rt
		}
	}
	// Merge by time; among equal times pick a random thread, keeping each
	// thread's own order.
	var out []history.Op
	heads := make([]int, threads)
	for {
		best := int64(-1)
		var cands []int
		for p := range per {
			if heads[p] >= len(per[p]) {
				continue
			}
			tt := per[p][heads[p]].t
			switch {
			case best < 0 || tt < best:
				best, cands = tt, []int{p}
			case tt == best:
				cands = append(cands, p)
			}
		}
		if len(cands) == 0 {
			break
		}
		p := cands[rng.IntN(len(cands))]
		op := per[p][heads[p]].op
		heads[p]++
		op.Index = int64(len(out))
		out = append(out, op)
	}
	return out
}

func mustPrepare(t testing.TB, ops []history.Op) *prepared {
	t.Helper()
	p, err := prepare(ops)
	if err != nil {
		t.Fatalf("prepare: %v", err)
	}
	return p
}
