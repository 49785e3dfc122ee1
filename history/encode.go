package history

import (
	"encoding/json"
	"strconv"
)

// appendOp appends op as the line encoding/json's Encoder writes for it
// (json.Marshal's bytes and a newline), byte for byte, without reflection:
// the recorder encodes every event of a run, and a client's cycle records
// eight. It reports false, having appended nothing, for what it does not
// write itself (a value with clocks or a shard change, a negative process
// other than the nemesis): the caller encodes those with encoding/json.
// TestAppendOpIsJSON holds it to json.Marshal.
func appendOp(b []byte, op *Op) ([]byte, bool) {
	if (op.Process < 0 && op.Process != Nemesis) || (op.Owner != nil && *op.Owner < 0 && *op.Owner != Nemesis) {
		return b, false
	}
	if v := op.Value; v != nil && (len(v.Clocks) > 0 || v.Shard != nil) {
		return b, false
	}
	b = append(b, `{"index":`...)
	b = strconv.AppendInt(b, op.Index, 10)
	b = append(b, `,"time":`...)
	b = strconv.AppendInt(b, op.Time, 10)
	b = append(b, `,"process":`...)
	b = appendProcess(b, op.Process)
	if op.Owner != nil {
		b = append(b, `,"owner":`...)
		b = appendProcess(b, *op.Owner)
	}
	b = append(b, `,"type":`...)
	b = AppendJSONString(b, string(op.Type))
	b = append(b, `,"f":`...)
	b = AppendJSONString(b, op.F)
	if op.Key != "" {
		b = append(b, `,"key":`...)
		b = AppendJSONString(b, op.Key)
	}
	if op.Value != nil {
		b = append(b, `,"value":`...)
		b = appendValue(b, op.Value)
	}
	if op.Error != "" {
		b = append(b, `,"error":`...)
		b = AppendJSONString(b, op.Error)
	}
	return append(b, "}\n"...), true
}

func appendProcess(b []byte, p Process) []byte {
	if p == Nemesis {
		return append(b, `"nemesis"`...)
	}
	return strconv.AppendInt(b, int64(p), 10)
}

// appendValue appends v's fields in their declaration order, each left
// out when empty (omitempty); Clocks and Shard are never set here.
func appendValue(b []byte, v *Value) []byte {
	w := fields{b: append(b, '{')}
	w.str("token", v.Token)
	w.int("fence", v.Fence)
	w.int("deadline", v.Deadline)
	w.bool("session", v.Session)
	w.strs("nodes", v.Nodes)
	w.int("quorum", int64(v.Quorum))
	if v.Counter != nil {
		w.name("counter")
		w.b = strconv.AppendInt(w.b, *v.Counter, 10)
	}
	w.bool("rejected", v.Rejected)
	w.int("duration", v.Duration)
	w.strs("targets", v.Targets)
	w.str("detail", v.Detail)
	w.str("fault", v.Fault)
	w.strs("ends", v.Ends)
	w.bool("mark", v.Mark)
	w.bool("not_held", v.NotHeld)
	return append(w.b, '}')
}

// fields writes an object's members, a comma before each but the first.
type fields struct {
	b    []byte
	more bool
}

func (w *fields) name(n string) {
	if w.more {
		w.b = append(w.b, ',')
	}
	w.more = true
	w.b = append(w.b, '"')
	w.b = append(w.b, n...)
	w.b = append(w.b, '"', ':')
}

func (w *fields) str(n, s string) {
	if s != "" {
		w.name(n)
		w.b = AppendJSONString(w.b, s)
	}
}

func (w *fields) int(n string, i int64) {
	if i != 0 {
		w.name(n)
		w.b = strconv.AppendInt(w.b, i, 10)
	}
}

func (w *fields) bool(n string, t bool) {
	if t {
		w.name(n)
		w.b = append(w.b, "true"...)
	}
}

func (w *fields) strs(n string, ss []string) {
	if len(ss) == 0 {
		return
	}
	w.name(n)
	w.b = append(w.b, '[')
	for i, s := range ss {
		if i > 0 {
			w.b = append(w.b, ',')
		}
		w.b = AppendJSONString(w.b, s)
	}
	w.b = append(w.b, ']')
}

// AppendJSONString appends s as a JSON string the way encoding/json writes
// it (the report's holds.jsonl writes its keys with it too): printable ASCII as it is, and anything it would escape (quotes,
// backslashes, control characters, <, > and & for HTML, non-ASCII that may
// be invalid UTF-8 or U+2028) by encoding/json itself.
func AppendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always marshals
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
