package adapter

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzAnswerLine holds the hand reading of an answer (scanAnswer) to
// json.Unmarshal's: a line it accepts, json.Unmarshal accepts and reads
// to the same answer; any other line is left to json.Unmarshal.
func FuzzAnswerLine(f *testing.F) {
	for _, s := range []string{
		`{"status": "ok", "id": 3}`,
		`{"status": "ok", "lease": {"token": "0123456789abcdef", "validity_ms": 1000}, "id": 7}`,
		`{"id":2,"status":"ok","lease":{"token":"t","session":true,"fence":3}}`,
		`{"id":3,"status":"fail","reason":"not held"}`,
		` {"id" : -0 ,	"status":"unknown" } `,
		`{"id":1,"id":2,"status":"ok"}`,
		`{"id":1,"status":"ok","lease":{"token":"a"},"lease":{"fence":2}}`,
		`{"ID":1,"status":"ok"}`,
		`{"id":01,"status":"ok"}`,
		`{"id":1.0,"status":"ok"}`,
		`{"id":1e3,"status":"ok"}`,
		`{"id":99999999999999999999,"status":"ok"}`,
		`{"id":999999999999999999,"status":"ok"}`,
		`{"id":null,"status":"ok"}`,
		`{"id":1,"status":"ok","lease":null}`,
		`{"id":1,"status":"o\u006b"}`,
		`{"id":1,"status":"ok","lease":{"token":"x","session":tru}}`,
		`{"id":1,"status":"ok"}x`,
		`{"id":1,"status":"ok",}`,
		`{"id":"1","status":"ok"}`,
		`{"id":1,"status":"ok","adapter":{"name":"x","protocol":1}}`,
		`{}`,
		`{"id":-,"status":"ok"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		got, ok := scanAnswer(line)
		if !ok {
			return
		}
		var want answer
		if err := json.Unmarshal(line, &want); err != nil {
			t.Fatalf("scanAnswer read %q, json.Unmarshal refuses it: %v", line, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: scanAnswer read %+v, json.Unmarshal %+v", line, got, want)
		}
	})
}

// The answers of every cycle, as the shipped adapters write them, are the
// ones read by hand: without this the fast path could silently stop being
// taken.
func TestCycleAnswersAreReadByHand(t *testing.T) {
	for _, s := range []string{
		`{"status": "ok", "id": 12345}`, // redis-py (json.dumps' spacing)
		`{"status": "ok", "lease": {"token": "0123456789abcdef0123456789abcdef", "validity_ms": 1000}, "id": 12346}`,
		`{"status": "fail", "reason": "not acquired: held by another client", "id": 12347}`,
		`{"id":5,"status":"ok","lease":{"token":"t","validity_ms":1000,"fence":42}}`,
	} {
		if _, ok := scanAnswer([]byte(s)); !ok {
			t.Errorf("%s is left to json.Unmarshal", s)
		}
	}
}

// FuzzRequestLine holds appendRequest to json.Encoder: the same bytes for
// every request it writes, and every request without init's fields or a
// string JSON escapes is one it writes.
func FuzzRequestLine(f *testing.F) {
	f.Add(int64(1), "acquire", 0, "bench-3", "0123456789abcdef0123456789abcdef", int64(0))
	f.Add(int64(2), "release", 0, "k", "t", int64(0))
	f.Add(int64(3), "acquire", 0, "a<b", "t", int64(250))
	f.Add(int64(-4), "hello", 1, "", "", int64(-1))
	f.Add(int64(5), "acquire", 0, "é\"\\\n", "t", int64(0))
	f.Fuzz(func(t *testing.T, id int64, op string, version int, key, token string, waitMS int64) {
		req := request{ID: id, Op: op, Version: version, Key: key, Token: token, WaitMS: waitMS}
		var want bytes.Buffer
		if err := json.NewEncoder(&want).Encode(req); err != nil {
			t.Fatal(err)
		}
		got, ok := appendRequest(nil, req)
		switch {
		case ok && !bytes.Equal(got, want.Bytes()):
			t.Fatalf("appendRequest wrote %q, json.Encoder %q", got, want.Bytes())
		case !ok && plain(op) && plain(key) && plain(token):
			t.Fatalf("a plain request left to the encoder: %+v", req)
		}
	})
}
