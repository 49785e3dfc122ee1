package locks_test

import (
	"testing"

	"github.com/lockharness/lockharness/cluster/clustertest"
)

// TestMain makes -short skip the runnable examples, which start real Redis.
func TestMain(m *testing.M) { clustertest.Main(m, "^Example_customLock$") }
