package adapter_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/run"
	"github.com/lockharness/lockharness/workloads"
)

// A careful client renews before it writes (Lock.extend) and skips the
// write when redis-py says the lock is no longer its own: with pauses
// longer than the lease, redis-py's extend refuses an expired lease
// (LockNotOwnedError, "not held"), so the late writes never happen and
// every check holds.
func TestRedisPyRenewBeforeWrite(t *testing.T) {
	reg := shippedRegistry(t)
	t.Parallel()
	out, err := run.Run(context.Background(), run.Config{
		Lock: "redis-py", Registry: reg, Seed: 5, TimeLimit: 4 * time.Second, Recovery: time.Second, Store: t.TempDir(),
		Workload: workloads.Config{Clients: 3, TTL: time.Second, ClientPause: 1500 * time.Millisecond, ClientPauseRate: 0.3, RenewBeforeWrite: true},
	})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	res := out.Results
	if res.Verdict != checker.Valid {
		t.Fatalf("verdict %s: %+v", res.Verdict, res.Violations)
	}
	if res.Counts["renew"]["ok"] == 0 || res.Counts["renew"]["fail"] == 0 {
		t.Errorf("renewals %v: want some extended and some refused after a pause", res.Counts["renew"])
	}
}
