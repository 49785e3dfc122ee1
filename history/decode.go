package history

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"hash/maphash"
	"math/bits"
	"unicode/utf16"
	"unicode/utf8"
)

// decoder parses history lines. The lines a recorder writes have one
// shape (encoding/json's output for Op), and a million of them through a
// reflecting decoder each cost more than all the checking after: so lines
// in exactly that shape are parsed by hand, and every other line (an
// unknown or misspelt field, an escape in a string, a null, a number
// written another way, a field added to Op after this parser was written)
// goes to the strict, reflecting parseLine. The fast path accepts a subset
// of what parseLine accepts and decodes it to the same Op, so the reader
// means the same whichever path a line takes (FuzzDecoderAgrees says so),
// and new fields decode without changes here.
//
// The decoder also shares the storage of what repeats: strings that recur
// (functions, types, keys, errors, nodes) are interned, and Values are cut
// from slabs, so that a long history costs few allocations and little
// memory.
type decoder struct {
	strs   []interned         // by hash (internSlots of them)
	seed   maphash.Seed       // of internSlot
	recent [recentKeys]string // the latest interned strings, by recentSlot
	values []Value
	ints   []int64
}

// recentKeys is how many interned strings the decoder remembers in front
// of its table: the keys of a run's clients recur, and comparing a few
// bytes is cheaper than hashing them.
const recentKeys = 64

// internSlots is the size of the interning table (a power of two): one
// string a slot, by its hash, a newer one in the place of an older one of
// the same slot. So the table keeps at most this many strings (a history
// with a million keys would otherwise keep every one: a table of 65,536
// of a fresh key per cycle's keys kept 7 MB alive to the end of the
// check, a tenth of what the check of such a history holds), and a
// string new to it costs a hash and a store: a map, emptied whenever it
// was full, cost a lookup that missed, an insertion and its growth for
// every key of a history of a fresh key per cycle. 64 KB.
const internSlots = 1 << 12

// interned is a slot of the interning table: a string and its hash, which
// tells most strings apart without reading the older one's bytes (a cache
// miss when the table's keys come and go).
type interned struct {
	h uint64
	s string
}

// slab is how many Values (and counters) are allocated at once.
const slab = 1024

func newDecoder() *decoder {
	return &decoder{strs: make([]interned, internSlots), seed: maphash.MakeSeed()}
}

// decode parses one trimmed, non-empty line into an event that satisfies
// Validate.
func (d *decoder) decode(b []byte) (Op, error) {
	var op Op
	err := d.decodeInto(b, &op)
	return op, err
}

// decodeInto is decode into *op, which it overwrites whole: the reader's
// event is parsed where it lies, not copied out of each parser in turn (a
// tenth of reading a history went to copying events).
func (d *decoder) decodeInto(b []byte, op *Op) error {
	*op = Op{}
	if d.orderedInto(b, op) {
		return op.validate()
	}
	*op = Op{}
	if d.fastInto(b, op) {
		return op.validate()
	}
	var err error
	*op, err = parseLine(b)
	return err
}

// ordered parses a line whose event's fields come in the order
// encoding/json writes them (Op's), each spelt as it spells them: the
// lines of every recorder. It compares each field's name where that
// order puts it, instead of reading the name and looking it up (which
// fast does, in any order): a line in another order, or with a field it
// does not expect, goes to fast. Each field's value is parsed as fast
// parses it, so ordered accepts a subset of what fast accepts and decodes
// it to the same Op.
func (d *decoder) ordered(b []byte) (Op, bool) {
	var op Op
	ok := d.orderedInto(b, &op)
	return op, ok
}

// orderedInto is ordered into *op, which must be zero.
func (d *decoder) orderedInto(b []byte, op *Op) bool {
	n, ok := d.orderedEvent(b, op)
	return ok && n == len(b)
}

// orderedLine is ordered on the lines of b from its start, where they lie
// in a reader's buffer: n is the length of the first line with its '\n',
// 0 when that line is not in the recorder's shape or not all in b (its
// newline not yet read). *op must be zero. No token ordered reads takes
// a newline (ws passes over none, a string refuses control characters),
// so the line the event ends is the whole first line of b, and what
// ordered makes of it on its own.
func (d *decoder) orderedLine(b []byte, op *Op) (n int) {
	n, ok := d.orderedEvent(b, op)
	if !ok || n >= len(b) || b[n] != '\n' {
		return 0
	}
	return n + 1
}

