package history

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
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
	`{"index":12345678,"time":123456789012,"process":1000007,"owner":7,"type":"ok","f":"renew","key":"lock-12345678"}`,
	`{"index":123456789012345678,"time":1,"process":0,"type":"invoke","f":"acquire"}`,
	`{"index":1234567890123456789,"time":1,"process":0,"type":"invoke","f":"acquire"}`,
	`{"index":00000000001,"time":1,"process":0,"type":"invoke","f":"acquire"}`,
	`{"index":1,"time":12345678.5,"process":0,"type":"invoke","f":"acquire"}`,
	`{"index":1,"time":-12345678,"process":0,"type":"invoke","f":"acquire"}`,
	`{"index":1,"time":2,"process":0,"type":"invokes","f":"acquire"}`,
	`{"index":1,"time":2,"process":0,"type":"invoke","f":"acquirer"}`,
	`{"index":1,"time":2,"process":0,"type":"invoke","f":"acquire\u0022"}`,
	`{"index":1,"time":2,"process":0,"type":"ok","f":"read"}`,
	`{"index":1,"time":2,"process":0,"type":"fail","f":"write","error":"e"}`,
	`{"index":1,"time":2,"process":0,"type":"info","f":"renew"}`,
	`{"index":1,"time":2,"process":0,"type":"ok","f":"release","key":"a\"b"}`,
	`{"index":1,"time":2,"process":0,"type":"ok","f":"release","value":{"fence":123456789,"deadline":1234567890123}}`,
	`{"index":1,"time":2,"process":0,"type":"ok","f":"acquire","value":{"token":"t","fence":1,"deadline":2,"counter":3}}`,
	`{"index":1,"time":2,"process":0,"type":"ok","f":"write","value":{"fence":1,"counter":-3}}`,
	`{"index":1,"time":2,"process":0,"type":"ok","f":"write","value":{"deadline":01}}`,
	`{"index":1,"time":2,"process":0,"type":"ok","f":"write","value":{"token":"a","token":"b"}}`,
	`{"index":1,"time":2,"process":0,"type":"ok","f":"write","value":{"counter":1,"fence":2}}`,
	`{"index":1,"time":2,"process":0,"type":"ok","f":"write","value":{}}`,
	`{}`, `[]`, `null`, `{`, `"x"`,
}

