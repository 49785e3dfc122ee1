package nemesis_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/nemesis"
	"github.com/lockharness/lockharness/sut"
	redisbackend "github.com/lockharness/lockharness/sut/redis"
	"github.com/lockharness/lockharness/sut/redis/redistest"
)

// fakeClients stands in for the workload: it says whether someone holds a
// lock and remembers what it was asked to do.
type fakeClients struct {
	mu      sync.Mutex
	holder  history.Process
	holding bool
	paused  []time.Duration
	crashed []history.Process
	armed   []string
	awaited int
}

func (f *fakeClients) PauseHolder(_ context.Context, d time.Duration, _ nemesis.PausePoint) (history.Process, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.holding {
		return 0, false
	}
	f.paused = append(f.paused, d)
	return f.holder, true
}

func (f *fakeClients) CrashHolder(context.Context) (history.Process, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.holding {
		return 0, false
	}
	f.crashed = append(f.crashed, f.holder)
	f.holding = false
	return f.holder, true
}

func (f *fakeClients) AwaitHolder(ctx context.Context, _ nemesis.Await) (history.Process, string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.holding {
		return 0, "", false
	}
	f.awaited++
	return f.holder, "lock-0", true
}

func (f *fakeClients) ArmFailpoint(name string, d time.Duration, crash bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	kind := "pause " + d.String()
	if crash {
		kind = "crash"
	}
	f.armed = append(f.armed, name+" "+kind)
}

func TestClientFaults(t *testing.T) {
	t.Parallel()
	fc := &fakeClients{holder: 3, holding: true}
	f := start(t, sut.Config{Nodes: 1}, nemesis.Config{Names: []string{"client-pause", "client-crash"}, ClientPause: 2 * time.Second}, fc)

	f.do(t, nemesis.Step{Nemesis: "client-pause", Action: "holder"})
	op, _ := last(f.rec, "pause-client")
	if op.Type != history.OK || len(op.Value.Targets) != 1 || op.Value.Targets[0] != "c3" || op.Value.Duration != int64(2*time.Second) {
		t.Fatalf("pause-client recorded as %+v", op)
	}
	if len(fc.paused) != 1 || fc.paused[0] != 2*time.Second {
		t.Fatalf("PauseHolder calls: %v", fc.paused)
	}
	f.do(t, nemesis.Step{Nemesis: "client-crash", Action: "holder"})
	if op, _ := last(f.rec, "crash-client"); op.Type != history.OK || op.Value.Targets[0] != "c3" {
		t.Fatalf("crash-client recorded as %+v", op)
	}
	// Nobody holds a lock now: the fault certainly did not happen (fail).
	err := f.r.Do(context.Background(), f.env, nemesis.Step{Nemesis: "client-crash", Action: "holder"})
	if !errors.Is(err, nemesis.ErrNotDone) {
		t.Fatalf("crash with no holder: %v, want ErrNotDone", err)
	}
	if op, _ := last(f.rec, "crash-client"); op.Type != history.Fail {
		t.Fatalf("crash with no holder recorded as %+v", op)
	}
	f.do(t, nemesis.Step{Nemesis: "client-pause", Action: "failpoint", Params: map[string]string{"failpoint": "after-set", "duration": "1s"}})
	f.do(t, nemesis.Step{Nemesis: "client-crash", Action: "failpoint", Params: map[string]string{"failpoint": "before-release"}})
	want := []string{"after-set pause 1s", "before-release crash"}
	if len(fc.armed) != 2 || fc.armed[0] != want[0] || fc.armed[1] != want[1] {
		t.Fatalf("armed %v, want %v", fc.armed, want)
	}
}

// A step that awaits a holder acts only once one holds, and does not
// happen at all (ErrNotDone, nothing recorded) when nobody comes.
func TestStepAwaitsHolder(t *testing.T) {
	t.Parallel()
	fc := &fakeClients{holder: 1, holding: true}
	f := start(t, sut.Config{Nodes: 1, Clients: 1}, nemesis.Config{Names: []string{"partition"}}, fc)
	step := nemesis.Step{Nemesis: "partition", Action: "start", Targets: []string{"c0->n1"},
		Await: &nemesis.Await{LeaseLeft: time.Second}}
	f.do(t, step)
	if fc.awaited != 1 {
		t.Fatalf("AwaitHolder called %d times, want 1", fc.awaited)
	}
	if op, _ := last(f.rec, "start-partition"); op.Type != history.OK {
		t.Fatalf("awaited partition recorded as %+v", op)
	}
	f.do(t, nemesis.Step{Nemesis: "partition", Action: "stop", Targets: []string{"c0->n1"}})

	fc.holding = false
	before := len(f.rec.Ops())
	err := f.r.Do(context.Background(), f.env, step)
	if !errors.Is(err, nemesis.ErrNotDone) {
		t.Fatalf("awaited step with nobody holding: %v, want ErrNotDone", err)
	}
	if n := len(f.rec.Ops()); n != before {
		t.Fatalf("a step whose holder never came recorded %d events", n-before)
	}
}

