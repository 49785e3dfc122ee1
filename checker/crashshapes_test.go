package checker

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/history/synth"
)

// withCrashesInFlight is a history of the Crash shape (ops) where the
// crashes strike with an operation in flight, which then never completes:
// every other holder that dies in its critical section has invoked its
// release (its crash's invocation becomes the release's, the crash is its
// lone info), and every client that dies at a failpoint in its acquire
// loses the acquire's completion. The crashed holders left as they are
// keep a lease that is live when the crash comes. It also says how many
// releases and acquires it left in flight.
func withCrashesInFlight(ops []history.Op) (_ []history.Op, releases, acquires int) {
	out := make([]history.Op, 0, len(ops))
	last := map[history.Process]int{} // → position in out of the process's latest event
	holders := 0
	for _, op := range ops {
		j, seen := last[op.Process]
		if op.F == history.FCrash && op.Type == history.Invoke && seen {
			prev := out[j]
			switch {
			case prev.F == history.FAcquire && prev.Type == history.Info:
				// Dead at a failpoint in its acquire: the acquire
				// never completes.
				out = slices.Delete(out, j, j+1)
				acquires++
			case prev.F == history.FRead && prev.Type == history.OK:
				holders++
				if holders%2 == 0 {
					// Dead with its release in flight.
					op.F, op.Value = history.FRelease, &history.Value{Token: "in-flight"}
					releases++
				}
			}
		}
		last[op.Process] = len(out)
		out = append(out, op)
	}
	return out, releases, acquires
}

// TestCrashesInFlightInWindows: crashes with a release or an acquire in
// flight (never completed) and crashed holders whose lease is live at a
// cut are judged as the whole check judges them, the history is cut
// across them, and a correct lock's history stays valid.
func TestCrashesInFlightInWindows(t *testing.T) {
	for seed := uint64(0); seed < 4; seed++ {
		ops, releases, acquires := withCrashesInFlight(shapeOps(t, synth.Crash, 40_000, seed))
		if releases == 0 || acquires == 0 {
			t.Fatalf("seed %d: %d releases and %d acquires in flight at a crash", seed, releases, acquires)
		}
		name := fmt.Sprintf("crash shape seed %d, crashes in flight", seed)
		incomplete := 0
		p := mustPrepare(t, ops)
		for i := range p.calls {
			if !p.calls[i].completed() {
				incomplete++
			}
		}
		if incomplete == 0 {
			t.Fatalf("%s: every operation completed", name)
		}
		whole := checkOps(ctx, ops, Config{Timeout: time.Minute})
		if whole.Verdict != Valid {
			t.Fatalf("%s: verdict %s: %+v %v", name, whole.Verdict, whole.Checkers, whole.Violations)
		}
		win, st, exact := windowed(ops, 2000)
		if !exact || st.cuts < len(ops)/2000/2 {
			t.Fatalf("%s: %d events, windows %+v (exact %v)", name, len(ops), st, exact)
		}
		sameResult(t, name, whole, win)
		t.Logf("%s: %d events, %d operations never completed, %+v", name, len(ops), incomplete, st)
	}
}

// TestCrashNoExpiryShapeInWindows: holders of leases that never expire
// die holding them (synth.CrashNoExpiry), and their keys' other processes
// are refused from then on: a valid history (its recovery makes no
// attempt), which the windows judge as the whole check does, cutting the
// keys past the crashes with the crashed holders' claims carried (see
// cutter.forgone), so that what they hold back stays a window's, not the
// keys' histories. Broken copies read the carried claim: another process
// granted the key after the split (an overlap, not linearizable), a
// release ok of another process inside it (a foreign release), a fault
// after the split (it struck the claim), an acquire in the recovery (the
// key is blocked for good, held by the crashed holder), and a renewer
// thread of the crashed holder's recording on its key after the split,
// which the windows leave to the whole check.
func TestCrashNoExpiryShapeInWindows(t *testing.T) {
	ops := shapeOps(t, synth.CrashNoExpiry, 40_000, 0) // every key's holder crashed by two thirds in
	crashes := 0
	for _, op := range ops {
		if op.F == history.FCrash && op.Type == history.Info {
			crashes++
		}
	}
	whole := checkOps(ctx, ops, Config{Timeout: time.Minute})
	if whole.Verdict != Valid || crashes < 10 {
		t.Fatalf("verdict %s, %d crashes: %+v %v", whole.Verdict, crashes, whole.Checkers, whole.Violations)
	}
	win, st, exact := windowed(ops, 2000)
	if !exact || st.cuts < len(ops)/2000/2 || st.maxHeld > 2000 {
		t.Fatalf("%d events, windows %+v (exact %v): the crashed holders' keys were not cut", len(ops), st, exact)
	}
	t.Logf("%d events, %d crashes, %+v", len(ops), crashes, st)
	sameResult(t, "crash without expiry", whole, win)

	for _, c := range noExpiryCases(t, ops) {
		whole := checkOps(ctx, c.ops, Config{Timeout: time.Minute})
		win, st, exact := windowed(c.ops, 2000)
		if c.want == "" {
			if exact {
				t.Fatalf("%s: checked in windows (%+v)", c.name, st)
			}
			continue
		}
		if !exact || st.cuts < len(ops)/2000/2 {
			t.Fatalf("%s: windows %+v (exact %v)", c.name, st, exact)
		}
		if !strings.Contains(fmt.Sprint(whole.Checkers, whole.Violations, whole.Coverage), c.want) {
			t.Fatalf("%s: the whole check does not say %q: %s %+v %v", c.name, c.want, whole.Verdict, whole.Checkers, whole.Violations)
		}
		sameResult(t, c.name, whole, win)
		t.Logf("%s: %s, %+v", c.name, whole.Verdict, st)
	}
}

