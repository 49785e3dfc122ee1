package reports

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/history"
)

const ms = int64(time.Millisecond)

// builder makes histories by hand: events may be added in any order, and
// build sorts them by time and numbers them.
type builder struct {
	ops      []history.Op
	holds    []checker.Hold
	ttl      int64
	counters map[string]int64 // the protected counter of each key
}

func (b *builder) ev(t int64, p history.Process, typ history.Type, f, key string, v *history.Value) *history.Op {
	b.ops = append(b.ops, history.Op{Time: t, Process: p, Type: typ, F: f, Key: key, Value: v})
	return &b.ops[len(b.ops)-1]
}

// nemesis records a nemesis function invoked at t and done 10 ms later,
// as a history recorded before nemesis events had structured fields: only
// its f says what it means.
func (b *builder) nemesis(t int64, f string, targets []string, detail string) {
	b.nemesisV(t, f, &history.Value{Targets: targets, Detail: detail})
}

// nemesisV records a nemesis function invoked at t and done 10 ms later
// with value v (its structured fields say what it means).
func (b *builder) nemesisV(t int64, f string, v *history.Value) {
	b.ev(t, history.Nemesis, history.Invoke, f, "", v)
	b.ev(t+10*ms, history.Nemesis, history.OK, f, "", v)
}

// nsp is a duration as an optional history field.
func nsp(d time.Duration) *int64 {
	v := int64(d)
	return &v
}

// section records one critical section of process p on key: acquire
// invoked at t, ok after 2 ms, a read and a write, release invoked at rel
// (or never, when rel < 0: the lease expires). It returns the hold.
func (b *builder) section(p int, key string, t, rel int64, fence int64, rejected bool) checker.Hold {
	pr := history.Process(p)
	deadline := t + b.ttl
	b.ev(t, pr, history.Invoke, history.FAcquire, key, nil)
	b.ev(t+2*ms, pr, history.OK, history.FAcquire, key, &history.Value{Token: fmt.Sprint("t", p, t), Fence: fence, Deadline: deadline})
	if b.counters == nil {
		b.counters = map[string]int64{}
	}
	c := b.counters[key]
	b.ev(t+3*ms, pr, history.Invoke, history.FRead, key, nil)
	b.ev(t+4*ms, pr, history.OK, history.FRead, key, &history.Value{Counter: &c})
	c1 := c + 1
	b.ev(t+5*ms, pr, history.Invoke, history.FWrite, key, &history.Value{Counter: &c1, Fence: fence})
	b.ev(t+6*ms, pr, history.OK, history.FWrite, key, &history.Value{Counter: &c1, Fence: fence, Rejected: rejected})
	if !rejected {
		b.counters[key] = c1
	}
	end := deadline
	if rel >= 0 {
		b.ev(rel, pr, history.Invoke, history.FRelease, key, &history.Value{Token: fmt.Sprint("t", p, t)})
		b.ev(rel+ms, pr, history.OK, history.FRelease, key, nil)
		end = min(rel, deadline)
	}
	h := checker.Hold{Process: p, Key: key, Start: t + 2*ms, End: end, Deadline: deadline, Fence: fence}
	b.holds = append(b.holds, h)
	return h
}

func (b *builder) failedAcquire(p int, key string, t int64, typ history.Type) {
	b.ev(t, history.Process(p), history.Invoke, history.FAcquire, key, nil)
	b.ev(t+3*ms, history.Process(p), typ, history.FAcquire, key, nil)
}

func (b *builder) build() []history.Op {
	slices.SortStableFunc(b.ops, func(a, c history.Op) int { return cmp.Compare(a.Time, c.Time) })
	for i := range b.ops {
		b.ops[i].Index = int64(i)
	}
	// Point holds at their acquire ok.
	type pt struct {
		p int
		t int64
	}
	acq := map[pt]int64{}
	for _, op := range b.ops {
		if op.F == history.FAcquire && op.Type == history.OK {
			acq[pt{int(op.Process), op.Time}] = op.Index
		}
	}
	for i := range b.holds {
		b.holds[i].Acquire = acq[pt{b.holds[i].Process, b.holds[i].Start}]
	}
	return b.ops
}

