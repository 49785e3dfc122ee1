package checker

import (
	"container/heap"
	"fmt"
	"math/rand/v2"

	"github.com/lockharness/lockharness/history"
)

// simConfig shapes a simulated run of a correct lock.
type simConfig struct {
	procs, keys int
	events      int   // stop starting new cycles after this many events
	ttl         int64 // lease length, ns
	pInfo       float64
	heal        bool // record nemesis faults and a final heal
}

type simItem struct {
	t    int64
	seq  int
	proc int
}
type simQueue []simItem

func (q simQueue) Len() int { return len(q) }
func (q simQueue) Less(i, j int) bool {
	return q[i].t < q[j].t || (q[i].t == q[j].t && q[i].seq < q[j].seq)
}
func (q simQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *simQueue) Push(x any)   { *q = append(*q, x.(simItem)) }
func (q *simQueue) Pop() any {
	x := (*q)[len(*q)-1]
	*q = (*q)[:len(*q)-1]
	return x
}

// simValidRun simulates clients of a correct lock (SET NX PX with a token,
// compare-and-delete release, fencing tokens) and a fencing storage node,
// as the mutex workload drives them: acquire a random key, read the
// counter, write counter+1, release. Unknown acquires take no effect and
// are followed by a release, as the workload does. The history it returns
// is valid by construction.
func simValidRun(rng *rand.Rand, cfg simConfig) []history.Op {
	type lockState struct {
		holder   int
		deadline int64
		fence    int64
	}
	locks := make([]lockState, cfg.keys)
	for i := range locks {
		locks[i].holder = -1
	}
	storage := make([]int64, cfg.keys)
	storeFence := make([]int64, cfg.keys)
	type proc struct {
		step    int
		key     int
		invoke  int64
		lease   lockState
		read    int64
		gotLock bool
	}
	procs := make([]proc, cfg.procs)
	var out []history.Op
	emit := func(t int64, p int, typ history.Type, f string, key int, v *history.Value) {
		out = append(out, history.Op{Index: int64(len(out)), Time: t, Process: history.Process(p), Type: typ, F: f, Key: fmt.Sprintf("lock-%d", key), Value: v})
	}
	lat := func() int64 { return 50_000 + rng.Int64N(1_000_000) }
	q := &simQueue{}
	seq := 0
	for p := range procs {
		heap.Push(q, simItem{t: 1 + rng.Int64N(100_000), seq: seq, proc: p})
		seq++
	}
	var nemT int64
	nemOn := false
	last := int64(0)
	for q.Len() > 0 {
		it := heap.Pop(q).(simItem)
		t, p := it.t, it.proc
		last = t
		pr := &procs[p]
		next := t + lat()
		if cfg.heal && t > nemT+20_000_000 && len(out) < cfg.events {
			f := "start-partition"
			if nemOn {
				f = "stop-partition"
			}
			nemOn = !nemOn
			out = append(out, history.Op{Index: int64(len(out)), Time: t, Process: history.Nemesis, Type: history.Invoke, F: f})
			out = append(out, history.Op{Index: int64(len(out)), Time: t, Process: history.Nemesis, Type: history.OK, F: f})
			nemT = t
		}
		switch pr.step {
		case 0: // acquire invoke
			if len(out) >= cfg.events {
				continue // this client is done
			}
			pr.key = rng.IntN(cfg.keys)
			pr.invoke = t
			emit(t, p, history.Invoke, history.FAcquire, pr.key, nil)
			pr.step = 1
		case 1: // acquire completes
			l := &locks[pr.key]
			switch {
			case rng.Float64() < cfg.pInfo:
				emit(t, p, history.Info, history.FAcquire, pr.key, nil)
				pr.gotLock = false
				pr.step = 4 // release, as the workload does after an unknown
			case l.holder == -1 || l.deadline <= t:
				l.holder, l.deadline = p, pr.invoke+cfg.ttl
				l.fence++
				pr.lease = *l
				emit(t, p, history.OK, history.FAcquire, pr.key, fenced(l.deadline, l.fence))
				pr.gotLock = true
				pr.step = 2
			default:
				emit(t, p, history.Fail, history.FAcquire, pr.key, nil)
				pr.step = 0
				next = t + lat()*3
			}
		case 2: // read
			emit(t, p, history.Invoke, history.FRead, pr.key, nil)
			pr.read = storage[pr.key]
			emit(t+1000, p, history.OK, history.FRead, pr.key, ctr(pr.read))
			next = max(next, t+1001)
			pr.step = 3
		case 3: // write
			emit(t, p, history.Invoke, history.FWrite, pr.key, wr(pr.read+1, pr.lease.fence))
			if pr.lease.fence >= storeFence[pr.key] {
				storage[pr.key], storeFence[pr.key] = pr.read+1, pr.lease.fence
				emit(t+1000, p, history.OK, history.FWrite, pr.key, ctr(pr.read+1))
			} else {
				emit(t+1000, p, history.OK, history.FWrite, pr.key, rejected(pr.read+1))
			}
			next = max(next, t+1001)
			pr.step = 4
		case 4: // release invoke
			emit(t, p, history.Invoke, history.FRelease, pr.key, &history.Value{Token: "t"})
			pr.step = 5
		case 5: // release completes
			l := &locks[pr.key]
			if pr.gotLock && l.holder == p && l.fence == pr.lease.fence {
				l.holder = -1
				emit(t, p, history.OK, history.FRelease, pr.key, nil)
			} else {
				emit(t, p, history.Fail, history.FRelease, pr.key, &history.Value{NotHeld: true})
			}
			pr.step = 0
		}
		heap.Push(q, simItem{t: next, seq: seq, proc: p})
		seq++
	}
	// The events were emitted in processing order, which is time order
	// except for the +1000 completions above; make index order time order.
	sortByTime(out)
	t := last + 1_000_000
	if cfg.heal {
		out = append(out, history.Op{Index: int64(len(out)), Time: t, Process: history.Nemesis, Type: history.Invoke, F: history.FFinalHeal})
		out = append(out, history.Op{Index: int64(len(out)), Time: t, Process: history.Nemesis, Type: history.OK, F: history.FFinalHeal})
	}
	fresh := cfg.procs
	for k := 0; k < cfg.keys; k++ {
		t += 100_000
		emit(t, fresh, history.Invoke, history.FRead, k, nil)
		emit(t+1000, fresh, history.OK, history.FRead, k, ctr(storage[k]))
		t += 1000
	}
	return out
}

func sortByTime(ops []history.Op) {
	// Stable insertion-friendly sort: the slice is almost sorted.
	for i := 1; i < len(ops); i++ {
		for j := i; j > 0 && ops[j].Time < ops[j-1].Time; j-- {
			ops[j], ops[j-1] = ops[j-1], ops[j]
		}
	}
	for i := range ops {
		ops[i].Index = int64(i)
	}
}
