package history

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"
)

// TestAppendOpIsJSON: appendOp writes exactly what encoding/json's
// Encoder writes, for the events a run records and for random ones with
// every field and awkward strings, or leaves the event to encoding/json.
func TestAppendOpIsJSON(t *testing.T) {
	n := int64(7)
	owner, nem := Process(1_000_003), Nemesis
	ops := []Op{
		{Index: 0, Time: 12, Process: 3, Type: Invoke, F: FAcquire, Key: "lock-0"},
		{Index: 1, Time: 1e12, Process: 3, Type: OK, F: FAcquire, Key: "lock-0", Value: &Value{Token: "00ab", Fence: 4, Deadline: 99, Nodes: []string{"n1", "n2"}, Quorum: 2, Session: true}},
		{Index: 2, Process: 3, Type: OK, F: FRead, Key: "lock-9", Value: &Value{Counter: &n}},
		{Index: 3, Process: 3, Type: Fail, F: FAcquire, Key: "lock-0", Error: `node n1: SET NX PX: lock not acquired`},
		{Index: 4, Process: 1_000_003, Owner: &owner, Type: Info, F: FRenew, Key: "k", Value: &Value{}, Error: "context deadline exceeded <&> \"quoted\" \\ \n tab\t é \u2028 \xff"},
		{Index: 5, Process: nem, Type: Info, F: "start-partition", Value: &Value{Targets: []string{"c0->n1"}, Fault: "partition", Ends: []string{"x"}, Mark: true, Detail: "d", Duration: 5, Rejected: true, NotHeld: true}},
		{Index: 6, Process: nem, Type: OK, F: "bump-clock", Value: &Value{Clocks: []NodeClock{{Node: "n1", Rate: 2}}}},
		{Index: 7, Process: -5, Type: OK, F: "x"},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		ops = append(ops, randomOp(rng))
	}
	for _, op := range ops {
		var want bytes.Buffer
		werr := json.NewEncoder(&want).Encode(&op)
		got, ok := appendOp([]byte("prefix"), &op)
		switch {
		case !ok && string(got) != "prefix":
			t.Errorf("%+v: appended %q and gave up", op, got)
		case !ok:
			continue
		case werr != nil:
			t.Errorf("%+v: encoding/json fails (%v), appendOp wrote %q", op, werr, got)
		case string(got[len("prefix"):]) != want.String():
			t.Errorf("appendOp\n got %s\nwant %s", got[len("prefix"):], want.Bytes())
		}
	}
}

// randomOp is an event with each field set or empty at random, from an
// alphabet with the bytes JSON escapes.
func randomOp(rng *rand.Rand) Op {
	str := func() string {
		if rng.IntN(3) == 0 {
			return ""
		}
		const alpha = "ab-_09 \"\\<>&\n\x01\x7f\xc3\xa9\xe2\x80\xa8\xff"
		b := make([]byte, rng.IntN(12))
		for i := range b {
			b[i] = alpha[rng.IntN(len(alpha))]
		}
		return string(b)
	}
	strs := func() []string {
		switch rng.IntN(3) {
		case 0:
			return nil
		case 1:
			return []string{}
		}
		return []string{str(), str()}
	}
	i64 := func() int64 { return []int64{0, 1, -1, 1 << 62, rng.Int64()}[rng.IntN(5)] }
	op := Op{Index: rng.Int64N(1e9), Time: rng.Int64N(1e15), Process: Process(rng.IntN(100) - 1),
		Type: []Type{Invoke, OK, Fail, Info}[rng.IntN(4)], F: str(), Key: str(), Error: str()}
	if rng.IntN(4) == 0 {
		o := Process(rng.IntN(3) + 1_000_000)
		op.Owner = &o
	}
	if rng.IntN(3) > 0 {
		v := &Value{Token: str(), Fence: i64(), Deadline: i64(), Session: rng.IntN(2) == 0, Nodes: strs(), Quorum: int(i64() % 1000),
			Rejected: rng.IntN(2) == 0, Duration: i64(), Targets: strs(), Detail: str(), Fault: str(), Ends: strs(), Mark: rng.IntN(2) == 0, NotHeld: rng.IntN(2) == 0}
		if rng.IntN(2) == 0 {
			c := i64()
			v.Counter = &c
		}
		op.Value = v
	}
	return op
}

// BenchmarkEncodeOp compares appendOp with encoding/json on a client's
// granted acquire.
func BenchmarkEncodeOp(b *testing.B) {
	op := Op{Index: 123456, Time: 98765432100, Process: 7, Type: OK, F: FAcquire, Key: "lock-3",
		Value: &Value{Token: "0123456789abcdef0123456789abcdef", Deadline: 98765432100 + 1e9}}
	b.Run("append", func(b *testing.B) {
		var buf []byte
		for range b.N {
			buf, _ = appendOp(buf[:0], &op)
		}
	})
	b.Run("json", func(b *testing.B) {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		for range b.N {
			buf.Reset()
			_ = enc.Encode(&op)
		}
	})
}