func counts(ops []history.Op) map[string]map[string]int {
	c := map[string]map[string]int{}
	for _, op := range ops {
		if op.Process.IsNemesis() || op.Type == history.Invoke {
			continue
		}
		if c[op.F] == nil {
			c[op.F] = map[string]int{}
		}
		c[op.F][string(op.Type)]++
	}
	return c
}

// clockFixture is a small run in which node 3's clock jumps +60 s and two
// clients both hold lock-0 from 3.41 s to 3.97 s.
func clockFixture() (RunMeta, []history.Op, checker.Result) {
	b := &builder{ttl: 1000 * ms}
	b.nemesis(1000*ms, "start-partition", []string{"c0->n1", "c1->n1"}, "")
	b.nemesis(2500*ms, "stop-partition", nil, "")
	b.nemesisV(3390*ms, "bump-clock", bump("n3", 60*time.Second, 60*time.Second))
	b.nemesis(5000*ms, "pause", []string{"n1"}, "SIGSTOP")
	b.nemesis(6000*ms, "resume", []string{"n1"}, "SIGCONT")
	b.nemesis(7000*ms, history.FFinalHeal, nil, "")
	fence := int64(1)
	t := int64(100 * ms)
	for i := 0; t < 3000*ms; i++ {
		b.section(i%3, "lock-0", t, t+300*ms, fence, false)
		b.failedAcquire((i+1)%3, "lock-0", t+100*ms, history.Fail)
		b.section(3, "lock-1", t+50*ms, t+250*ms, fence, false)
		fence++
		t += 400 * ms
	}
	// Client 2 acquires at 3.408 s; node 3's clock jumps and expires its
	// key, so client 4 acquires at 3.41 s too. Client 2 releases at 3.97 s.
	h2 := b.section(2, "lock-0", 3408*ms-2*ms, 3970*ms, fence, false)
	h4 := b.section(4, "lock-0", 3410*ms-2*ms, 4300*ms, fence+1, false)
	_ = h2
	// A stale write of client 2, rejected by fencing.
	c := b.counters["lock-0"] + 1
	b.ev(3950*ms, 2, history.Invoke, history.FWrite, "lock-0", &history.Value{Counter: &c, Fence: fence})
	b.ev(3951*ms, 2, history.OK, history.FWrite, "lock-0", &history.Value{Counter: &c, Fence: fence, Rejected: true})
	t = 4400 * ms
	for i := 0; t < 9000*ms; i++ {
		typ := history.Fail
		if i%4 == 0 {
			typ = history.Info
		}
		b.section(i%2, "lock-0", t, t+300*ms, fence+2, false)
		b.failedAcquire(4, "lock-0", t+100*ms, typ)
		fence++
		t += 400 * ms
	}
	ops := b.build()
	overlap := checker.Violation{
		Checker: "lock-promise", Kind: checker.KindOverlap, Key: "lock-0",
		Processes: []int{2, 4}, Start: h4.Start, End: 3970 * ms, Fatal: true,
		Description: "client 2 and client 4 both held lock-0",
	}
	res := checker.Result{
		Verdict: checker.Invalid,
		Checkers: map[string]checker.CheckResult{
			"lock-promise": {Verdict: checker.Invalid, Stats: map[string]float64{"holds": float64(len(b.holds))}},
			"resource":     {Verdict: checker.Valid},
			"liveness":     {Verdict: checker.Valid},
		},
		Counts:              counts(ops),
		Violations:          []checker.Violation{overlap},
		Holds:               b.holds,
		NonLinearizableKeys: []string{"lock-0"},
	}
	cfg, _ := json.Marshal(map[string]any{"lock": "token", "ttl": "1s", "clients": 5})
	meta := RunMeta{
		Test: "clock-jump", Lock: "token", Nemeses: []string{"partition", "clock", "pause"}, Seed: 42,
		Command: "harness scenario run clock-jump --seed 42", Scenario: "clock-jump",
		Explanation: "Node 3's clock jumps 60 s forward, so it expires the lock early and hands it to a second client while the first still holds it.",
		Expected:    map[string]string{"lock-promise": "invalid", "resource": "valid"},
		Config:      cfg, Start: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Duration: 9 * time.Second,
	}
	return meta, ops, res
}

