// Package synth writes synthetic histories of the shapes that stress a
// checker's memory (issue 27): the bytes a real run writes to
// history.jsonl, from a seed, streamed, so that a history of ten million
// events costs no more memory to make than one of ten.
//
// Every shape is a run of a correct lock (SET NX PX with a token and a
// compare-and-delete release, a fencing storage node) as the mutex
// workload drives it: acquire, read the counter, write counter+1, release;
// the verdict of each is valid. Keys are independent: each key has its
// own processes, and the generator advances the keys in turn, one event
// each, on one clock, so that every key is busy all the time and only
// cuts per key are possible. A history ends as a run's does: the final
// heal, a recovery period longer than any lease, and a read of every
// key's counter by a fresh process.
package synth

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"

	"github.com/lockharness/lockharness/history"
)

// Shape names one kind of history.
type Shape string

// The shapes.
const (
	// Valid is ten keys, two processes per key taking turns, the other's
	// acquire refused while one holds the key, no faults.
	Valid Shape = "valid"
	// Crash is Valid with client crashes: now and then the holder dies
	// in its critical section after its read (an open claim, a read never
	// followed by its write) or while its acquire is in flight, and the
	// key's other process is refused until the lease runs out; the slot
	// goes on as a new process.
	Crash Shape = "crash"
	// Unmatched is Valid where now and then the holder reads and then
	// releases without writing (as the workload does when its renewal
	// before the write fails), and the slot goes on as a new process, so
	// that the read is never followed by a write or another read.
	Unmatched Shape = "unmatched"
	// ManyKeys is ten processes each acquiring and releasing fresh keys:
	// a distinct key per cycle, four events per key.
	ManyKeys Shape = "many-keys"
	// LongHolds is Valid where each hold lasts about 3,200 of its key's
	// events, renewed every 30, while the other process is refused.
	LongHolds Shape = "long-holds"
	// CrashNoExpiry is Crash for a lock whose leases never expire (SET NX
	// with a token, no TTL): a holder that dies in its critical section
	// keeps its key for the rest of the history, and the key's other
	// process is refused from then on (naive SETNX's deadlock; the
	// history's recovery makes no attempt, so liveness has nothing to
	// refuse and the verdict is valid). The crashed holder's claim never
	// ends, so a check cuts such a key after the crash only by carrying
	// the claim instead of the key's events.
	CrashNoExpiry Shape = "crash-no-expiry"
)

// Shapes is every shape, in the order they are described above.
var Shapes = []Shape{Valid, Crash, Unmatched, ManyKeys, LongHolds, CrashNoExpiry}

// Config is what to generate.
type Config struct {
	Shape Shape
	// Events is about how many events the clients record before the
	// final heal (each key finishes its cycle first).
	Events int
	Seed   uint64
}

// TTL is the lease length of every grant, in nanoseconds of the run clock.
const TTL = int64(10e6)

// Write writes the history cfg describes to w, one JSON object per line
// as a run's recorder writes it, and returns how many events it wrote.
func Write(w io.Writer, cfg Config) (int64, error) {
	bw := bufio.NewWriterSize(w, 1<<16)
	enc := json.NewEncoder(bw)
	n, err := Generate(cfg, func(op *history.Op) error { return enc.Encode(op) })
	if err != nil {
		return n, err
	}
	return n, bw.Flush()
}

// WriteFile writes the history cfg describes to a new file at path (as
// Write does) and returns how many events it wrote: the benchmarks' and
// tests' input of one shape.
func WriteFile(path string, cfg Config) (int64, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	n, err := Write(f, cfg)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return n, err
}

// Ops is the history cfg describes, in memory (for tests of small ones).
func Ops(cfg Config) ([]history.Op, error) {
	var out []history.Op
	_, err := Generate(cfg, func(op *history.Op) error { out = append(out, *op); return nil })
	return out, err
}

