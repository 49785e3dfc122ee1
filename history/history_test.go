package history_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockharness/lockharness/history"
)

func counter(v int64) *int64 { return &v }

func TestRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	rec := history.NewRecorder(history.NewClock(), &buf)
	rec.Invoke(0, history.FAcquire, "lock-0", nil)
	rec.Complete(0, history.OK, history.FAcquire, "lock-0", &history.Value{Token: "ab", Fence: 3, Deadline: 1_000_000_000}, nil)
	rec.Invoke(1, history.FRead, "lock-0", nil)
	rec.Complete(1, history.OK, history.FRead, "lock-0", &history.Value{Counter: counter(0)}, nil)
	rec.Invoke(history.Nemesis, "start-partition", "", &history.Value{Targets: []string{"c0->n1"}})
	rec.Complete(history.Nemesis, history.Info, "start-partition", "", nil, errors.New("timeout"))
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	want := rec.Ops()
	got, err := history.Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if got.Truncated || len(got.Ops) != len(want) {
		t.Fatalf("read %d ops (truncated %v), want %d", len(got.Ops), got.Truncated, len(want))
	}
	for i := range want {
		if got.Ops[i].String() != want[i].String() {
			t.Errorf("op %d: got %s, want %s", i, got.Ops[i], want[i])
		}
		if got.Ops[i].Index != int64(i) {
			t.Errorf("op %d has index %d", i, got.Ops[i].Index)
		}
		if i > 0 && got.Ops[i].Time < got.Ops[i-1].Time {
			t.Errorf("time goes backwards at %d", i)
		}
	}
	if got.Ops[4].Process != history.Nemesis || !strings.Contains(got.Ops[4].String(), `"process":"nemesis"`) {
		t.Errorf("nemesis process not round-tripped: %s", got.Ops[4])
	}
	if *got.Ops[3].Value.Counter != 0 {
		t.Errorf("counter 0 lost")
	}
}

func TestTruncatedLastLine(t *testing.T) {
	in := `{"index":0,"time":1,"process":0,"type":"invoke","f":"acquire","key":"lock-0"}
{"index":1,"time":2,"process":0,"type":"ok","f":"acq`
	got, err := history.Read(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if !got.Truncated || len(got.Ops) != 1 {
		t.Fatalf("got %d ops truncated=%v, want 1 op and truncated", len(got.Ops), got.Truncated)
	}
}

func TestMalformedLineNamesTheLine(t *testing.T) {
	cases := map[string]string{
		"bad json":      "{\"index\":0,\"time\":1,\"process\":0,\"type\":\"invoke\",\"f\":\"acquire\"}\n{nope}\n{\"index\":2,\"time\":3,\"process\":0,\"type\":\"ok\",\"f\":\"acquire\"}\n",
		"unknown type":  "{\"index\":0,\"time\":1,\"process\":0,\"type\":\"invoke\",\"f\":\"acquire\"}\n{\"index\":1,\"time\":1,\"process\":0,\"type\":\"maybe\",\"f\":\"acquire\"}\n",
		"bad process":   "{\"index\":0,\"time\":1,\"process\":0,\"type\":\"invoke\",\"f\":\"acquire\"}\n{\"index\":1,\"time\":1,\"process\":\"bob\",\"type\":\"ok\",\"f\":\"acquire\"}\n",
		"unknown field": "{\"index\":0,\"time\":1,\"process\":0,\"type\":\"invoke\",\"f\":\"acquire\"}\n{\"index\":1,\"time\":1,\"process\":0,\"type\":\"ok\",\"f\":\"acquire\",\"colour\":1}\n",
		"missing f":     "{\"index\":0,\"time\":1,\"process\":0,\"type\":\"invoke\",\"f\":\"acquire\"}\n{\"index\":1,\"time\":1,\"process\":0,\"type\":\"ok\"}\n",
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := history.Read(strings.NewReader(in))
			var le *history.LineError
			if !errors.As(err, &le) || le.Line != 2 {
				t.Fatalf("got %v, want an error naming line 2", err)
			}
			if !errors.Is(err, history.ErrMalformed) {
				t.Fatalf("error does not wrap ErrMalformed: %v", err)
			}
			if !strings.Contains(err.Error(), "line 2") {
				t.Fatalf("message does not name the line: %v", err)
			}
		})
	}
}

