package scenarios

import (
	"context"
	"testing"

	"github.com/lockharness/lockharness/cluster/clustertest"
)

// TestCatalogue is the acceptance suite: it runs every scenario against real
// Redis, one after another (Sentinel and clock scenarios are timing
// sensitive; two cores do not run two of them side by side reliably), and
// asserts every checker's verdict. About three minutes.
func TestCatalogue(t *testing.T) {
	if testing.Short() {
		t.Skip("the scenario catalogue runs real Redis topologies (minutes)")
	}
	clustertest.Require(t, "redis-server", "redis-sentinel")
	store := t.TempDir()
	for _, s := range Catalogue() {
		t.Run(s.Name, func(t *testing.T) {
			o, err := Run(context.Background(), s, Options{Store: store})
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
		})
	}
}
