package scenarios

import (
	"testing"

	"github.com/lockharness/lockharness/sut/zookeeper/zktest"
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
	soakPart(t, part("zookeeper"), map[string]func(*testing.T, string){"zk-leader-partitioned": grantedDuringPartition})
}