// Generate gives every event of the history cfg describes to emit, in
// order, and returns how many it gave.
func Generate(cfg Config, emit func(*history.Op) error) (int64, error) {
	g := &gen{rng: rand.New(rand.NewPCG(cfg.Seed, 27)), emit: emit, target: int64(cfg.Events)}
	var ms []machine
	switch cfg.Shape {
	case Valid, Crash, Unmatched, LongHolds, CrashNoExpiry:
		for k := range 10 {
			ms = append(ms, g.newPair(fmt.Sprintf("lock-%d", k), cfg.Shape))
		}
	case ManyKeys:
		for range 10 {
			ms = append(ms, &fresh{p: g.proc()})
		}
	default:
		return 0, fmt.Errorf("unknown history shape %q (want one of %v)", cfg.Shape, Shapes)
	}
	for live := len(ms); live > 0; {
		live = 0
		for _, m := range ms {
			if m.step(g) {
				live++
			}
			if g.err != nil {
				return g.n, g.err
			}
		}
	}
	g.end(ms)
	return g.n, g.err
}

// gen is the clock, the numbering and the output the keys share.
type gen struct {
	rng    *rand.Rand
	emit   func(*history.Op) error
	err    error
	t      int64 // time of the latest event
	n      int64 // events emitted (the next index)
	procs  int   // processes made
	target int64
}

// done reports whether the clients have recorded enough events.
func (g *gen) done() bool { return g.n >= g.target }

// proc is a new process number.
func (g *gen) proc() int {
	g.procs++
	return g.procs - 1
}

// ev emits one event, a little after the one before.
func (g *gen) ev(p int, typ history.Type, f, key string, v *history.Value, errText string) int64 {
	if g.err != nil {
		return g.t
	}
	g.t += 1 + g.rng.Int64N(20_000)
	op := history.Op{Index: g.n, Time: g.t, Process: history.Process(p), Type: typ, F: f, Key: key, Value: v, Error: errText}
	g.n++
	g.err = g.emit(&op)
	return g.t
}

// end records the final heal, a recovery period longer than a lease, and
// a final read of every counter a client wrote.
func (g *gen) end(ms []machine) {
	g.nemesis(history.Invoke, history.FFinalHeal)
	g.nemesis(history.OK, history.FFinalHeal)
	g.t += max(TTL, 1e9) + 1e8
	reader := g.proc()
	for _, m := range ms {
		pm, ok := m.(*pair)
		if !ok {
			continue
		}
		g.ev(reader, history.Invoke, history.FRead, pm.key, nil, "")
		g.ev(reader, history.OK, history.FRead, pm.key, counter(pm.counter), "")
	}
}

func (g *gen) nemesis(typ history.Type, f string) {
	g.ev(int(history.Nemesis), typ, f, "", nil, "")
}

func counter(v int64) *history.Value { return &history.Value{Counter: &v} }

// machine is one key's clients (or one client of fresh keys): step
// records its next event, or returns false when it has finished.
type machine interface{ step(g *gen) bool }

// fresh is a client that acquires and releases a new key each cycle.
type fresh struct {
	p, phase   int
	key, token string
	inv        int64
}

func (f *fresh) step(g *gen) bool {
	switch f.phase {
	case 0:
		if g.done() {
			return false
		}
		f.key = fmt.Sprintf("key-%d", g.n)
		f.inv = g.ev(f.p, history.Invoke, history.FAcquire, f.key, nil, "")
	case 1:
		f.token = tok(g.n)
		g.ev(f.p, history.OK, history.FAcquire, f.key, &history.Value{Token: f.token, Deadline: f.inv + TTL}, "")
	case 2:
		g.ev(f.p, history.Invoke, history.FRelease, f.key, &history.Value{Token: f.token}, "")
	case 3:
		g.ev(f.p, history.OK, history.FRelease, f.key, nil, "")
	}
	f.phase = (f.phase + 1) % 4
	return true
}

func tok(n int64) string { return fmt.Sprintf("%016x", uint64(n)*0x9e3779b97f4a7c15) }
