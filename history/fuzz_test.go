package history

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// FuzzReader feeds the reader arbitrary bytes. It must never panic, every
// event it accepts must be valid on its own and survive a round trip
// through JSON unchanged, every error about content must name its line,
// and no line longer than MaxLine is ever accepted.
//
// go test runs the seeds; by hand: go test -fuzz FuzzReader -fuzztime 5m ./history/
func FuzzReader(f *testing.F) {
	ev := `{"index":0,"time":1,"process":0,"type":"invoke","f":"acquire","key":"lock-0"}`
	for _, seed := range []string{
		"",
		"\n\n",
		ev + "\n",
		ev, // no newline: a complete last line
		ev + "\n" + `{"index":1,"time":2,"process":0,"type":"ok","f":"acq`, // cut off
		ev + "\n" + `{"index":1,"time":2,"process":0,"type":"ok","f":"acquire","key":"lock-0","value":{"token":"t","deadline":5,"fence":3}}` + "\n",
		`{"index":0,"time":1,"process":"nemesis","type":"info","f":"start-partition","value":{"targets":["c0->n1"],"detail":"x"}}` + "\n",
		`{"index":0,"time":-1,"process":0,"type":"invoke","f":"acquire"}` + "\n",
		`{"index":0,"time":1,"process":0,"type":"ok","f":"write","value":{"counter":-3,"deadline":-1}}` + "\n",
		`{"index":0,"time":1,"process":-2,"type":"invoke","f":"acquire"}` + "\n",
		`{"index":0,"time":1,"process":0,"type":"invoke","f":"acquire","extra":1}` + "\n",
		ev + ev + "\n",
		"[]\n", "null\n", "{}\n", "\x00\x00\x00",
		strings.Repeat("a", MaxLine+10),
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		res, err := Read(bytes.NewReader(data))
		if err != nil {
			var le *LineError
			if errors.As(err, &le) {
				if le.Line < 1 || !errors.Is(err, ErrMalformed) {
					t.Fatalf("line error without a line or ErrMalformed: %v", err)
				}
			}
			return
		}
		if want := linesOneByOne(t, data, res.Truncated); !reflect.DeepEqual(res.Ops, want) {
			t.Fatalf("read %d events, %d line by line:\n%v\n%v", len(res.Ops), len(want), res.Ops, want)
		}
		longest := 0
		for _, l := range bytes.Split(data, []byte("\n")) {
			longest = max(longest, len(l))
		}
		if longest >= MaxLine {
			t.Fatalf("accepted a line of %d bytes", longest)
		}
		var buf bytes.Buffer
		for _, op := range res.Ops {
			if err := op.Validate(); err != nil {
				t.Fatalf("accepted an invalid event %v: %v", op, err)
			}
			b, err := json.Marshal(op)
			if err != nil {
				t.Fatalf("accepted an event that cannot be written: %v: %v", op, err)
			}
			buf.Write(append(b, '\n'))
		}
		again, err := Read(&buf)
		if err != nil || again.Truncated || len(again.Ops) != len(res.Ops) {
			t.Fatalf("round trip: %v, %d ops, then %d", err, len(res.Ops), len(again.Ops))
		}
		for i := range res.Ops {
			a, _ := json.Marshal(res.Ops[i])
			b, _ := json.Marshal(again.Ops[i])
			if !bytes.Equal(a, b) {
				t.Fatalf("event %d changed in a round trip: %s then %s", i, a, b)
			}
		}
	})
}
