package nemesis_test

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/nemesis"
	"github.com/lockharness/lockharness/sut"
)

func TestPartition(t *testing.T) {
	t.Parallel()
	f := start(t, sut.Config{Nodes: 3, Clients: 2}, nemesis.Config{Names: []string{"partition"}}, nil)
	ctx := context.Background()
	ep := func(cl int, node string) string {
		l, err := f.c.Link("c"+string(rune('0'+cl)), node)
		if err != nil {
			t.Fatal(err)
		}
		return l.Addr()
	}
	a := proxied(t, ep(0, "n2"), 200*time.Millisecond)
	if err := a.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	f.do(t, nemesis.Step{Nemesis: "partition", Action: "start", Targets: []string{"c0->n2"}})
	t0 := time.Now()
	err := a.Set(ctx, "k", "v", 0).Err()
	took := time.Since(t0)
	if err == nil || !strings.Contains(err.Error(), "timeout") {
		t.Fatalf("SET through a blackholed link: %v, want a timeout", err)
	}
	t.Logf("partition: command through the cut link timed out after %v (client timeout 200ms)", took.Round(time.Millisecond))
	// Only that link is cut.
	if err := proxied(t, ep(1, "n2"), 200*time.Millisecond).Ping(ctx).Err(); err != nil {
		t.Fatalf("c1->n2 was not cut: %v", err)
	}
	if err := proxied(t, ep(0, "n1"), 200*time.Millisecond).Ping(ctx).Err(); err != nil {
		t.Fatalf("c0->n1 was not cut: %v", err)
	}
	f.do(t, nemesis.Step{Nemesis: "partition", Action: "stop", Targets: []string{"c0->n2"}})
	if err := a.Ping(ctx).Err(); err != nil {
		// The stalled connection was closed by the heal; the pool redials.
		if err := a.Ping(ctx).Err(); err != nil {
			t.Fatalf("after heal: %v", err)
		}
	}
	op, _ := last(f.rec, "start-partition")
	if op.Type != history.OK || op.Value == nil || len(op.Value.Targets) != 1 || op.Value.Targets[0] != "c0->n2" {
		t.Fatalf("start-partition recorded as %+v", op)
	}
	if op.Value.Fault != "partition" {
		t.Fatalf("start-partition starts fault %q, want partition", op.Value.Fault)
	}
	if op, _ := last(f.rec, "stop-partition"); !reflect.DeepEqual(op.Value.Ends, []string{"partition"}) {
		t.Fatalf("stop-partition ends %v, want [partition]", op.Value.Ends)
	}
	// A generated isolate cuts every link of one node; the final heal
	// (cleanup) must undo it.
	f.do(t, nemesis.Step{Nemesis: "partition", Action: "start", Params: map[string]string{"pattern": nemesis.PatternIsolate}})
	op, _ = last(f.rec, "start-partition")
	if len(op.Value.Targets) != 2 {
		t.Fatalf("isolate cut %v, want both clients' links to one node", op.Value.Targets)
	}
}

