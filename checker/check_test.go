package checker

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"
)

func TestSimulatedCorrectLockIsValid(t *testing.T) {
	for seed := uint64(0); seed < 5; seed++ {
		ops := simValidRun(rand.New(rand.NewPCG(seed, 1)), simConfig{procs: 5, keys: 2, events: 5000, ttl: 1e9, pInfo: 0.02, heal: true})
		res := Check(context.Background(), ops, Config{Timeout: time.Minute})
		if res.Verdict != Valid {
			t.Fatalf("seed %d: verdict %s: %+v\nviolations: %+v", seed, res.Verdict, res.Checkers, res.Violations)
		}
	}
}
