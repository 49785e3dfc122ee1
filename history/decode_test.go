package history

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"unsafe"
)

// decodeSeeds are lines in and just outside the recorder's shape.
var decodeSeeds = []string{
	`{"index":0,"time":1,"process":0,"type":"invoke","f":"acquire","key":"lock-0"}`,
	`{"index":4,"time":5823588,"process":1,"type":"ok","f":"acquire","key":"lock-0","value":{"token":"f73b","deadline":1001077582,"fence":3,"nodes":["n1","n2"],"quorum":2}}`,
	`{"index":1,"time":2,"process":3,"type":"ok","f":"write","key":"k","value":{"counter":7,"rejected":true}}`,
	`{"index":1,"time":2,"process":1000000,"owner":3,"type":"fail","f":"renew","key":"k","value":{"token":"t","not_held":true},"error":"not held"}`,
	`{"index":9,"time":9,"process":"nemesis","type":"info","f":"start-partition","value":{"targets":["c0->n1"],"detail":"clock +60s","duration":5}}`,
	`{"index":9,"time":9,"process":"nemesis","type":"info","f":"x","value":{"targets":[]}}`,
	`{ "index" : 0 , "time" : 1 , "process" : 0 , "type" : "invoke" , "f" : "acquire" }`,
	`{"index":0,"time":1,"process":0,"type":"invoke","f":"acquire","key":"l\u00e9"}`,
	`{"index":0,"time":1,"process":0,"type":"invoke","f":"acquire","key":"lé"}`,
	`{"index":0,"time":1,"process":0,"type":"invoke","f":"acquire","key":"l` + "\xff" + `"}`,
	`{"index":0,"time":1,"process":0,"type":"invoke","f":"acquire","value":null}`,
	`{"index":0,"time":1,"process":0,"owner":null,"type":"invoke","f":"renew"}`,
	`{"Index":0,"time":1,"process":0,"type":"invoke","f":"acquire"}`,
	`{"index":0,"index":5,"time":1,"process":0,"type":"invoke","f":"acquire"}`,
	`{"index":0,"time":1e3,"process":0,"type":"invoke","f":"acquire"}`,
	`{"index":0,"time":1.0,"process":0,"type":"invoke","f":"acquire"}`,
	`{"index":0,"time":01,"process":0,"type":"invoke","f":"acquire"}`,
	`{"index":0,"time":-0,"process":-0,"type":"invoke","f":"acquire"}`,
	`{"index":0,"time":99999999999999999999,"process":0,"type":"invoke","f":"acquire"}`,
	`{"index":0,"time":1,"process":"nemesis ","type":"invoke","f":"acquire"}`,
	`{"index":0,"time":1,"process":"3","type":"invoke","f":"acquire"}`,
	`{"index":0,"time":1,"process":0,"type":"invoke","f":"acquire","extra":1}`,
	`{"index":0,"time":1,"process":0,"type":"invoke","f":"acquire","value":{"extra":1}}`,
	`{"index":0,"time":1,"process":0,"type":"invoke","f":"acquire"} x`,
	`{"index":0,"time":1,"process":0,"type":"invoke","f":"acquire"}{}`,
	`{"index":0,"time":1,"process":0,"type":"bogus","f":"acquire"}`,
	`{"index":0,"time":1,"process":0,"type":"invoke","f":"acquire",}`,
	`{"index":0,"time":1,"process":0,"type":"invoke","f":"acquire","value":{"rejected":tru}}`,
	`{"index":0,"time":1,"process":0,"type":"invoke","f":"acquire","value":{"nodes":["a",]}}`,
	`{"index":0,"time":1,"process":0,"type":"invoke","f":"acquire","value":{"quorum":9999999999}}`,
	`{}`, `[]`, `null`, `{`, `"x"`,
}

// FuzzDecoderAgrees: the hand-written fast path and the strict reflecting
// parser agree on every line: same event, same acceptance. (The fast path
// may decline a line; then the strict parser is the answer by definition.)
func FuzzDecoderAgrees(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		b = bytes.TrimSpace(b)
		if len(b) == 0 {
			return
		}
		want, werr := parseLine(b)
		d := newDecoder()
		for _, path := range []struct {
			name  string
			parse func([]byte) (Op, bool)
		}{{"fast", d.fast}, {"ordered", d.ordered}} {
			got, ok := path.parse(b)
			if !ok {
				continue
			}
			if werr != nil && got.Validate() == nil {
				t.Fatalf("%s path accepted %q, which the strict parser refuses: %v", path.name, b, werr)
			}
			if werr == nil && !reflect.DeepEqual(got, want) {
				t.Fatalf("%q decodes to\n%+v (%s)\n%+v (strict)", b, got, path.name, want)
			}
		}
		// The reader's way: into an event that held another, twice with
		// one decoder (the second through its cache of recent strings).
		for round := range 2 {
			op := Op{Index: 7, Key: "other", Error: "e", Value: &Value{Token: "t"}}
			err := d.decodeInto(b, &op)
			if (err == nil) != (werr == nil) {
				t.Fatalf("round %d: decodeInto(%q): %v, strict parser: %v", round, b, err, werr)
			}
			if err == nil && !reflect.DeepEqual(op, want) {
				t.Fatalf("round %d: %q decodes into\n%+v\n%+v (strict)", round, b, op, want)
			}
		}
	})
}

