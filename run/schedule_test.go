package run

import (
	"reflect"
	"testing"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/nemesis"
	"github.com/lockharness/lockharness/schedule"
	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/workloads"
)

// A configuration written as a schedule and read back is the same run.
func TestScheduleOfRoundTrips(t *testing.T) {
	c := Config{
		Lock: "redlock", Nodes: 5, Seed: 7, TimeLimit: 5 * time.Second, Recovery: time.Second, ClientTimeout: time.Second, ClientRetries: 2,
		Workload: workloads.Config{Clients: 2, Keys: 1, TTL: 2 * time.Second, Hold: 1400 * time.Millisecond, AcquireTimeout: time.Second},
		Cluster:  sut.Config{Faketime: true, Persistence: sut.PersistAOFAlways},
		Nemesis:  nemesis.Config{Names: []string{"clock"}, Interval: time.Second, ClockBump: 10 * time.Second},
		Script: []nemesis.Step{{At: 2300 * time.Millisecond, Nemesis: "clock", Action: "bump", Targets: []string{"n3"},
			Params: map[string]string{"delta": "+10s"}, Await: &nemesis.Await{LeaseLeft: 1500 * time.Millisecond, Granted: []string{"n3"}, BareQuorum: true}}},
		Require:  []checker.Requirement{{Name: "the clock jump", Faults: []string{"bump-clock"}}},
		Scenario: "x", Explanation: "why", Expected: map[string]string{"lock-promise": "invalid"},
	}
	back, err := FromSchedule(ScheduleOf(c), schedule.Env{})
	if err != nil {
		t.Fatal(err)
	}
	back.Registry = nil
	if !reflect.DeepEqual(back, c) {
		t.Errorf("round trip:\n got %+v\nwant %+v", back, c)
	}
}

// A random run's schedule is the steps the generator drew, at the times
// they struck, with no random nemesis left to draw more; a scripted run's
// keeps its script, with what each step did.
func TestExecutedSchedule(t *testing.T) {
	ex := &executed{start: time.Now()}
	step := schedule.Step{At: time.Second, Nemesis: "partition", Action: "start", Targets: []string{"c0->n1"}}
	ex.done(step, ex.start.Add(1200*time.Millisecond), 0, "", nil)
	ex.done(schedule.Step{At: 2 * time.Second, Nemesis: "kill", Action: "kill"}, ex.start.Add(2*time.Second), 0, "", errNotDone)
	random := ex.schedule(Config{Lock: "token", Nemesis: nemesis.Config{Names: []string{"partition", "kill"}}}, nil)
	if len(random.Nemesis.Names) != 0 || len(random.Steps) != 1 || random.Steps[0].At != 1200*time.Millisecond || random.Steps[0].Struck != 1200*time.Millisecond {
		t.Errorf("random run's schedule %+v", random)
	}
	scripted := ex.schedule(Config{Lock: "token", Script: []nemesis.Step{step.NemesisStep(), {At: 2 * time.Second, Nemesis: "kill", Action: "kill"}}}, nil)
	if len(scripted.Steps) != 2 || scripted.Steps[0].At != time.Second || scripted.Steps[1].NotDone == "" {
		t.Errorf("scripted run's schedule %+v", scripted.Steps)
	}
}

var errNotDone = nemesis.ErrNotDone