// orderedEvent is ordered on an event at b's start: end is past its
// closing brace, whatever follows.
func (d *decoder) orderedEvent(b []byte, op *Op) (end int, ok bool) {
	s := scan{b: b}
	ok = s.prefix2(`{"index"`, `:`)
	// An index and a time are digits alone: whitespace before them, or
	// a sign (which validate refuses), is fast's to read.
	if ok {
		op.Index, s.i, ok = digits(s.b, s.i)
	}
	if ok = ok && s.prefix(`,"time":`); ok {
		op.Time, s.i, ok = digits(s.b, s.i)
	}
	if ok = ok && s.prefix2(`,"proces`, `s":`); ok {
		op.Process, ok = s.process()
	}
	if ok && s.prefix2(`,"owner"`, `:`) {
		var p Process
		p, ok = s.process()
		op.Owner = &p
	}
	if ok = ok && s.prefix(`,"type":`); ok {
		op.Type, ok = s.typ(d)
	}
	if ok = ok && s.prefix(`,"f":`); ok {
		op.F, ok = s.f(d)
	}
	ok = ok && d.orderedRest(&s, op)
	return s.i, ok
}

// orderedRest is ordered's part after f: the optional key, value and
// error, and the closing brace.
func (d *decoder) orderedRest(s *scan, op *Op) bool {
	ok := true
	if s.prefix(`,"key":`) {
		var k []byte
		k, ok = s.quoted()
		op.Key = d.intern(k)
	}
	if ok && s.prefix2(`,"value"`, `:`) {
		op.Value, ok = d.orderedValue(s)
	}
	if ok && s.prefix2(`,"error"`, `:`) {
		var e []byte
		e, ok = s.quoted()
		op.Error = d.intern(e)
	}
	return ok && s.prefix("}")
}

// quoted is str for the strings of a recorder's line, which are plain
// ASCII: when the first byte plainRun stops at closes the string, the
// string is the bytes before it; anything else is str's to read.
func (s *scan) quoted() ([]byte, bool) {
	b, i := s.b, s.i
	if i < len(b) && b[i] == '"' {
		j := plainRun(b, i+1)
		if j < len(b) && b[j] == '"' {
			s.i = j + 1
			return b[i+1 : j], true
		}
	}
	return s.str()
}

// typ is the type the string at s.i names: the four spelt plainly by a
// comparison or two of words (see prefix), anything else as str and
// typeOf read it.
func (s *scan) typ(d *decoder) (Type, bool) {
	switch {
	case s.prefix(`"invoke"`):
		return Invoke, true
	case s.prefix(`"ok"`):
		return OK, true
	case s.prefix(`"fail"`):
		return Fail, true
	case s.prefix(`"info"`):
		return Info, true
	}
	t, ok := s.quoted()
	return typeOf(t, d), ok
}

// f is the function the string at s.i names: the clients' own as typ
// reads the four types, anything else as str and fOf read it.
func (s *scan) f(d *decoder) (string, bool) {
	switch {
	case s.prefix2(`"acquire`, `"`):
		return FAcquire, true
	case s.prefix2(`"release`, `"`):
		return FRelease, true
	case s.prefix(`"renew"`):
		return FRenew, true
	case s.prefix(`"read"`):
		return FRead, true
	case s.prefix(`"write"`):
		return FWrite, true
	}
	f, ok := s.quoted()
	return fOf(f, d), ok
}

// prefix consumes p if the line goes on with it, exactly. Inlined where p
// is a constant of at most 8 bytes, the comparison is a load or two and a
// comparison each; a longer p is a call to compare memory (prefix2).
func (s *scan) prefix(p string) bool {
	if len(s.b)-s.i >= len(p) && string(s.b[s.i:s.i+len(p)]) == p {
		s.i += len(p)
		return true
	}
	return false
}

// prefix2 is prefix(p+q) for constants p and q of at most 8 bytes each:
// two comparisons of words instead of a call.
func (s *scan) prefix2(p, q string) bool {
	i, j := s.i+len(p), s.i+len(p)+len(q)
	if j <= len(s.b) && string(s.b[s.i:i]) == p && string(s.b[i:j]) == q {
		s.i = j
		return true
	}
	return false
}