func TestClientFaultsNeedClients(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("integration test: needs redis-server")
	}
	c, err := redisbackend.Up(context.Background(), sut.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Down() })
	r, _ := nemesis.New(nemesis.Config{Names: []string{"client-crash"}})
	if err := r.Setup(context.Background(), nemesis.Env{Deployment: c}); err == nil {
		t.Fatal("client-crash set up without Clients")
	}
}

// A nemesis is refused at Setup by a deployment that cannot do what it
// needs, with an error that names the capability, the node and how to get
// it: clocks of nodes not under libfaketime, failover of independent
// nodes, persistence a deployment cannot change.
func TestSetupRefusesWhatTheDeploymentCannotDo(t *testing.T) {
	t.Parallel()
	c := redistest.Up(t, sut.Config{Nodes: 2})
	for _, tc := range []struct {
		names []string
		want  string
	}{
		{[]string{"partition", "clock"}, "the clock nemesis needs setting nodes' clocks (clock), which node n1 does not support: start the nodes under libfaketime"},
		{[]string{"failover"}, "the failover nemesis needs a master with replicas"},
	} {
		r, err := nemesis.New(nemesis.Config{Names: tc.names})
		if err != nil {
			t.Fatal(err)
		}
		err = r.Setup(context.Background(), nemesis.Env{Deployment: c})
		if !errors.Is(err, sut.ErrUnsupported) || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("%v: setup error %v, want one wrapping sut.ErrUnsupported that says %q", tc.names, err, tc.want)
		}
	}
	// Every node of a local cluster without libfaketime lacks the clock.
	n, err := c.Node("n2")
	if err != nil {
		t.Fatal(err)
	}
	var ue *sut.UnsupportedError
	if _, err := sut.As[sut.Clocked](n, sut.CanSetClock); !errors.As(err, &ue) || ue.Target != "n2" {
		t.Fatalf("As clock on n2: %v", err)
	}
	if _, err := sut.As[sut.Pauser](n, sut.CanPause); err != nil {
		t.Fatalf("a local node cannot pause: %v", err)
	}
}

// Run executes the seeded schedule against a real cluster, records every
// step, and the final heal leaves nothing broken.
func TestRunSchedule(t *testing.T) {
	t.Parallel()
	cfg := nemesis.Config{Names: []string{"partition", "latency", "pause", "kill", "clock"}, Interval: 150 * time.Millisecond,
		Seed: 2, Persistence: sut.PersistAOFEverysec}
	f := start(t, sut.Config{Nodes: 3, Clients: 2, Faketime: true}, cfg, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := f.r.Run(ctx, f.env); err != nil {
		t.Fatal(err)
	}
	steps := f.r.Schedule(4 * time.Second)
	var invokes []history.Op
	for _, op := range f.rec.Ops() {
		if !op.Process.IsNemesis() {
			t.Fatalf("event from process %v", op.Process)
		}
		switch op.Type {
		case history.Invoke:
			invokes = append(invokes, op)
		case history.OK:
		default:
			t.Errorf("nemesis step did not succeed: %+v", op)
		}
	}
	// Steps run late on a loaded machine, so the last few may not have run;
	// those that ran are the schedule's, in order.
	if len(invokes) < len(f.r.Schedule(2*time.Second)) || len(invokes) > len(steps) {
		t.Fatalf("%d steps ran; the schedule has %d in 2s and %d in 4s", len(invokes), len(f.r.Schedule(2*time.Second)), len(steps))
	}
	for i, op := range invokes {
		if !reflect.DeepEqual(op.Value.Targets, steps[i].Targets) {
			t.Fatalf("step %d ran %s on %v, schedule says %v", i, op.F, op.Value.Targets, steps[i])
		}
	}
	t.Logf("run: %d scheduled steps executed in 3s", len(invokes))
}
