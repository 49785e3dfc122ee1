package checker

import (
	"math/rand/v2"
	"testing"

	"github.com/lockharness/lockharness/history"
)

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
}

// genLockHistory makes a random lock history: every process runs
// acquire → (renew)* → release cycles on random keys with random outcomes,
// latencies and lease deadlines, independently of each other, so claims
// overlap or not by chance. Times are small integers so that boundary
// cases (equal times, deadline = return time, zero latency) are common.
func genLockHistory(rng *rand.Rand, cfg genConfig) []history.Op {
	type pev struct {
		t  int64
		op history.Op
	}
	per := make([][]pev, cfg.procs)
	for p := 0; p < cfg.procs; p++ {
		t := int64(1 + rng.IntN(5))
		emit := func(typ history.Type, f, key string, v *history.Value) {
			per[p] = append(per[p], pev{t, history.Op{Time: t, Process: history.Process(p), Type: typ, F: f, Key: key, Value: v}})
		}
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
		grantValue := func(invoke int64) *history.Value {
			if rng.IntN(10) == 0 {
				return lease(0) // never expires
			}
			return lease(invoke + rng.Int64N(cfg.maxTTL+1))
		}
		lat := func() int64 { return rng.Int64N(cfg.maxLat + 1) }
		gap := func() int64 { return rng.Int64N(cfg.maxGap + 1) }
		n := 0
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
			emit(o, history.FAcquire, key, grantValue(inv))
			t += gap()
			for rng.IntN(3) == 0 && n < cfg.opsPerProc {
				emit(history.Invoke, history.FRenew, key, nil)
				n++
				rinv := t
				t += lat()
				if o := outcome(0.7); o == history.OK {
					emit(o, history.FRenew, key, grantValue(rinv))
				} else {
					emit(o, history.FRenew, key, nil)
				}
				t += gap()
			}
			switch {
			case cfg.crash && rng.IntN(15) == 0:
				emit(history.Info, history.FCrash, key, nil)
				break life
			case rng.IntN(8) == 0:
				continue // abandon the lease: acquire again later
			}
			emit(history.Invoke, history.FRelease, key, &history.Value{Token: "t"})
			n++
			if cfg.crash && rng.IntN(40) == 0 {
				break life
			}
			t += lat()
			emit(outcome(0.75), history.FRelease, key, nil)
			t += gap()
		}
	}
	// Merge by time; among equal times pick a random process, keeping each
	// process's own order.
	var out []history.Op
	heads := make([]int, cfg.procs)
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