// A recorder writing to a file makes events visible on disk within the
// flush interval, so a killed run leaves a checkable prefix.
func TestRecorderStreamsToDisk(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rec := history.NewRecorder(history.NewClock(), f)
	defer rec.Close()
	var wg sync.WaitGroup
	for p := 0; p < 8; p++ {
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				rec.Invoke(history.Process(p), history.FAcquire, "k", nil)
				rec.Complete(history.Process(p), history.Fail, history.FAcquire, "k", nil, nil)
			}
		}(p)
	}
	wg.Wait()
	// Without Close: poll the file until the flusher has written it all.
	var res history.ReadResult
	for i := 0; i < 200; i++ {
		res, err = history.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Ops) == 1600 {
			break
		}
		time.Sleep(10 * time.Millisecond) // poll: the flusher runs every 100ms
	}
	if len(res.Ops) != 1600 {
		t.Fatalf("on disk: %d events, want 1600", len(res.Ops))
	}
	for i, op := range res.Ops {
		if op.Index != int64(i) {
			t.Fatalf("event %d has index %d: indexes must follow file order", i, op.Index)
		}
	}
}

// A recorder writing to a file keeps no events in memory: Ops reads them
// back from the file, before and after Close, and an event recorded after
// Close (kept in memory only) comes last.
func TestFileRecorderOpsReadsTheFileBack(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rec := history.NewRecorder(history.NewClock(), f)
	for i := 0; i < 1000; i++ {
		rec.Invoke(history.Process(i%7), history.FAcquire, "k", nil)
	}
	if ops := rec.Ops(); len(ops) != 1000 || ops[999].Index != 999 {
		t.Fatalf("before Close: %d events", len(ops))
	}
	rec.Invoke(0, history.FRelease, "k", &history.Value{Token: "t"})
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	rec.Invoke(1, history.FRead, "k", nil)
	ops := rec.Ops()
	if len(ops) != 1002 || rec.Len() != 1002 {
		t.Fatalf("after Close: %d events, Len %d, want 1002", len(ops), rec.Len())
	}
	for i, op := range ops {
		if op.Index != int64(i) {
			t.Fatalf("event %d has index %d", i, op.Index)
		}
	}
	if ops[1000].Value == nil || ops[1000].Value.Token != "t" || ops[1001].F != history.FRead {
		t.Fatalf("last events: %v, %v", ops[1000], ops[1001])
	}
}

// A renewer thread's pause (a failpoint its watchdog reached) carries its
// owner, as its renews do; no other client event may.
func TestOwnerOnRenewsAndPausesOnly(t *testing.T) {
	owner := history.Process(2)
	for _, f := range []string{history.FRenew, history.FPause} {
		if err := (history.Op{Process: 1_000_000, Owner: &owner, Type: history.Invoke, F: f, Key: "k"}).Validate(); err != nil {
			t.Errorf("%s with an owner: %v", f, err)
		}
	}
	for _, f := range []string{history.FAcquire, history.FRelease, history.FRead, history.FWrite, history.FCrash} {
		if err := (history.Op{Process: 1_000_000, Owner: &owner, Type: history.Invoke, F: f, Key: "k"}).Validate(); err == nil {
			t.Errorf("%s with an owner accepted", f)
		}
	}
}

// TestLastTime: the time of a history file's last whole event, a cut-off
// last line passed over, for a file and for events in memory.
func TestLastTime(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	for i := range 5000 {
		b.WriteString(history.Op{Index: int64(i), Time: int64(i) * 1000, Process: 1, Type: history.Invoke, F: history.FAcquire, Key: "k"}.String() + "\n")
	}
	whole := filepath.Join(dir, "whole.jsonl")
	cut := filepath.Join(dir, "cut.jsonl")
	if err := os.WriteFile(whole, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cut, []byte(b.String()+`{"index":5000,"time":9`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{whole, cut} {
		if got, ok := history.File(p).LastTime(); !ok || got != 4999*1000 {
			t.Fatalf("%s: %d %v", p, got, ok)
		}
	}
	if got, ok := history.Events([]history.Op{{Time: 3}, {Time: 7}}).LastTime(); !ok || got != 7 {
		t.Fatalf("in memory: %d %v", got, ok)
	}
	if _, ok := history.File(filepath.Join(dir, "none")).LastTime(); ok {
		t.Fatal("a missing file has a last time")
	}
}