// validFixture is clockFixture without the overlap: a healthy run.
func validFixture() (RunMeta, []history.Op, checker.Result) {
	b := &builder{ttl: 1000 * ms}
	b.nemesis(1000*ms, "start-partition", []string{"c0->n1"}, "")
	b.nemesis(2500*ms, "stop-partition", nil, "")
	b.nemesis(3000*ms, history.FFinalHeal, nil, "")
	t := int64(100 * ms)
	for i := 0; t < 5000*ms; i++ {
		b.section(i%3, "lock-0", t, t+300*ms, int64(i+1), false)
		b.failedAcquire((i+1)%3, "lock-0", t+100*ms, history.Fail)
		t += 400 * ms
	}
	ops := b.build()
	res := checker.Result{
		Verdict:  checker.Valid,
		Checkers: map[string]checker.CheckResult{"lock-promise": {Verdict: checker.Valid}},
		Counts:   counts(ops),
		Holds:    b.holds,
	}
	meta := RunMeta{Test: "token", Lock: "token", Nemeses: []string{"partition"}, Seed: 7, Command: "harness run --lock token --seed 7",
		Start: time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC), Duration: 5 * time.Second}
	return meta, ops, res
}

// bigRun makes a valid run of about n events: clients in pairs contend for
// keys, with the occasional timeout, faults every few seconds.
func bigRun(n int, seed uint64) (RunMeta, []history.Op, checker.Result) {
	rng := rand.New(rand.NewPCG(seed, seed+1))
	const clients, keys = 10, 5
	b := &builder{ttl: 500 * ms}
	b.ops = make([]history.Op, 0, n+100)
	perKey := n / keys / 10 // each round is about 10 events
	var end int64
	for k := 0; k < keys; k++ {
		key := fmt.Sprintf("lock-%d", k)
		t := int64(rng.IntN(50)) * ms
		fence := int64(1)
		for i := 0; i < perKey; i++ {
			holder := k + keys*(i%2)
			other := k + keys*((i+1)%2)
			hold := int64(8+rng.IntN(20)) * ms
			b.section(holder, key, t, t+hold, fence, false)
			typ := history.Fail
			if rng.IntN(50) == 0 {
				typ = history.Info
			}
			b.failedAcquire(other, key, t+3*ms, typ)
			fence++
			t += hold + int64(2+rng.IntN(10))*ms
		}
		end = max(end, t)
	}
	for t := 2 * int64(time.Second); t < end-2*int64(time.Second); t += 10 * int64(time.Second) {
		node := fmt.Sprintf("n%d", 1+rng.IntN(3))
		b.nemesis(t, "start-partition", []string{"c0->" + node, "c1->" + node}, "")
		b.nemesis(t+3*int64(time.Second), "stop-partition", nil, "")
	}
	b.nemesis(end, history.FFinalHeal, nil, "")
	ops := b.build()
	res := checker.Result{
		Verdict: checker.Valid,
		Checkers: map[string]checker.CheckResult{
			"lock-promise": {Verdict: checker.Valid}, "resource": {Verdict: checker.Valid}, "liveness": {Verdict: checker.Valid},
		},
		Counts: counts(ops),
		Holds:  b.holds,
	}
	meta := RunMeta{Test: "token", Lock: "token", Nemeses: []string{"partition"}, Seed: seed,
		Command: fmt.Sprintf("harness run --lock token --seed %d", seed), Start: time.Date(2026, 1, 3, 0, 0, 0, 0, time.UTC),
		Duration: time.Duration(end)}
	return meta, ops, res
}
