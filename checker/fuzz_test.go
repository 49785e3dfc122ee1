package checker

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockharness/lockharness/history"
)

// unusableShape is an oracle independent of prepare: it reports a history
// whose shape no checker can read (an index twice, time going backwards, a
// completion without its invocation, a second invocation while one is
// outstanding). A process may have one call of each function outstanding
// (a lease renewed in the background while the client writes), so calls
// pair by process and function.
func unusableShape(ops []history.Op) bool {
	// Events are read in index order, whatever the order of the lines.
	ops = slices.Clone(ops)
	slices.SortStableFunc(ops, func(a, b history.Op) int { return cmp.Compare(a.Index, b.Index) })
	seen := map[int64]bool{}
	type pk struct {
		p history.Process
		f string
	}
	outstanding := map[pk]bool{}
	prev := int64(-1 << 63)
	for _, op := range ops {
		if seen[op.Index] || op.Time < prev {
			return true
		}
		seen[op.Index], prev = true, op.Time
		if op.Process.IsNemesis() || op.F == history.FCrash {
			continue
		}
		k := pk{op.Process, op.F}
		if op.Type == history.Invoke {
			if outstanding[k] {
				return true
			}
			outstanding[k] = true
			continue
		}
		if !outstanding[k] {
			return true
		}
		outstanding[k] = false
	}
	return false
}

// FuzzCheck feeds the checker JSONL histories. It must never panic (a
// panic is caught and turned into Unknown: that counts as a failure here),
// must give one of the three verdicts, must never say valid on a history
// whose shape it cannot use, and must say why whenever it is unknown.
//
// go test runs the seeds; by hand: go test -fuzz FuzzCheck -fuzztime 5m ./checker/
func FuzzCheck(f *testing.F) {
	b := &hb{}
	b.inv(0, 0, "acquire", "lock-0", nil).ok(ms, 0, "acquire", "lock-0", lease(s))
	b.section(2*ms, 0, 0, 1, 0, func(b *hb, t int64) { b.ok(t, 0, "write", "lock-0", ctr(1)) })
	b.inv(10*ms, 0, "release", "lock-0", &history.Value{Token: "t"}).ok(11*ms, 0, "release", "lock-0", nil)
	b.inv(12*ms, 1, "acquire", "lock-0", nil).ok(13*ms, 1, "acquire", "lock-0", lease(s))
	b.inv(20*ms, 0, "acquire", "lock-0", nil).ok(21*ms, 0, "acquire", "lock-0", lease(s)) // overlap
	b.nem(30*ms, history.Invoke, history.FFinalHeal).nem(30*ms, history.OK, history.FFinalHeal)
	b.inv(40*ms, 2, "acquire", "lock-0", nil).info(50*ms, 2, "acquire", "lock-0")
	b.inv(60*ms, 3, "acquire", "lock-0", nil)
	var full bytes.Buffer
	for _, op := range b.ops {
		j, _ := json.Marshal(op)
		full.Write(append(j, '\n'))
	}
	lines := strings.SplitAfter(full.String(), "\n")
	for _, seed := range []string{
		full.String(),
		strings.Join(lines[:4], ""),
		strings.Join(lines[4:], ""), // completions without invocations
		lines[1] + lines[0],         // out of order: read in index order
		lines[0] + lines[0],         // an index twice
		`{"index":0,"time":1,"process":0,"type":"invoke","f":"crash"}` + "\n" + lines[3],
		`{"index":0,"time":1,"process":0,"type":"ok","f":"acquire","key":"k","value":{"deadline":9223372036854775807,"fence":9223372036854775807}}` + "\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		rr, err := history.Read(bytes.NewReader(data))
		if err != nil {
			return // the reader's own fuzz target covers refusals
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		r := checkOps(ctx, rr.Ops, Config{Timeout: 100 * time.Millisecond})
		switch r.Verdict {
		case Valid, Invalid, Unknown:
		default:
			t.Fatalf("verdict %q", r.Verdict)
		}
		for name, c := range r.Checkers {
			if strings.Contains(c.Reason, "panicked") {
				t.Fatalf("%s: %s", name, c.Reason)
			}
			if c.Verdict == Unknown && c.Reason == "" {
				t.Errorf("%s is unknown without a reason", name)
			}
		}
		if unusableShape(rr.Ops) && r.Verdict == Valid {
			t.Fatalf("valid on a history it cannot use: %+v", r.Checkers)
		}
	})
}
