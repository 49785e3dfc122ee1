package scenarios

import (
	"path/filepath"
	"testing"

	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/reports"
	"github.com/lockharness/lockharness/sut/etcd/etcdtest"
)

// TestConsensusCatalogue soaks the consensus scenarios: with
// LOCKHARNESS_SOAK=N it runs each N times against real etcd groups (under
// stress-ng, the CPU-load soak), asserts every checker's verdict and the
// exposure, and logs how available the majority stayed. With
// LOCKHARNESS_STORE=dir it keeps the runs there. Without a count it skips:
// TestCatalogue runs them once.
func TestConsensusCatalogue(t *testing.T) {
	if testing.Short() {
		t.Skip("the consensus scenarios run real etcd groups")
	}
	etcdtest.Require(t)
	soakPart(t, part("consensus"), map[string]func(*testing.T, string){"etcd-leader-partitioned": grantedDuringPartition})
}

// grantedDuringPartition reports how available etcd-leader-partitioned
// was: how many leases (with time to run) the majority granted while the
// leader was cut off. It is a measure, not a verdict: with both cores
// busy the clients' requests may all time out until the heal (8 of 20
// soak runs under stress-ng --cpu 2 granted none; 12 granted 1 to 4),
// and the run is still evidence of safety across the leader's partition.
func grantedDuringPartition(t *testing.T, dir string) {
	t.Helper()
	res, err := history.ReadFile(filepath.Join(dir, reports.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	var from, to int64 = -1, -1
	grants := 0
	for _, op := range res.Ops {
		switch {
		case op.Process.IsNemesis() && op.F == "start-partition" && op.Type == history.OK:
			from = op.Time
		case op.Process.IsNemesis() && op.F == "stop-partition" && op.Type == history.Invoke:
			to = op.Time
		case op.F == history.FAcquire && op.Type == history.OK && from >= 0 && to < 0 &&
			op.Value != nil && op.Value.Deadline > op.Time:
			grants++
		}
	}
	t.Logf("%d grants while the leader was cut off", grants)
}
