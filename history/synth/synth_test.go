package synth

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/lockharness/lockharness/history"
)

// TestWriteIsARunsHistory: what Write writes reads back, with the
// history's own reader, as the events Ops gives, in index and time
// order, every invocation completed, the same for the same seed.
func TestWriteIsARunsHistory(t *testing.T) {
	for _, shape := range append(Shapes, CrashNoExpiry) {
		cfg := Config{Shape: shape, Events: 5000, Seed: 3}
		var buf bytes.Buffer
		n, err := Write(&buf, cfg)
		if err != nil {
			t.Fatal(err)
		}
		rr, err := history.ReadContext(context.Background(), bytes.NewReader(buf.Bytes()))
		if err != nil || rr.Truncated {
			t.Fatalf("%s: read back: %v (truncated %v)", shape, err, rr.Truncated)
		}
		ops, err := Ops(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(ops)) != n || !reflect.DeepEqual(rr.Ops, ops) {
			t.Fatalf("%s: %d events written, %d read back, %d in memory", shape, n, len(rr.Ops), len(ops))
		}
		if n < int64(cfg.Events) {
			t.Fatalf("%s: %d events, want at least %d", shape, n, cfg.Events)
		}
		pending := map[[2]any]bool{}
		for i, op := range ops {
			if op.Index != int64(i) || i > 0 && op.Time <= ops[i-1].Time {
				t.Fatalf("%s: event %d out of order: %v", shape, i, op)
			}
			k := [2]any{op.Process, op.F}
			if op.Type == history.Invoke {
				pending[k] = true
			} else {
				delete(pending, k)
			}
		}
		if len(pending) > 0 {
			t.Fatalf("%s: invocations never completed: %v", shape, pending)
		}
		again, _ := Ops(cfg)
		if !reflect.DeepEqual(again, ops) {
			t.Fatalf("%s: not deterministic", shape)
		}
	}
	if _, err := Ops(Config{Shape: "nope", Events: 1}); err == nil {
		t.Fatal("an unknown shape was accepted")
	}
}

// TestReaderAgreesWithEncodingJSON: the history's reader (its hand-written
// decoder) gives, for every line of every shape, the event encoding/json
// decodes from that line: the check's reading means what the plain parse
// of the same file means.
func TestReaderAgreesWithEncodingJSON(t *testing.T) {
	for _, shape := range Shapes {
		var buf bytes.Buffer
		if _, err := Write(&buf, Config{Shape: shape, Events: 20_000, Seed: 5}); err != nil {
			t.Fatal(err)
		}
		rr, err := history.Read(bytes.NewReader(buf.Bytes()))
		if err != nil {
			t.Fatalf("%s: %v", shape, err)
		}
		lines := bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n"))
		if len(lines) != len(rr.Ops) {
			t.Fatalf("%s: %d lines, %d events", shape, len(lines), len(rr.Ops))
		}
		for i, line := range lines {
			var want history.Op
			if err := json.Unmarshal(line, &want); err != nil {
				t.Fatalf("%s line %d: %v", shape, i+1, err)
			}
			if !reflect.DeepEqual(rr.Ops[i], want) {
				t.Fatalf("%s line %d %s:\nreader %+v\nencoding/json %+v", shape, i+1, line, rr.Ops[i], want)
			}
		}
	}
}