// The recorder's own lines all take the fastest path, ordered.
func TestRecorderLinesTakeTheFastPath(t *testing.T) {
	var buf bytes.Buffer
	for _, op := range synthetic(2000, 3) {
		line, err := json.Marshal(op)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := newDecoder().ordered(line)
		if !ok {
			t.Fatalf("the ordered path declined the recorder's line %s", line)
		}
		if !reflect.DeepEqual(got, op) {
			t.Fatalf("%s decodes to %+v", line, got)
		}
		buf.Write(append(line, '\n'))
	}
	res, err := Read(&buf)
	if err != nil || len(res.Ops) != 2000 {
		t.Fatalf("read back: %v, %d events", err, len(res.Ops))
	}
}

// synthetic is a deterministic history of n events in the shape the mutex
// workload writes: clients cycling acquire, read, write, release on keys
// keys, some acquires failing, some renews by renewer threads, and a
// nemesis fault now and then. It need not be checkable; see the checker's
// simulator for that.
func synthetic(n, keys int) []Op {
	rng := rand.New(rand.NewPCG(uint64(n), uint64(keys)))
	out := make([]Op, 0, n)
	var t int64
	add := func(op Op) {
		t += 1 + rng.Int64N(200_000)
		op.Index, op.Time = int64(len(out)), t
		out = append(out, op)
	}
	for len(out) < n {
		p := Process(rng.IntN(10))
		key := fmt.Sprintf("lock-%d", rng.IntN(keys))
		tok := fmt.Sprintf("%016x%016x", rng.Uint64(), rng.Uint64())
		switch rng.IntN(8) {
		case 0:
			add(Op{Process: p, Type: Invoke, F: FAcquire, Key: key})
			add(Op{Process: p, Type: Fail, F: FAcquire, Key: key, Error: "lock not acquired"})
		case 1:
			owner := p
			add(Op{Process: RenewerBaseForTest + p, Owner: &owner, Type: Invoke, F: FRenew, Key: key})
			add(Op{Process: RenewerBaseForTest + p, Owner: &owner, Type: OK, F: FRenew, Key: key, Value: &Value{Token: tok, Deadline: t + 1e9}})
		case 2:
			add(Op{Process: Nemesis, Type: Info, F: "start-partition", Value: &Value{Targets: []string{"c0->n1", "n2"}, Detail: "blackhole"}})
		default:
			c := int64(rng.IntN(1000))
			next := c + 1
			add(Op{Process: p, Type: Invoke, F: FAcquire, Key: key})
			add(Op{Process: p, Type: OK, F: FAcquire, Key: key, Value: &Value{Token: tok, Fence: c + 1, Deadline: t + 1e9, Nodes: []string{"n1", "n2", "n3"}, Quorum: 2}})
			add(Op{Process: p, Type: Invoke, F: FRead, Key: key})
			add(Op{Process: p, Type: OK, F: FRead, Key: key, Value: &Value{Counter: &c}})
			add(Op{Process: p, Type: Invoke, F: FWrite, Key: key, Value: &Value{Counter: &next, Fence: c + 1}})
			add(Op{Process: p, Type: OK, F: FWrite, Key: key, Value: &Value{Counter: &next, Rejected: c%7 == 0}})
			add(Op{Process: p, Type: Invoke, F: FRelease, Key: key, Value: &Value{Token: tok}})
			add(Op{Process: p, Type: OK, F: FRelease, Key: key})
		}
	}
	return out[:n]
}

// RenewerBaseForTest mirrors workloads.RenewerBase without importing it.
const RenewerBaseForTest = 1_000_000

func syntheticJSONL(b testing.TB, n int) []byte {
	var buf bytes.Buffer
	for _, op := range synthetic(n, 4) {
		line, err := json.Marshal(op)
		if err != nil {
			b.Fatal(err)
		}
		buf.Write(append(line, '\n'))
	}
	return buf.Bytes()
}

// BenchmarkRead100k and BenchmarkRead1M read a history in the recorder's
// shape; BenchmarkReadStrict100k is the reflecting parser on the same
// lines, the cost every line paid before.
func BenchmarkRead100k(b *testing.B) { benchRead(b, 100_000) }
func BenchmarkRead1M(b *testing.B)   { benchRead(b, 1_000_000) }

func benchRead(b *testing.B, n int) {
	data := syntheticJSONL(b, n)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		res, err := readContext(b.Context(), bytes.NewReader(data), len(data)/100)
		if err != nil || len(res.Ops) != n {
			b.Fatalf("%v, %d events", err, len(res.Ops))
		}
	}
}