// parseLine decodes one event strictly: no unknown fields, nothing after
// the object, and the event's own invariants.
func parseLine(b []byte) (Op, error) {
	var op Op
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&op); err != nil {
		return op, err
	}
	if dec.More() {
		return op, errors.New("trailing data after the JSON object")
	}
	return op, op.Validate()
}

// scan is a cursor over one line for the fast path. Every method reports
// false for anything outside the recorder's shape.
type scan struct {
	b       []byte
	i       int
	scratch []byte // for strings with escapes
}

// ws passes over whitespace, but for newlines: a line holds none (the
// reader splits at them), and where lines are parsed in place, in the
// reader's buffer (orderedLine), a newline must end the line, not be
// passed over into the next. (A newline in a line given to decode sends
// it to parseLine.)
func (s *scan) ws() {
	b, i := s.b, s.i // in registers, as in str
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\r':
			i++
		default:
			s.i = i
			return
		}
	}
	s.i = i
}

// lit consumes the byte c after optional whitespace.
func (s *scan) lit(c byte) bool {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// peek is the next byte after whitespace, 0 at the end.
func (s *scan) peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// str returns the contents of a string in valid UTF-8, with the escapes
// encoding/json writes decoded (it writes <, > and & as \u003c, \u003e
// and \u0026). A surrogate escape, a control character or invalid UTF-8
// sends the line to parseLine, which replaces or refuses them. The result
// may alias the line or the decoder's scratch buffer: copy it to keep it.
func (s *scan) str() ([]byte, bool) {
	if !s.lit('"') {
		return nil, false
	}
	start := s.i
	// Most strings are short and plain ASCII: pass over those bytes with
	// one comparison each (strByte), and look at the rest one by one. The
	// line and the position are local to the loop, where they stay in
	// registers (through s, they were loaded and stored at every byte:
	// str and int were a seventh of a check's instructions).
	b, i := s.b, plainRun(s.b, s.i)
	for i < len(b) && strByte[b[i]] == 0 {
		i++
	}
	s.i = i
	ascii := true
	for ; s.i < len(s.b); s.i++ {
		c := s.b[s.i]
		switch {
		case c == '"':
			out := s.b[start:s.i]
			s.i++
			if !ascii && !utf8.Valid(out) {
				return nil, false
			}
			return out, true
		case c == '\\':
			return s.escaped(start)
		case c < 0x20:
			return nil, false
		case c >= 0x80:
			ascii = false
		}
	}
	return nil, false
}

// plainRun is where, from i on, the first byte of b that str must look
// at (strByte) is, when it lies before b's last 8 bytes (else somewhere
// from there on, which str's byte loop finds): str passes over plain
// bytes eight at a time (a string of a history is mostly a key or a
// token of 10 to 16 bytes, and the byte loop was a tenth of a check's
// instructions).
//
// Why it finds the first such byte, never one after it: of each 8 bytes
// x, the mask m has the top bit of a byte set for a byte below 0x20, at or
// above 0x80, or equal to '"' or '\\' (the SWAR tests of Hacker's
// Delight, 6-1). A subtraction sets a byte's bit spuriously only through
// a borrow from the byte below it, and the lowest byte that lends one is
// itself one of these bytes, with its bit set; so the lowest bit set in m
// is the first such byte's, and every such byte sets one (the first has
// no borrow to hide it).
func plainRun(b []byte, i int) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for uint(i) <= uint(len(b)) && len(b)-i >= 8 { // (so, no bounds checks)
		x := binary.LittleEndian.Uint64(b[i:])
		q := x ^ ('"' * ones)
		bs := x ^ ('\\' * ones)
		m := x&highs | (x-0x20*ones)&^x&highs | (q-ones)&^q&highs | (bs-ones)&^bs&highs
		if m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
		i += 8
	}
	return i
}

// strByte is 1 for the bytes of a string that str must look at: the
// closing quote, a backslash, a control character, a byte of a
// multi-byte character. A read-only table.
var strByte = func() (t [256]byte) {
	for c := range 256 {
		if c == '"' || c == '\\' || c < 0x20 || c >= 0x80 {
			t[c] = 1
		}
	}
	return t
}()

// escaped finishes a string that has escapes, from its start.
func (s *scan) escaped(start int) ([]byte, bool) {
	out := append(s.scratch[:0], s.b[start:s.i]...)
	defer func() { s.scratch = out[:0] }()
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			if !utf8.Valid(out) {
				return nil, false
			}
			return out, true
		case c < 0x20:
			return nil, false
		case c != '\\':
			out = append(out, c)
			s.i++
			continue
		}
		o, ok := s.escape(out)
		if !ok {
			return nil, false
		}
		out = o
	}
	return nil, false
}