// FuzzDecoderAgrees: the hand-written fast path and the strict reflecting
// parser agree on every line: same event, same acceptance. (The fast path
// may decline a line; then the strict parser is the answer by definition.)
func FuzzDecoderAgrees(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	f.Add([]byte(decodeSeeds[0] + "\n" + decodeSeeds[1]))
	f.Add([]byte(decodeSeeds[0] + " \n"))
	f.Add([]byte("{\"index\":\n0,\"time\":1,\"process\":0,\"type\":\"invoke\",\"f\":\"acquire\"}\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		inPlaceAgrees(t, b)
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

// inPlaceAgrees: what orderedLine takes from the head of b, as the
// scanner's block, is a whole line, with its newline, that ordered takes
// on its own, and decodes to the same event.
func inPlaceAgrees(t *testing.T, b []byte) {
	var op Op
	n := newDecoder().orderedLine(b, &op)
	if n == 0 {
		return
	}
	line := b[:n-1]
	if b[n-1] != '\n' || bytes.IndexByte(line, '\n') >= 0 {
		t.Fatalf("orderedLine(%q) took %d bytes, not a line", b, n)
	}
	want, ok := newDecoder().ordered(line)
	if !ok || !reflect.DeepEqual(op, want) {
		t.Fatalf("orderedLine(%q) decodes to\n%+v\n%+v (ordered on the line, %v)", b, op, want, ok)
	}
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

// BenchmarkDecode is the decoder alone on lines already split (no
// reading, no growing of a slice of events): what decodeInto costs a
// line, as the scanner calls it. recorder is synthetic's events, short
// the crash run's without expiry (acquires that never complete but fail,
// no values: a history where decoding is two fifths of the check).
func BenchmarkDecode(b *testing.B) {
	for _, c := range []struct {
		name string
		data []byte
	}{{"recorder", syntheticJSONL(b, 100_000)}, {"short", shortJSONL(100_000)}} {
		b.Run(c.name, func(b *testing.B) {
			lines := bytes.Split(bytes.TrimSpace(c.data), []byte("\n"))
			d := newDecoder()
			var op Op
			b.SetBytes(int64(len(c.data)))
			b.ReportAllocs()
			for b.Loop() {
				for _, l := range lines {
					if err := d.decodeInto(l, &op); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// shortJSONL is n events of a crash run without expiry: clients invoking
// acquires on ten keys, a few failing, at times of ten digits.
func shortJSONL(n int) []byte {
	var buf bytes.Buffer
	for i := range n {
		if i%50 == 49 {
			fmt.Fprintf(&buf, `{"index":%d,"time":%d,"process":%d,"type":"fail","f":"acquire","key":"lock-%d","error":"lock not acquired"}`+"\n", i, 1_000_000_000+int64(i)*9913, i%20, i%10)
			continue
		}
		fmt.Fprintf(&buf, `{"index":%d,"time":%d,"process":%d,"type":"invoke","f":"acquire","key":"lock-%d"}`+"\n", i, 1_000_000_000+int64(i)*9913, i%20, i%10)
	}
	return buf.Bytes()
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

// intByLoop is scan.int as it was before digits read eight at a time:
// the byte loop the fast path must agree with, digit for digit.
func intByLoop(b []byte) (int64, bool) {
	i, neg := 0, false
	if i < len(b) && b[i] == '-' {
		neg = true
		i++
	}
	start := i
	var n int64
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		n = n*10 + int64(b[i]-'0')
		i++
	}
	digits := i - start
	if digits == 0 || digits > 18 || (digits > 1 && b[start] == '0') {
		return 0, false
	}
	if i < len(b) {
		switch b[i] {
		case '.', 'e', 'E':
			return 0, false
		}
	}
	if neg {
		n = -n
	}
	return n, true
}

// TestIntAgreesWithTheByteLoop: scan.int reads every number as the byte
// loop did: 0 to 24 digits, with and without '-', a leading zero, each
// byte that may follow a number or the line's end right after it, and
// the number starting at every place in the line's last 16 bytes (so
// that it meets the end of the words digits loads at every digit).
func TestIntAgreesWithTheByteLoop(t *testing.T) {
	r := rand.New(rand.NewPCG(32, 27))
	after := []string{"", ",", "}", ".5", "e3", "E3", " ", "/", ":", "\x80", "\xff", "a", "\x00"}
	for nd := range 25 {
		for _, lead := range []string{"", "0", "-", "-0"} {
			for _, tail := range after {
				for pad := range 10 {
					num := []byte(lead)
					for k := range nd {
						c := byte('0' + r.IntN(10))
						if k == 0 && lead == "" && r.IntN(3) == 0 {
							c = '9' // the largest of a digit count, often
						}
						num = append(num, c)
					}
					line := append(append(num, tail...), bytes.Repeat([]byte("x"), pad)...)
					want, wok := intByLoop(line)
					s := scan{b: line}
					got, ok := s.int()
					if ok != wok || ok && got != want {
						t.Fatalf("int(%q) = %d, %v; the byte loop: %d, %v", line, got, ok, want, wok)
					}
					if ok && s.i != len(num) {
						t.Fatalf("int(%q) stopped at %d, want %d", line, s.i, len(num))
					}
				}
			}
		}
	}
}

// TestIntEdges: the numbers at the edges of what the fast path takes.
func TestIntEdges(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true}, {"-0", 0, true}, {"7", 7, true}, {"-7", -7, true},
		{"00", 0, false}, {"01", 0, false}, {"-01", 0, false}, {"0123456789", 0, false},
		{"-", 0, false}, {"", 0, false}, {"--1", 0, false}, {"+1", 0, false},
		{"12345678", 12345678, true}, {"123456789", 123456789, true},
		{"1234567890123456", 1234567890123456, true},
		{"999999999999999999", 999999999999999999, true},
		{"-999999999999999999", -999999999999999999, true},
		{"1000000000000000000", 0, false}, {"9223372036854775807", 0, false},
		{"99999999999999999999999", 0, false},
		{"12345678.0", 0, false}, {"12345678e1", 0, false}, {"1234567E1", 0, false},
		{"12345678,", 12345678, true}, {"1234567}", 1234567, true},
		{" 42", 42, true}, {"\t-42 ", -42, true},
	} {
		s := scan{b: []byte(c.in)}
		got, ok := s.int()
		if ok != c.ok || ok && got != c.want {
			t.Errorf("int(%q) = %d, %v, want %d, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

// TestDigitRun: digitRun counts the digits before the first byte that is
// not one, for every byte at every place of a word of digits, and for
// random words against a byte loop.
func TestDigitRun(t *testing.T) {
	for c := range 256 {
		for at := range 8 {
			w := []byte("31415926")
			w[at] = byte(c)
			want := at
			if c >= '0' && c <= '9' {
				want = 8
			}
			if got := digitRun(binary.LittleEndian.Uint64(w)); got != want {
				t.Fatalf("digitRun(%q) = %d, want %d", w, got, want)
			}
		}
	}
	r := rand.New(rand.NewPCG(8, 8))
	for range 100_000 {
		var w [8]byte
		for j := range w {
			w[j] = byte('0' + r.IntN(12) - 1) // '/', digits, ':'
			if r.IntN(20) == 0 {
				w[j] = byte(r.IntN(256))
			}
		}
		want := 0
		for want < 8 && w[want] >= '0' && w[want] <= '9' {
			want++
		}
		if got := digitRun(binary.LittleEndian.Uint64(w[:])); got != want {
			t.Fatalf("digitRun(%q) = %d, want %d", w, got, want)
		}
	}
}

// TestEightDigits: the first k digits of a word, whatever the bytes after
// them, are the number strconv reads, for every k.
func TestEightDigits(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 8))
	for range 100_000 {
		var w [8]byte
		for j := range w {
			w[j] = byte(r.IntN(256))
		}
		k := r.IntN(9)
		for j := range k {
			w[j] = byte('0' + r.IntN(10))
		}
		want := uint64(0)
		if k > 0 {
			want, _ = strconv.ParseUint(string(w[:k]), 10, 64)
		}
		if got := eightDigits(binary.LittleEndian.Uint64(w[:]), k); got != want {
			t.Fatalf("eightDigits(%q, %d) = %d, want %d", w, k, got, want)
		}
	}
}

// chunkReader returns a random number of bytes (1 to max) per read, so
// that lines end, and blocks fill, at every place.
type chunkReader struct {
	b   []byte
	r   *rand.Rand
	max int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.b) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), len(c.b), 1+c.r.IntN(c.max))
	copy(p, c.b[:n])
	c.b = c.b[n:]
	return n, nil
}

// linesOneByOne is what the reader must make of data, which it read
// without error: each line trimmed and, unless empty, decoded by the
// strict parser on its own; a last line without a newline dropped if the
// reader says it was cut off.
func linesOneByOne(t *testing.T, data []byte, truncated bool) []Op {
	var ops []Op
	for l := range bytes.Lines(data) {
		last := l[len(l)-1] != '\n'
		l = bytes.TrimSpace(l)
		if len(l) == 0 || last && truncated {
			continue
		}
		op, err := parseLine(l)
		if err != nil {
			t.Fatalf("%.80q: %v", l, err)
		}
		ops = append(ops, op)
	}
	return ops
}

// TestScannerReadsLinesAcrossBlocks: a history of several blocks, with
// lines far longer than an event (up to most of a block), lines the
// scanner cannot parse in place (another order, whitespace, "\r\n",
// empty ones), read whole or in chunks of any size, gives each line's
// event as decoded on its own, and names the right line of an error after
// them.
func TestScannerReadsLinesAcrossBlocks(t *testing.T) {
	var buf bytes.Buffer
	r := rand.New(rand.NewPCG(3, 2))
	for i, op := range synthetic(30_000, 5) {
		if i%5000 == 17 {
			op.Key = strings.Repeat("k", r.IntN(MaxLine-200))
		}
		line, err := json.Marshal(op)
		if err != nil {
			t.Fatal(err)
		}
		switch i % 1000 {
		case 1:
			line = append([]byte(" "), line...)
		case 2:
			line = append(line, '\r')
		case 3:
			line = append(line, "\n\n"...)
		case 4:
			line = []byte(fmt.Sprintf(`{"time":%d,"index":%d,"process":0,"type":"invoke","f":"acquire","key":"k"}`, op.Time, op.Index))
		}
		buf.Write(append(line, '\n'))
	}
	data := buf.Bytes()
	if len(data) < 3*MaxLine {
		t.Fatalf("%d bytes: not several blocks", len(data))
	}
	want := linesOneByOne(t, data, false)
	lines := bytes.Count(data, []byte("\n"))
	bad := append(slices.Clip(data), `{"index":1,"time":-5,"process":0,"type":"invoke","f":"acquire"}`+"\n"...)
	for _, src := range []struct {
		name string
		r    func([]byte) io.Reader
	}{
		{"whole", func(b []byte) io.Reader { return bytes.NewReader(b) }},
		{"chunks", func(b []byte) io.Reader { return &chunkReader{b: b, r: rand.New(rand.NewPCG(5, 5)), max: 100_000} }},
		{"small chunks", func(b []byte) io.Reader { return &chunkReader{b: b, r: rand.New(rand.NewPCG(6, 6)), max: 100} }},
	} {
		res, err := Read(src.r(data))
		if err != nil || res.Truncated || !reflect.DeepEqual(res.Ops, want) {
			t.Fatalf("%s: %v, truncated %v, %d events, want %d as decoded line by line", src.name, err, res.Truncated, len(res.Ops), len(want))
		}
		_, err = Read(src.r(bad))
		var le *LineError
		if !errors.As(err, &le) || le.Line != lines+1 {
			t.Fatalf("%s: a bad last line: %v, want an error on line %d", src.name, err, lines+1)
		}
	}
}

// TestScannerLineLimit: a line of MaxLine-1 bytes is read, one of MaxLine
// is an error that says why, wherever the line lies in the history.
func TestScannerLineLimit(t *testing.T) {
	ev := func(n int) []byte {
		b := []byte(`{"index":0,"time":1,"process":0,"type":"invoke","f":"acquire","key":""}`)
		return append(b[:len(b)-2], strings.Repeat("k", n-len(b))+`"}`...)
	}
	short := `{"index":0,"time":1,"process":0,"type":"invoke","f":"acquire","key":"k"}` + "\n"
	for _, before := range []string{"", short, strings.Repeat(short, 1000)} {
		for _, n := range []int{MaxLine - 1, MaxLine} {
			data := append([]byte(before), ev(n)...)
			data = append(data, "\n"+short...)
			res, err := Read(bytes.NewReader(data))
			if n < MaxLine && (err != nil || len(res.Ops) != strings.Count(before, "\n")+2) {
				t.Fatalf("a line of %d bytes after %d: %v, %d events", n, len(before), err, len(res.Ops))
			}
			if n == MaxLine && (err == nil || !strings.Contains(err.Error(), "longer than")) {
				t.Fatalf("a line of %d bytes after %d: %v", n, len(before), err)
			}
		}
	}
}

// TestScannerStopsAtNewlines: lines parsed in place never run into the
// next line (whitespace there is not a newline): an event cut in two by
// a newline is two bad lines, not one event.
func TestScannerStopsAtNewlines(t *testing.T) {
	for _, data := range []string{
		"{\"index\":\n0,\"time\":1,\"process\":0,\"type\":\"invoke\",\"f\":\"acquire\"}\n",
		"{\"index\":0,\"time\":1,\"process\":0,\"type\":\"invoke\",\"f\":\"acquire\",\"key\":\"a\n\"}\n",
		"{\"index\":0,\"time\":1,\"process\":0,\"type\":\"invoke\",\"f\":\"acquire\",\"value\":{\n}}\n",
		"{\"index\":0,\"time\":1,\"process\":0,\"type\":\"invoke\",\"f\":\"acquire\"\n}\n",
	} {
		_, err := Read(strings.NewReader(data + data))
		var le *LineError
		if !errors.As(err, &le) || le.Line != 1 {
			t.Errorf("%q: %v, want an error on line 1", data, err)
		}
	}
}

// TestProcessAgreesWithInt: a process read by client's shortcut is the
// one int reads, at the same place, for every arrangement of up to four
// bytes that matter to it, at the line's end or not.
func TestProcessAgreesWithInt(t *testing.T) {
	alphabet := []byte("0159,-. e}\"x")
	var line []byte
	var try func(depth int)
	try = func(depth int) {
		for _, tail := range []string{"", ",", ",\"type\":\"ok\"}"} {
			b := append(slices.Clip(line), tail...)
			a, r := scan{b: b}, scan{b: b}
			got, ok := a.process()
			want, wok := r.processByInt()
			if ok != wok || ok && (got != want || a.i != r.i) {
				t.Fatalf("process(%q) = %d, %v at %d; by int: %d, %v at %d", b, got, ok, a.i, want, wok, r.i)
			}
		}
		if depth == 4 {
			return
		}
		for _, c := range alphabet {
			line = append(line, c)
			try(depth + 1)
			line = line[:len(line)-1]
		}
	}
	try(0)
}

// TestOrderedValueAgreesWithValue: orderedValue reads each value as value
// does (the same Value, to the same place, or neither), whether it takes
// the value itself or leaves it to value.
func TestOrderedValueAgreesWithValue(t *testing.T) {
	fields := []string{`"token":"f73b"`, `"token":"a\u0041"`, `"fence":3`, `"fence":-3`, `"fence":03`, `"deadline":1001077582`,
		`"deadline":1e3`, `"counter":0`, `"counter":-1`, `"counter":12345678901`, `"nodes":["n1"]`, `"quorum":2`, `"rejected":true`, `"x":1`}
	r := rand.New(rand.NewPCG(4, 4))
	d1, d2 := newDecoder(), newDecoder()
	for range 20_000 {
		var obj []string
		for range r.IntN(5) {
			obj = append(obj, fields[r.IntN(len(fields))])
		}
		if r.IntN(3) > 0 { // mostly in Value's order, as the recorder writes them
			slices.SortStableFunc(obj, func(a, b string) int {
				return slices.IndexFunc(fields, func(f string) bool { return f == a }) - slices.IndexFunc(fields, func(f string) bool { return f == b })
			})
		}
		sep := []string{",", " , "}[r.IntN(2)]
		b := []byte("{" + strings.Join(obj, sep) + "}" + []string{"}", ",\"error\":\"e\"}", " }"}[r.IntN(3)])
		s1, s2 := scan{b: b}, scan{b: b}
		got, ok := d1.orderedValue(&s1)
		want, wok := d2.value(&s2)
		if ok != wok || ok && (!reflect.DeepEqual(got, want) || s1.i != s2.i) {
			t.Fatalf("orderedValue(%s) = %+v, %v at %d; value: %+v, %v at %d", b, got, ok, s1.i, want, wok, s2.i)
		}
	}
}