// BenchmarkDecode is the decoder alone on the recorder's lines, already
// split (no reading, no growing of a slice of events): what decodeInto
// costs a line, as the scanner calls it.
func BenchmarkDecode(b *testing.B) {
	data := syntheticJSONL(b, 100_000)
	lines := bytes.Split(bytes.TrimSpace(data), []byte("\n"))
	d := newDecoder()
	var op Op
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		for _, l := range lines {
			if err := d.decodeInto(l, &op); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func BenchmarkReadStrict100k(b *testing.B) {
	data := syntheticJSONL(b, 100_000)
	lines := bytes.Split(bytes.TrimSpace(data), []byte("\n"))
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		for _, l := range lines {
			if _, err := parseLine(l); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkRecord is clients recording events in parallel into a file, as
// a run does: the cost a client pays per event (the disk is the writer's).
func BenchmarkRecord(b *testing.B) {
	f, err := os.Create(filepath.Join(b.TempDir(), "history.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	rec := NewRecorder(NewClock(), f)
	b.ReportAllocs()
	b.SetParallelism(5) // 10 clients on the 2 cores here
	b.RunParallel(func(pb *testing.PB) {
		v := &Value{Token: "f73bc52e29dba447171ace72951abbe3", Deadline: 1e9}
		for pb.Next() {
			rec.Complete(3, OK, FAcquire, "lock-0", v, nil)
		}
	})
	if err := rec.Close(); err != nil {
		b.Fatal(err)
	}
}

// TestInternTableStaysSmall: a history of a fresh key per event interns
// no more than internSlots of them at once (a newer string takes an older
// one's slot), goes on interning the latest keys, and hands out one
// string for equal ones while it keeps them.
func TestInternTableStaysSmall(t *testing.T) {
	d := newDecoder()
	for i := range 3 * internSlots {
		key := fmt.Sprintf("key-%d", i)
		s := d.intern([]byte(key))
		if s != key {
			t.Fatalf("interned %q as %q", key, s)
		}
		if again := d.intern([]byte(key)); unsafe.StringData(again) != unsafe.StringData(s) {
			t.Fatalf("%q interned twice", key)
		}
	}
	if len(d.strs) != internSlots {
		t.Fatalf("the table grew to %d slots, want %d", len(d.strs), internSlots)
	}
	held := 0
	for _, s := range d.strs {
		if s.s != "" {
			held++
		}
	}
	if held < internSlots/2 {
		t.Fatalf("%d of %d slots hold a string after %d keys", held, internSlots, 3*internSlots)
	}
	if !slices.ContainsFunc(d.strs, func(s interned) bool { return s.s == fmt.Sprintf("key-%d", 3*internSlots-1) }) {
		t.Fatal("the latest key was not interned")
	}
}

// TestPlainRunStopsBeforeEveryByteStrLooksAt: plainRun never passes over
// a byte str must look at (strByte), wherever it lies among plain ones,
// and stops at it when 8 bytes from it on are in the line.
func TestPlainRunStopsBeforeEveryByteStrLooksAt(t *testing.T) {
	plain := []byte("key-0123456789abcdefXYZ ~!{}[]:,")
	for c := range 256 {
		if strByte[c] == 0 {
			continue
		}
		for n := range 24 {
			for at := range n + 1 {
				b := make([]byte, 0, n+1)
				for j := range n {
					b = append(b, plain[(j*7+c)%len(plain)])
				}
				b = append(b[:at], append([]byte{byte(c)}, b[at:]...)...)
				got := plainRun(b, 0)
				if got > at || got < at && at+8 <= len(b) {
					t.Fatalf("plainRun(%q) = %d, want the byte %#x at %d", b, got, c, at)
				}
			}
		}
	}
	b := []byte("0123456789abcdef01234567")
	if got := plainRun(b, 0); got != 24 {
		t.Fatalf("plainRun(%q) = %d, want 24", b, got)
	}
}

// TestPlainRunAgreesWithTheByteLoop: on lines of random bytes (plain ones
// mostly, so that the bytes str looks at meet in every arrangement, two
// in a word among them), plainRun stops where the byte loop over strByte
// would, or before it, and exactly there when the line holds 8 bytes
// from there on.
func TestPlainRunAgreesWithTheByteLoop(t *testing.T) {
	r := rand.New(rand.NewPCG(27, 29))
	special := []byte{0, 0x1f, 0x20, 0x21, '"', '\\', 0x5b, 0x5d, 0x7f, 0x80, 0xc3, 0xff, 0x01}
	for range 200_000 {
		b := make([]byte, r.IntN(40))
		for j := range b {
			if r.IntN(6) == 0 {
				b[j] = special[r.IntN(len(special))]
			} else {
				b[j] = byte(0x20 + r.IntN(0x60))
			}
		}
		from := r.IntN(len(b) + 1)
		want := from
		for want < len(b) && strByte[b[want]] == 0 {
			want++
		}
		got := plainRun(b, from)
		if got > want || got < want && want+8 <= len(b) {
			t.Fatalf("plainRun(%q, %d) = %d, the byte loop stops at %d", b, from, got, want)
		}
	}
}
