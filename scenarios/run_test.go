package scenarios

import (
	"context"
	"testing"

	"github.com/lockharness/lockharness/sut/etcd/etcdtest"
	"github.com/lockharness/lockharness/sut/mariadb/mariadbtest"
	"github.com/lockharness/lockharness/sut/redis/redistest"
	"github.com/lockharness/lockharness/sut/zookeeper/zktest"
)

// TestCatalogue is the acceptance suite: it runs every scenario against real
// Redis and asserts every checker's verdict. Scenarios run side by side,
// up to three per CPU while the machine has a CPU idle, Sentinel's alone
// (see RunAll); each has its own topology on its own ports. Three to seven
// minutes.
func TestCatalogue(t *testing.T) {
	if testing.Short() {
		t.Skip("the scenario catalogue runs real Redis topologies (minutes)")
	}
	redistest.Require(t, "redis-server", "redis-sentinel")
	etcdtest.Require(t)
	mariadbtest.Require(t)
	zktest.Require(t)
	store := t.TempDir()
	list := Catalogue()
	results := make([]Result, len(list))
	RunAll(context.Background(), list, Options{Store: store}, DefaultParallel(), func(i int, r Result) { results[i] = r })
	for i, s := range list {
		t.Run(s.Name, func(t *testing.T) {
			o, err := results[i].Outcome, results[i].Err
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			checkOutcome(t, s, o)
		})
	}
}

// checkOutcome logs what a scenario's run observed and fails t when it is
// not what the scenario expects, with why.
func checkOutcome(t *testing.T, s Scenario, o Outcome) {
	t.Helper()
	t.Logf("%.1fs, observed %s", o.Elapsed.Seconds(), o.ObservedString())
	if !o.Pass() {
		for _, u := range o.Result.Vacuous {
			t.Logf("  exposure not reached: %s", u)
		}
		for _, v := range o.Result.Violations {
			t.Logf("  %s: %s", v.Checker, v.Description)
		}
		t.Errorf("observed %s, expected %s (history in %s)", o.ObservedString(), s.Expect, o.Dir)
	}
}