func TestLatency(t *testing.T) {
	t.Parallel()
	f := start(t, sut.Config{Nodes: 1}, nemesis.Config{Names: []string{"latency"}}, nil)
	ctx := context.Background()
	l, _ := f.c.Link("c0", "n1")
	cl := proxied(t, l.Addr(), 2*time.Second)
	rtt := func() time.Duration {
		t0 := time.Now()
		if err := cl.Ping(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		return time.Since(t0)
	}
	rtt()
	f.do(t, nemesis.Step{Nemesis: "latency", Action: "start", Targets: []string{"c0->n1"},
		Params: map[string]string{"latency": "100ms", "jitter": "0s"}})
	slow := rtt()
	// Both directions are delayed: a round trip takes at least 200ms.
	if slow < 190*time.Millisecond {
		t.Fatalf("round trip %v with 100ms latency each way", slow)
	}
	t.Logf("latency: round trip %v with 100ms each way", slow.Round(time.Millisecond))
	f.do(t, nemesis.Step{Nemesis: "latency", Action: "stop", Targets: []string{"c0->n1"}})
	if fast := rtt(); fast > 100*time.Millisecond {
		t.Fatalf("round trip %v after the latency was removed", fast)
	}
}

func TestClock(t *testing.T) {
	t.Parallel()
	f := start(t, sut.Config{Nodes: 2, Faketime: true}, nemesis.Config{Names: []string{"clock"}}, nil)
	ctx := context.Background()
	n1, n2 := f.c.Nodes[0], f.c.Nodes[1]
	c1, c2 := client(t, n1, time.Second), client(t, n2, time.Second)

	// Forward: a lock with 30s left expires at once on the bumped node only.
	setLock(t, c1, "fwd", 30*time.Second)
	setLock(t, c2, "fwd", 30*time.Second)
	t0 := time.Now()
	f.do(t, nemesis.Step{Nemesis: "clock", Action: "bump", Targets: []string{"n1"}, Params: map[string]string{"delta": "+60s"}})
	confirmed := time.Since(t0)
	gone := waitFor(t, 2*time.Second, "forward-bumped key expires", func() bool { return !exists(t, c1, "fwd") })
	if !exists(t, c2, "fwd") {
		t.Fatal("the key expired on n2, whose clock did not move")
	}
	t.Logf("clock +60s: confirmed by TIME in %v; key gone %v after that", confirmed.Round(time.Microsecond), gone.Round(time.Microsecond))
	op, _ := last(f.rec, "bump-clock")
	// The detail names the asked delta exactly; the reading is TIME against
	// the local clock, off by up to a round trip (CI read +59.999s), so it is
	// checked with a tolerance on the field below, not as text.
	if op.Type != history.OK || !strings.Contains(op.Value.Detail, "n1 +1m0s (reads +") {
		t.Fatalf("bump-clock recorded as %+v", op)
	}
	// The history says what the fault did in fields, for the reports.
	if v := op.Value; v.Fault != "clock" || len(v.Clocks) != 1 || v.Clocks[0].Node != "n1" ||
		v.Clocks[0].Delta == nil || *v.Clocks[0].Delta != int64(time.Minute) ||
		v.Clocks[0].Offset == nil || (time.Duration(*v.Clocks[0].Offset)-time.Minute).Abs() > time.Second {
		t.Fatalf("bump-clock's fields: %+v", v)
	}
	f.do(t, nemesis.Step{Nemesis: "clock", Action: "reset", Targets: []string{"n1"}})

	// Backward: a lock outlives its TTL on the node whose clock went back.
	setLock(t, c1, "back", time.Second)
	setLock(t, c2, "back", time.Second)
	f.do(t, nemesis.Step{Nemesis: "clock", Action: "bump", Targets: []string{"n2"}, Params: map[string]string{"delta": "-60s"}})
	waitFor(t, 5*time.Second, "key on n1 expires", func() bool { return !exists(t, c1, "back") })
	if !exists(t, c2, "back") {
		t.Fatal("the key expired on n2 although its clock went back 60s")
	}
	pttl, _ := c2.PTTL(ctx, "back").Result()
	t.Logf("clock -60s: n1's 1s key expired, n2's has %v left", pttl.Round(time.Millisecond))
	f.do(t, nemesis.Step{Nemesis: "clock", Action: "reset", Targets: []string{"n2"}})

	// Drift: at rate 4 a 4s key on n1 expires after ≈1s of real time while
	// the same key on n2 lives on.
	f.do(t, nemesis.Step{Nemesis: "clock", Action: "drift", Targets: []string{"n1"}, Params: map[string]string{"rate": "4"}})
	setLock(t, c1, "drift", 4*time.Second)
	setLock(t, c2, "drift", 4*time.Second)
	took := waitFor(t, 5*time.Second, "drifting key expires", func() bool { return !exists(t, c1, "drift") })
	if !exists(t, c2, "drift") {
		t.Fatal("the key expired on n2 too")
	}
	if took < 700*time.Millisecond {
		t.Fatalf("4s key on a x4 clock expired after %v, want ≈1s (a jump instead of a drift?)", took)
	}
	t.Logf("clock x4: 4s key expired after %v of real time", took.Round(time.Millisecond))

	// Strobe: TIME flips between the two offsets.
	f.do(t, nemesis.Step{Nemesis: "clock", Action: "strobe", Targets: []string{"n2"},
		Params: map[string]string{"a": "0s", "b": "+30s", "period": "20ms"}})
	var near, far bool
	waitFor(t, 3*time.Second, "strobe shows both offsets", func() bool {
		skew, _, err := n2.ServerTime(ctx, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		near = near || skew.Abs() < time.Second
		far = far || (skew-30*time.Second).Abs() < time.Second
		return near && far
	})
	// Cleanup's final heal resets both clocks (n1 still drifts, n2 strobes).
}

// A clock step whose parameters do not parse, or whose action the clock
// nemesis does not know, is refused before anything is recorded or set.
func TestClockRefusesBadSteps(t *testing.T) {
	t.Parallel()
	f := start(t, sut.Config{Nodes: 1, Faketime: true}, nemesis.Config{Names: []string{"clock"}}, nil)
	ctx := context.Background()
	for _, s := range []nemesis.Step{
		{Action: "bump", Params: map[string]string{"delta": "soon"}},
		{Action: "drift", Params: map[string]string{"rate": "fast"}},
		{Action: "strobe", Params: map[string]string{"a": "soon"}},
		{Action: "strobe", Params: map[string]string{"b": "later"}},
		{Action: "strobe", Params: map[string]string{"period": "often"}},
		{Action: "warp"},
	} {
		s.Nemesis, s.Targets = "clock", []string{"n1"}
		if err := f.r.Do(ctx, f.env, s); err == nil {
			t.Errorf("%s %v: no error", s.Action, s.Params)
		}
	}
	if ops := f.rec.Ops(); len(ops) != 0 {
		t.Fatalf("refused steps recorded %+v", ops)
	}
	if !f.c.Nodes[0].Clock().Real() {
		t.Fatalf("a refused step set the clock: %v", f.c.Nodes[0].Clock())
	}
}

func TestPause(t *testing.T) {
	t.Parallel()
	f := start(t, sut.Config{Nodes: 1}, nemesis.Config{Names: []string{"pause"}}, nil)
	ctx := context.Background()
	l, _ := f.c.Link("c0", "n1")
	cl := proxied(t, l.Addr(), 200*time.Millisecond)
	setLock(t, cl, "lock", 300*time.Millisecond)
	f.do(t, nemesis.Step{Nemesis: "pause", Action: "pause", Targets: []string{"n1"}})
	t0 := time.Now()
	err := cl.Get(ctx, "lock").Err()
	if err == nil || !strings.Contains(err.Error(), "timeout") {
		t.Fatalf("GET on a paused node: %v, want a timeout", err)
	}
	t.Logf("pause: command timed out after %v (client timeout 200ms)", time.Since(t0).Round(time.Millisecond))
	time.Sleep(400 * time.Millisecond) // past the key's TTL, in real time
	f.do(t, nemesis.Step{Nemesis: "pause", Action: "resume", Targets: []string{"n1"}})
	direct := client(t, f.c.Nodes[0], time.Second)
	if exists(t, direct, "lock") {
		t.Fatal("a key whose TTL ran out during the pause survived the resume")
	}
	if op, _ := last(f.rec, "resume-node"); op.Type != history.OK {
		t.Fatalf("resume-node recorded as %+v", op)
	}
	// Left paused on purpose: the final heal must resume it.
	f.do(t, nemesis.Step{Nemesis: "pause", Action: "pause", Targets: []string{"n1"}})
}

func TestKill(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		persistence string
		survives    bool
	}{
		{sut.PersistNone, false},
		{sut.PersistAOFAlways, true},
	} {
		t.Run(tc.persistence, func(t *testing.T) {
			t.Parallel()
			f := start(t, sut.Config{Nodes: 1}, nemesis.Config{Names: []string{"kill"}, Persistence: tc.persistence}, nil)
			n := f.c.Nodes[0]
			setLock(t, client(t, n, time.Second), "lock", 30*time.Second)
			f.do(t, nemesis.Step{Nemesis: "kill", Action: "kill", Targets: []string{"n1"}})
			if n.Running() {
				t.Fatal("n1 still running after kill")
			}
			t0 := time.Now()
			f.do(t, nemesis.Step{Nemesis: "kill", Action: "restart", Targets: []string{"n1"}})
			t.Logf("kill (%s): restarted and answering in %v", tc.persistence, time.Since(t0).Round(time.Millisecond))
			if got := exists(t, client(t, n, time.Second), "lock"); got != tc.survives {
				t.Fatalf("with %s the lock key exists=%v after restart, want %v", tc.persistence, got, tc.survives)
			}
			op, _ := last(f.rec, "kill")
			if !strings.Contains(op.Value.Detail, tc.persistence) {
				t.Fatalf("kill recorded as %+v", op)
			}
			// Left dead on purpose: the final heal must restart it.
			f.do(t, nemesis.Step{Nemesis: "kill", Action: "kill", Targets: []string{"n1"}})
		})
	}
}