// escape appends to out what the escape at s.i (its backslash) stands for,
// and moves past it. It fails before appending anything.
func (s *scan) escape(out []byte) ([]byte, bool) {
	if s.i+1 >= len(s.b) {
		return nil, false
	}
	e := s.b[s.i+1]
	s.i += 2
	switch e {
	case '"', '\\', '/':
		out = append(out, e)
	case 'b':
		out = append(out, '\b')
	case 'f':
		out = append(out, '\f')
	case 'n':
		out = append(out, '\n')
	case 'r':
		out = append(out, '\r')
	case 't':
		out = append(out, '\t')
	case 'u':
		if s.i+4 > len(s.b) {
			return nil, false
		}
		r, ok := hex4(s.b[s.i : s.i+4])
		if !ok || utf16.IsSurrogate(r) {
			return nil, false
		}
		s.i += 4
		out = utf8.AppendRune(out, r)
	default:
		return nil, false
	}
	return out, true
}

// hex4 is the code point of the four hex digits of a \u escape.
func hex4(b []byte) (rune, bool) {
	var r rune
	for _, h := range b {
		switch {
		case h >= '0' && h <= '9':
			r = r<<4 | rune(h-'0')
		case h >= 'a' && h <= 'f':
			r = r<<4 | rune(h-'a'+10)
		case h >= 'A' && h <= 'F':
			r = r<<4 | rune(h-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// int parses an integer literal as JSON writes one (no leading zeros, no
// fraction or exponent) that fits in int64 with room to spare.
func (s *scan) int() (int64, bool) {
	s.ws()
	b, i := s.b, s.i // in registers, as in str
	neg := i < len(b) && b[i] == '-'
	if neg {
		i++
	}
	n, i, ok := digits(b, i)
	s.i = i
	if neg {
		n = -n
	}
	return n, ok
}

// digits parses the digits of b from i on as int does: 1 to 18 of them,
// no leading zero, no '.', 'e' or 'E' after them. end is past the digits
// (or wherever it stopped, when not ok). Eight digits at a time where
// eight bytes are left (digitRun, eightDigits: a history's times have 10
// to 12 digits, and the byte loop's multiply and compare for each was a
// ninth of the check of a history of short events); a number that ends
// within the first word (an index, a process, a fence) without a loop.
func digits(b []byte, i int) (n int64, end int, ok bool) {
	if uint(i) > uint(len(b)) || len(b)-i < 8 { // (so, no bounds checks)
		return digitsLong(b, i)
	}
	w := b[i:]
	x := binary.LittleEndian.Uint64(w)
	k, first := digitRun(x), x
	var u uint64
	switch {
	case k < 8:
		u = eightDigits(x, k)
	case len(w) < 16:
		return digitsLong(b, i)
	default: // 8 to 15 digits (a time), the rest in the second word
		y := binary.LittleEndian.Uint64(w[8:])
		j := digitRun(y)
		if j == 8 {
			return digitsLong(b, i)
		}
		u = eightDigits(x, 8)*pow10[j] + eightDigits(y, j)
		x, k = y, 8+j
	}
	// x is the word the digits end in, k the count of them.
	if k == 0 || (k > 1 && byte(first) == '0') {
		return 0, i, false
	}
	switch byte(x >> (8 * k & 63)) { // the byte after the digits
	case '.', 'e', 'E':
		return 0, i, false
	}
	return int64(u), i + k, true
}

// digitsLong is digits for a number of eight digits or more, or among
// the line's last 8 bytes.
func digitsLong(b []byte, i int) (n int64, end int, ok bool) {
	start := i
	var u uint64
	for {
		if i+8 > len(b) {
			for i < len(b) && b[i]-'0' < 10 {
				u = u*10 + uint64(b[i]-'0')
				i++
			}
			break
		}
		x := binary.LittleEndian.Uint64(b[i:])
		k := digitRun(x)
		u = u*pow10[k] + eightDigits(x, k)
		i += k
		if k < 8 || i-start > 18 {
			break
		}
	}
	d := i - start
	if d == 0 || d > 18 || (d > 1 && b[start] == '0') {
		return 0, i, false
	}
	if i < len(b) {
		switch b[i] {
		case '.', 'e', 'E':
			return 0, i, false
		}
	}
	return int64(u), i, true
}

// pow10 is 10 to the power of its index: what a number read so far is
// multiplied by when k more digits follow.
var pow10 = [9]uint64{1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8}

// digitRun is how many of the bytes of x (little-endian: its first byte
// is the lowest) are ASCII digits before the first that is not, 8 if
// all are. A byte is a digit when its top bit is clear and its low seven
// bits are at least '0' and below ':': adding 0x80-'0' (0x80-':') to
// those seven bits sets the top bit when they are at least '0' (':'),
// and never carries into the next byte (0x7f+0x50 < 0x100).
func digitRun(x uint64) int {
	const highs = 0x8080808080808080
	low := x &^ highs
	atLeast0 := low + 0x5050505050505050
	pastNine := low + 0x4646464646464646
	notDigit := (^atLeast0 | pastNine | x) & highs
	return bits.TrailingZeros64(notDigit) >> 3
}

// eightDigits is the number the first k (0 to 8) bytes of x spell, all
// of them digits. Moved to the top of the word, the k digits are the
// last of eight whose first are zeros; then pairs of digits are combined
// into numbers of two, those into numbers of four, and those into the
// number of eight, each step a multiplication that adds ten (a hundred,
// ten thousand) times each lane to its neighbour (the SWAR parse of
// Lemire, "Faster integer parsing", 2018).
func eightDigits(x uint64, k int) uint64 {
	if k == 0 {
		return 0
	}
	v := (x & 0x0f0f0f0f0f0f0f0f) << (uint(8-k) * 8 & 63)
	v = (v * (10<<8 + 1)) >> 8 & 0x00ff00ff00ff00ff
	v = (v * (100<<16 + 1)) >> 16 & 0x0000ffff0000ffff
	return (v * (10000<<32 + 1)) >> 32
}

func (s *scan) bool() (bool, bool) {
	s.ws()
	switch {
	case bytes.HasPrefix(s.b[s.i:], []byte("true")):
		s.i += 4
		return true, true
	case bytes.HasPrefix(s.b[s.i:], []byte("false")):
		s.i += 5
		return false, true
	}
	return false, false
}

// object calls field for each key of an object until it reports false.
// Keys may appear in any order, but at most once (encoding/json keeps the
// last of duplicates; leave that to it).
func (s *scan) object(field func(key []byte) bool) bool {
	if !s.lit('{') {
		return false
	}
	if s.lit('}') {
		return true
	}
	for {
		k, ok := s.str()
		if !ok || !s.lit(':') || !field(k) {
			return false
		}
		if s.lit(',') {
			continue
		}
		return s.lit('}')
	}
}

// typeOf is the type t names: one of the four without a lookup in the
// interning table (every event has a type, and hashing it was a tenth of
// the decoder's time), anything else interned (Validate refuses it).
func typeOf(t []byte, d *decoder) Type {
	switch string(t) {
	case "invoke":
		return Invoke
	case "ok":
		return OK
	case "fail":
		return Fail
	case "info":
		return Info
	}
	return Type(d.intern(t))
}

// fOf is the function f names: the clients' own without a lookup in the
// interning table (as typeOf), a nemesis's interned.
func fOf(f []byte, d *decoder) string {
	switch string(f) {
	case FAcquire:
		return FAcquire
	case FRelease:
		return FRelease
	case FRenew:
		return FRenew
	case FRead:
		return FRead
	case FWrite:
		return FWrite
	}
	return d.intern(f)
}

// intern returns b as a string, shared with earlier equal strings (those
// still in the table: see internSlots).
func (d *decoder) intern(b []byte) string {
	slot := recentSlot(b)
	if r := d.recent[slot]; r == string(b) {
		return r
	}
	h := maphash.Bytes(d.seed, b)
	at := &d.strs[h&(internSlots-1)]
	if at.h != h || at.s != string(b) {
		*at = interned{h, string(b)}
	}
	d.recent[slot] = at.s
	return at.s
}

// recentSlot is b's place in decoder.recent: from its length and last two
// bytes, which tell a run's keys apart ("lock-0" … "lock-63").
func recentSlot(b []byte) int {
	n := len(b)
	if n == 0 {
		return 0
	}
	h := n*31 + int(b[n-1])
	if n > 1 {
		h = h*7 + int(b[n-2])
	}
	return h & (recentKeys - 1)
}

func (d *decoder) newValue() *Value {
	if len(d.values) == 0 {
		d.values = make([]Value, slab)
	}
	v := &d.values[0]
	d.values = d.values[1:]
	return v
}

func (d *decoder) newInt(n int64) *int64 {
	if len(d.ints) == 0 {
		d.ints = make([]int64, slab)
	}
	p := &d.ints[0]
	d.ints = d.ints[1:]
	*p = n
	return p
}

// Field bits, to refuse a key seen twice.
const (
	fIndex = 1 << iota
	fTime
	fProcess
	fOwner
	fType
	fF
	fKey
	fValue
	fError
)

// fast parses a line in the recorder's shape; false sends it to parseLine.
func (d *decoder) fast(b []byte) (Op, bool) {
	var op Op
	if !d.fastInto(b, &op) {
		return Op{}, false
	}
	return op, true
}

// fastInto is fast into *op, which must be zero.
func (d *decoder) fastInto(b []byte, op *Op) bool {
	s := scan{b: b}
	var seen fieldSet
	ok := s.object(func(k []byte) bool {
		bit, ok := d.opField(&s, op, k)
		return ok && seen.once(bit)
	})
	if !ok {
		return false
	}
	s.ws()
	return s.i == len(s.b)
}

// fieldSet is the fields of an object seen so far, one bit each.
type fieldSet int

// once records field bit, and says whether it is the field's first time:
// a field given twice sends the line to parseLine, which decides.
func (f *fieldSet) once(bit int) bool {
	if int(*f)&bit != 0 {
		return false
	}
	*f |= fieldSet(bit)
	return true
}

// opField parses the value of an event's field k into op; bit is the
// field's (fIndex…), and a key that is not a field's is not ok.
func (d *decoder) opField(s *scan, op *Op, k []byte) (bit int, ok bool) {
	switch string(k) {
	case "index":
		op.Index, ok = s.int()
		return fIndex, ok
	case "time":
		op.Time, ok = s.int()
		return fTime, ok
	case "process":
		op.Process, ok = s.process()
		return fProcess, ok
	case "owner":
		var p Process
		if p, ok = s.process(); !ok {
			return 0, false
		}
		op.Owner = &p
		return fOwner, true
	case "type":
		var t []byte
		if t, ok = s.str(); !ok {
			return 0, false
		}
		op.Type = typeOf(t, d)
		return fType, true
	case "f":
		var f []byte
		if f, ok = s.str(); !ok {
			return 0, false
		}
		op.F = fOf(f, d)
		return fF, true
	case "key":
		var key []byte
		if key, ok = s.str(); !ok {
			return 0, false
		}
		op.Key = d.intern(key)
		return fKey, true
	case "error":
		var e []byte
		if e, ok = s.str(); !ok {
			return 0, false
		}
		op.Error = d.intern(e)
		return fError, true
	case "value":
		op.Value, ok = d.value(s)
		return fValue, ok
	}
	return 0, false
}

// process parses a client number or "nemesis" (as Process.UnmarshalJSON).
func (s *scan) process() (Process, bool) {
	if p, ok := s.client(); ok {
		return p, true
	}
	return s.processByInt()
}

// processByInt is process without client's shortcut: every number through
// int (TestProcessAgreesWithInt holds the shortcut to it).
func (s *scan) processByInt() (Process, bool) {
	if s.peek() == '"' {
		b, ok := s.str()
		if !ok || string(b) != "nemesis" {
			return 0, false
		}
		return Nemesis, true
	}
	n, ok := s.int()
	if !ok || n < 0 || n > 1<<31-1 {
		return 0, false
	}
	return Process(n), true
}

// client is a client's number of one or two digits followed by a comma,
// as process reads it (and as a run of ten or twenty clients writes
// nearly every event's), without int's whitespace, sign, words and
// checks; false, having read nothing, for anything else.
func (s *scan) client() (Process, bool) {
	b, i := s.b, s.i
	if uint(i) >= uint(len(b)) || len(b)-i < 3 {
		return 0, false
	}
	c0, c1 := b[i]-'0', b[i+1]
	switch {
	case c0 < 10 && c1 == ',':
		s.i = i + 1
		return Process(c0), true
	case c0-1 < 9 && c1-'0' < 10 && b[i+2] == ',': // no leading zero
		s.i = i + 2
		return Process(c0)*10 + Process(c1-'0'), true
	}
	return 0, false
}

// orderedValue is value for the values of a lock's events, read as
// ordered reads an event: their fields (token, fence, deadline, counter)
// in Value's order, as encoding/json writes them, each name compared
// where that order puts it; any other value is value's to read, from
// the same place. (A lock's token alone went through object's closure,
// a switch on the name and str: a tenth of reading a history of a
// fresh key per cycle, where half the events carry one.)
func (d *decoder) orderedValue(s *scan) (*Value, bool) {
	at := s.i
	var v Value
	var n int64
	var token []byte // made a string once the value is taken, not before
	ok, first := s.prefix("{"), true
	if ok && s.prefix(`"token":`) {
		token, ok = s.quoted()
		first = false
	}
	if ok && (first && s.prefix(`"fence":`) || !first && s.prefix2(`,"fence"`, `:`)) {
		v.Fence, s.i, ok = digits(s.b, s.i)
		first = false
	}
	if ok && (first && s.prefix2(`"deadlin`, `e":`) || !first && s.prefix2(`,"deadli`, `ne":`)) {
		v.Deadline, s.i, ok = digits(s.b, s.i)
		first = false
	}
	counter := ok && (first && s.prefix2(`"counter`, `":`) || !first && s.prefix2(`,"counte`, `r":`))
	if counter {
		n, s.i, ok = digits(s.b, s.i)
		first = false
	}
	if !ok || first || !s.prefix("}") {
		s.i = at
		return d.value(s)
	}
	if counter {
		v.Counter = d.newInt(n)
	}
	if token != nil {
		v.Token = string(token) // unique per lease: not worth interning
	}
	p := d.newValue()
	*p = v
	return p, true
}

// value parses an event's value object, as the recorder writes it.
func (d *decoder) value(s *scan) (*Value, bool) {
	if s.peek() != '{' {
		return nil, false // null, or not an object: parseLine decides
	}
	v := d.newValue()
	var seen fieldSet
	ok := s.object(func(k []byte) bool {
		bit, ok := d.valueField(s, v, k)
		return ok && seen.once(bit)
	})
	if !ok {
		*v = Value{} // the slab slot is reused by nobody; leave it clean
		return nil, false
	}
	return v, true
}

// valueField parses the value of a value's field k into v; bit is the
// field's, and a key that is not a field's is not ok.
func (d *decoder) valueField(s *scan, v *Value, k []byte) (bit int, ok bool) {
	switch string(k) {
	case "token":
		var t []byte
		if t, ok = s.str(); !ok {
			return 0, false
		}
		v.Token = string(t) // unique per lease: not worth interning
		return 1 << 0, true
	case "fence":
		v.Fence, ok = s.int()
		return 1 << 1, ok
	case "deadline":
		v.Deadline, ok = s.int()
		return 1 << 2, ok
	case "nodes":
		v.Nodes, ok = d.strings(s)
		return 1 << 3, ok
	case "quorum":
		var n int64
		n, ok = s.int()
		v.Quorum = int(n)
		return 1 << 4, ok && int64(v.Quorum) == n
	case "counter":
		var n int64
		if n, ok = s.int(); !ok {
			return 0, false
		}
		v.Counter = d.newInt(n)
		return 1 << 5, true
	case "rejected":
		v.Rejected, ok = s.bool()
		return 1 << 6, ok
	case "duration":
		v.Duration, ok = s.int()
		return 1 << 7, ok
	case "targets":
		v.Targets, ok = d.strings(s)
		return 1 << 8, ok
	case "detail":
		var t []byte
		if t, ok = s.str(); !ok {
			return 0, false
		}
		v.Detail = d.intern(t)
		return 1 << 9, true
	case "not_held":
		v.NotHeld, ok = s.bool()
		return 1 << 10, ok
	}
	return 0, false
}

// strings parses an array of strings (not null).
func (d *decoder) strings(s *scan) ([]string, bool) {
	if !s.lit('[') {
		return nil, false
	}
	out := []string{}
	if s.lit(']') {
		return out, true
	}
	for {
		b, ok := s.str()
		if !ok {
			return nil, false
		}
		out = append(out, d.intern(b))
		if s.lit(',') {
			continue
		}
		return out, s.lit(']')
	}
}
