package scenarios

import (
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/lockharness/lockharness/cluster/zookeeper/zktest"
)

// TestZooKeeperCatalogue soaks the ZooKeeper scenarios as
// TestConsensusCatalogue soaks etcd's: with LOCKHARNESS_SOAK=N it runs
// each N times against real ensembles (under stress-ng, the CPU-load
// soak), asserts every checker's verdict and the exposure, and logs how
// available the majority stayed while the leader was cut off. With
// LOCKHARNESS_STORE=dir it keeps the runs there; LOCKHARNESS_ONLY=a,b
// soaks those scenarios alone. Without a count it skips: TestCatalogue runs them
// once.
func TestZooKeeperCatalogue(t *testing.T) {
	if testing.Short() {
		t.Skip("the ZooKeeper scenarios run real ensembles")
	}
	zktest.Require(t)
	rounds, err := strconv.Atoi(os.Getenv("LOCKHARNESS_SOAK"))
	if err != nil || rounds < 1 {
		t.Skip("TestCatalogue runs the ZooKeeper scenarios once; set LOCKHARNESS_SOAK=N to soak them")
	}
	store := t.TempDir()
	if d := os.Getenv("LOCKHARNESS_STORE"); d != "" {
		store = d // keep the runs to look at
	}
	var list []Scenario
	for range rounds {
		for _, s := range catalogueZooKeeper() {
			if only := os.Getenv("LOCKHARNESS_ONLY"); only == "" || slices.Contains(strings.Split(only, ","), s.Name) {
				list = append(list, s)
			}
		}
	}
	results := make([]Result, len(list))
	RunAll(context.Background(), list, Options{Store: store}, DefaultParallel(), func(i int, r Result) { results[i] = r })
	for i, s := range list {
		t.Run(s.Name, func(t *testing.T) {
			o, err := results[i].Outcome, results[i].Err
			if err != nil {
				t.Fatalf("run: %v", err)
			}
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
			if s.Name == "zk-leader-partitioned" {
				grantedDuringPartition(t, o.Dir)
			}
		})
	}
}