// noExpiryCase is a broken copy of a CrashNoExpiry history and what the
// whole check says of it ("": the windows must leave it to the whole
// check).
type noExpiryCase struct {
	name, want string
	ops        []history.Op
}

// noExpiryCases breaks the CrashNoExpiry history ops where its first
// crashed holder's key is refused, late in the history (windows after
// the last grant's), by rewriting a refused acquire (its invocation and
// fail) into something else, and in its recovery.
func noExpiryCases(t *testing.T, ops []history.Op) []noExpiryCase {
	t.Helper()
	holder, key := history.Process(-1), ""
	latest := map[history.Process]string{} // each process's latest key granted
	for _, op := range ops {
		if op.F == history.FAcquire && op.Type == history.OK {
			latest[op.Process] = op.Key
		}
		if op.F == history.FCrash && op.Type == history.Info && latest[op.Process] != "" {
			holder, key = op.Process, latest[op.Process]
			break
		}
	}
	refused := -1 // a refused acquire's invocation on key, four fifths in
	for i := len(ops) * 4 / 5; i+1 < len(ops) && refused < 0; i++ {
		if op := ops[i]; op.F == history.FAcquire && op.Type == history.Invoke && op.Key == key {
			refused = i
		}
	}
	if holder < 0 || refused < 0 {
		t.Fatalf("no crashed holder (%d on %q) refused later (%d)", holder, key, refused)
	}
	fail := refused + 1
	for ops[fail].Process != ops[refused].Process {
		fail++
	}
	if ops[fail].Type != history.Fail {
		t.Fatalf("event %d: %+v, want the refusal of event %d", fail, ops[fail], refused)
	}
	rewrite := func(f func(inv, done *history.Op)) []history.Op {
		b := slices.Clone(ops)
		f(&b[refused], &b[fail])
		return b
	}
	var cases []noExpiryCase
	cases = append(cases, noExpiryCase{"granted after the crash", "overlapping", rewrite(func(_, done *history.Op) {
		done.Type, done.Error, done.Value = history.OK, "", &history.Value{Token: "late", Fence: 1 << 40}
	})})
	cases = append(cases, noExpiryCase{"released by another", string(KindForeignRelease), rewrite(func(inv, done *history.Op) {
		inv.F, inv.Value = history.FRelease, &history.Value{Token: "other"}
		done.F, done.Type, done.Error = history.FRelease, history.OK, ""
	})})
	// An instantaneous fault (its window is its completion) when every
	// key's holder has crashed: only the carried claims were live.
	cases = append(cases, noExpiryCase{"fault after the crashes", "kill-leader:{1 1", rewrite(func(inv, done *history.Op) {
		for _, e := range []*history.Op{inv, done} {
			e.Process, e.F, e.Key, e.Error, e.Value = history.Nemesis, "kill-leader", "", "", nil
		}
		done.Type = history.OK
	})})
	owner := holder
	cases = append(cases, noExpiryCase{"renewer of the crashed holder", "", rewrite(func(inv, done *history.Op) {
		for _, e := range []*history.Op{inv, done} {
			e.Owner, e.F = &owner, history.FRenew
		}
		inv.Value = &history.Value{Token: "theirs"}
	})})
	// The recovery's final read of key becomes a refused acquire.
	b := slices.Clone(ops)
	for i := len(b) - 1; i > 0; i-- {
		if b[i].F == history.FRead && b[i].Type == history.OK && b[i].Key == key {
			b[i-1].F = history.FAcquire
			b[i].F, b[i].Type, b[i].Value, b[i].Error = history.FAcquire, history.Fail, nil, "lock not acquired"
			break
		}
	}
	cases = append(cases, noExpiryCase{"refused in the recovery", "never expires", b})
	return cases
}

// TestCrashedProcessKeepsNoValue: the cutter's entry of a process that
// crashed with an operation in flight outlives the crash, and must not
// keep the operation's value: a history file's values are decoded in
// slabs, and one kept value keeps its slab (issue 27: the crash shape
// with releases in flight grew to 529 MB at 10M events, a slab a crash).
func TestCrashedProcessKeepsNoValue(t *testing.T) {
	c := newCutter(nil)
	ops := []history.Op{
		{Index: 0, Time: 1, Process: 1, Type: history.Invoke, F: history.FAcquire, Key: "k"},
		{Index: 1, Time: 2, Process: 1, Type: history.OK, F: history.FAcquire, Key: "k", Value: &history.Value{Token: "t", Deadline: 100}},
		{Index: 2, Time: 3, Process: 1, Type: history.Invoke, F: history.FRelease, Key: "k", Value: &history.Value{Token: "t"}},
		{Index: 3, Time: 4, Process: 1, Type: history.Info, F: history.FCrash},
	}
	for i := range ops {
		c.observe(&ops[i])
	}
	ps := c.procs[1]
	if ps == nil || !ps.dead || ps.busy || ps.pend.in != nil {
		t.Fatalf("crashed process's entry: %+v", ps)
	}
}
