package adapter

import "strconv"

// The lines of every lock cycle (an acquire or a release and its answer)
// are written and read here without reflection: encoding/json's
// reflection and allocations were a few microseconds of the harness's CPU
// a request, on the path from one answer to the next request
// (BenchmarkRedisPy). Anything else, or anything unusual in these lines,
// goes through encoding/json as before; FuzzRequestLine and
// FuzzAnswerLine hold the two to the same bytes and the same answers.

// appendRequest appends req's line, the bytes json.Encoder writes for it,
// to b; ok is false for a request it leaves to the encoder: init (nodes
// and parameters), or a string that JSON would escape.
func appendRequest(b []byte, req request) ([]byte, bool) {
	if req.Nodes != nil || req.Lock != nil || !plain(req.Op) || !plain(req.Key) || !plain(req.Token) {
		return b, false
	}
	b = append(b, `{"id":`...)
	b = strconv.AppendInt(b, req.ID, 10)
	b = appendString(append(b, `,"op":`...), req.Op)
	if req.Version != 0 {
		b = strconv.AppendInt(append(b, `,"version":`...), int64(req.Version), 10)
	}
	if req.Key != "" {
		b = appendString(append(b, `,"key":`...), req.Key)
	}
	if req.Token != "" {
		b = appendString(append(b, `,"token":`...), req.Token)
	}
	if req.WaitMS != 0 {
		b = strconv.AppendInt(append(b, `,"wait_ms":`...), req.WaitMS, 10)
	}
	return append(b, "}\n"...), true
}

// plain reports whether JSON writes s as it is between its quotes:
// printable ASCII without '"' and '\\', and without the characters
// json.Encoder escapes for HTML.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c > 0x7e, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}

func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// scanner reads one answer line of the plain kind: an object whose
// members are "id" (an integer), "status" and "reason" (strings), and
// "lease", an object of "token" (a string), "validity_ms" and "fence"
// (integers) and "session" (true or false); each member at most once, in
// any order, with JSON's white space between tokens; strings of printable
// ASCII without escapes. It fails on anything else (another member, a
// null, an escape, a number with a fraction), which json.Unmarshal then
// reads: a line it accepts is read as json.Unmarshal reads it.
type scanner struct {
	s   []byte
	i   int
	bad bool
}

// scanAnswer reads line into an answer; ok is false when the line is not
// of the plain kind.
func scanAnswer(line []byte) (a answer, ok bool) {
	sc := scanner{s: line}
	var seen [4]bool // id, status, reason, lease
	sc.members(func(name []byte) {
		switch string(name) {
		case "id":
			a.ID = sc.intPtr(&seen[0])
		case "status":
			a.Status = sc.status(&seen[1])
		case "reason":
			a.Reason = sc.str(&seen[2])
		case "lease":
			a.Lease = sc.lease(&seen[3])
		default:
			sc.bad = true
		}
	})
	sc.space()
	return a, !sc.bad && sc.i == len(sc.s)
}

// lease reads the lease object.
func (sc *scanner) lease(seen *bool) *leaseMsg {
	sc.once(seen)
	m := &leaseMsg{}
	var got [4]bool // token, validity_ms, fence, session
	sc.members(func(name []byte) {
		switch string(name) {
		case "token":
			m.Token = sc.str(&got[0])
		case "validity_ms":
			m.ValidityMS = sc.intPtr(&got[1])
		case "fence":
			sc.once(&got[2])
			m.Fence = sc.int()
		case "session":
			sc.once(&got[3])
			m.Session = sc.boolean()
		default:
			sc.bad = true
		}
	})
	return m
}

// members reads an object, calling member with each member's name, the
// scanner at its value.
func (sc *scanner) members(member func(name []byte)) {
	if !sc.expect('{') {
		return
	}
	if sc.peek() == '}' {
		sc.i++
		return
	}
	for !sc.bad {
		name := sc.raw()
		if !sc.expect(':') {
			return
		}
		sc.space()
		member(name)
		sc.space()
		switch sc.next() {
		case ',':
			sc.space()
		case '}':
			return
		default:
			sc.bad = true
		}
	}
}

// once fails the scan on a second member of one name (json.Unmarshal
// would keep the last, or merge two objects).
func (sc *scanner) once(seen *bool) {
	if *seen {
		sc.bad = true
	}
	*seen = true
}

func (sc *scanner) str(seen *bool) string {
	sc.once(seen)
	return string(sc.raw())
}

// status reads the status, one of the three without allocating.
func (sc *scanner) status(seen *bool) string {
	sc.once(seen)
	switch s := sc.raw(); string(s) {
	case statusOK:
		return statusOK
	case statusFail:
		return statusFail
	case statusUnknown:
		return statusUnknown
	default:
		return string(s)
	}
}

func (sc *scanner) intPtr(seen *bool) *int64 {
	sc.once(seen)
	n := sc.int()
	return &n
}

// raw reads a string of the plain kind and returns what is between its
// quotes.
func (sc *scanner) raw() []byte {
	if !sc.expect('"') {
		return nil
	}
	start := sc.i
	for sc.i < len(sc.s) {
		switch c := sc.s[sc.i]; {
		case c == '"':
			sc.i++
			return sc.s[start : sc.i-1]
		case c < 0x20 || c > 0x7e || c == '\\':
			sc.bad = true
			return nil
		}
		sc.i++
	}
	sc.bad = true
	return nil
}

// int reads an integer of at most 18 digits (no overflow of an int64),
// written as JSON writes it: an optional minus, no leading zero.
func (sc *scanner) int() int64 {
	neg := sc.peek() == '-'
	if neg {
		sc.i++
	}
	start := sc.i
	var n int64
	for sc.i < len(sc.s) && sc.s[sc.i] >= '0' && sc.s[sc.i] <= '9' {
		n = n*10 + int64(sc.s[sc.i]-'0')
		sc.i++
	}
	digits := sc.i - start
	switch next := sc.peek(); {
	case digits == 0 || digits > 18, digits > 1 && sc.s[start] == '0':
		sc.bad = true
	case next == '.' || next == 'e' || next == 'E':
		sc.bad = true
	}
	if neg {
		return -n
	}
	return n
}

func (sc *scanner) boolean() bool {
	for _, w := range []string{"true", "false"} {
		if len(sc.s)-sc.i >= len(w) && string(sc.s[sc.i:sc.i+len(w)]) == w {
			sc.i += len(w)
			return w == "true"
		}
	}
	sc.bad = true
	return false
}

// expect skips white space and reads c.
func (sc *scanner) expect(c byte) bool {
	sc.space()
	if sc.next() != c {
		sc.bad = true
		return false
	}
	return true
}

func (sc *scanner) next() byte {
	if sc.i >= len(sc.s) {
		return 0
	}
	sc.i++
	return sc.s[sc.i-1]
}

func (sc *scanner) peek() byte {
	if sc.i >= len(sc.s) {
		return 0
	}
	return sc.s[sc.i]
}

// space skips JSON's white space.
func (sc *scanner) space() {
	for sc.i < len(sc.s) {
		switch sc.s[sc.i] {
		case ' ', '\t', '\n', '\r':
			sc.i++
		default:
			return
		}
	}
}
