package checker

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/lockharness/lockharness/history"
)

// TestOverlapAnalysisAgreesWithPorcupine is the property DESIGN.md asks
// for: on random histories, the overlap analysis (claims, overlaps, foreign
// releases) and porcupine's lease-mutex model reach the same verdict for
// every key.
//
// Nothing is restricted: the histories include unknown (info) acquires,
// renews and releases, operations cut off by crashes, definite "not held"
// answers (lost leases) and refused commands, and renewer threads whose
// renews race their client's releases and acquires, each other, and
// outlive their client. That is
// comparable because both definitions give unknowns the same meaning: an
// unknown acquire or renew grants nothing (the overlap analysis counts only
// ok claims; for the model "did not happen" is always at least as
// permissive, see LeaseNoop), and any release ends its process's claim at
// its invocation.
func TestOverlapAnalysisAgreesWithPorcupine(t *testing.T) {
	shapes := []genConfig{
		{procs: 2, keys: 1, opsPerProc: 6, maxLat: 3, maxGap: 4, maxTTL: 10},
		{procs: 3, keys: 1, opsPerProc: 8, maxLat: 4, maxGap: 6, maxTTL: 12, pInfo: 0.15},
		{procs: 4, keys: 2, opsPerProc: 10, maxLat: 2, maxGap: 10, maxTTL: 20, pInfo: 0.1, crash: true},
		{procs: 3, keys: 1, opsPerProc: 12, maxLat: 0, maxGap: 3, maxTTL: 4, pInfo: 0.05, crash: true},
		{procs: 5, keys: 1, opsPerProc: 6, maxLat: 5, maxGap: 20, maxTTL: 8, pInfo: 0.1},
		// Watchdogs: renewer threads racing their clients' releases and
		// acquires, stale ones, and definite "not held" answers.
		{procs: 2, keys: 1, opsPerProc: 6, maxLat: 3, maxGap: 4, maxTTL: 12, pInfo: 0.1, renewers: true},
		{procs: 3, keys: 1, opsPerProc: 8, maxLat: 4, maxGap: 3, maxTTL: 10, pInfo: 0.05, crash: true, renewers: true},
		{procs: 3, keys: 2, opsPerProc: 8, maxLat: 1, maxGap: 8, maxTTL: 16, renewers: true},
	}
	const perShape = 1500
	valid, invalid := 0, 0
	// What the watchdog shapes exercise, so that the property is known to
	// cover it: absorbed renews, lost-lease evidence and violations,
	// foreign renews.
	absorbed, evidence, kinds := 0, 0, map[string]int{}
	for si, shape := range shapes {
		v0, i0 := valid, invalid
		for seed := uint64(0); seed < perShape; seed++ {
			rng := rand.New(rand.NewPCG(seed, uint64(si)))
			ops := genLockHistory(rng, shape)
			p := mustPrepare(t, ops)
			byKey := buildClaims(p)
			f := analyseClaims(p, byKey)
			bad := map[string]bool{}
			for _, v := range f.violations {
				bad[v.Key] = true
				kind := v.Kind
				if strings.Contains(v.Description, "renewed") {
					kind = "foreign-renew"
				}
				kinds[kind]++
			}
			for i := range p.calls {
				if p.calls[i].absorbed {
					absorbed++
				}
				if p.calls[i].lost {
					evidence++
				}
			}
			for _, key := range p.keys {
				lin := porcupine.CheckOperations(LeaseMutexModel(), leaseOps(p, key, false))
				if lin == bad[key] {
					t.Fatalf("shape %d seed %d key %s: overlap analysis says violated=%v, porcupine says linearizable=%v\nviolations: %v\nhistory:\n%s",
						si, seed, key, bad[key], lin, f.violations, dump(ops))
				}
				// With the no-ops included (as in pictures), and failed
				// and unknown releases over their whole interval rather
				// than at their invocation (see leaseOps), the verdict
				// must not change.
				if porcupine.CheckOperations(LeaseMutexModel(), leaseOps(p, key, true)) != lin {
					t.Fatalf("shape %d seed %d key %s: including failed/unknown acquires changed porcupine's verdict\n%s", si, seed, key, dump(ops))
				}
				if lin {
					valid++
				} else {
					invalid++
				}
			}
		}
		if valid-v0 < 25 || invalid-i0 < 25 {
			t.Errorf("shape %d is lopsided: %d valid, %d invalid", si, valid-v0, invalid-i0)
		}
	}
	t.Logf("%d valid and %d invalid key histories agreed; %d absorbed renews, %d \"not held\" answers, violations %v", valid, invalid, absorbed, evidence, kinds)
	// The property is only worth something if both verdicts are common.
	if valid < 1000 || invalid < 1000 {
		t.Fatalf("generator is lopsided: %d valid, %d invalid", valid, invalid)
	}
	for _, k := range []string{KindOverlap, KindForeignRelease, KindLostLease, "foreign-renew"} {
		if kinds[k] < 100 {
			t.Errorf("only %d %s violations: the generator does not exercise them", kinds[k], k)
		}
	}
	if absorbed < 1000 || evidence < 1000 {
		t.Errorf("only %d absorbed renews and %d \"not held\" answers", absorbed, evidence)
	}
}

// TestChunkedPorcupineAgreesWithWhole checks the chunking of long
// histories against porcupine on the whole history, for both models, on
// simulated runs of a correct lock (valid) and random histories (mostly
// invalid).
func TestChunkedPorcupineAgreesWithWhole(t *testing.T) {
	ok, illegal := 0, 0
	compare := func(name string, model porcupine.Model, ops []porcupine.Operation) {
		t.Helper()
		whole := porcupine.CheckOperations(model, ops)
		r := checkLinearizable(context.Background(), model, ops, time.Minute)
		if (r.res == porcupine.Ok) != whole || r.res == porcupine.Unknown {
			t.Fatalf("%s: chunked %v, whole linearizable=%v", name, r.res, whole)
		}
		if whole {
			ok++
		} else {
			illegal++
		}
	}
	for seed := uint64(0); seed < 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, 99))
		sim := mustPrepare(t, simValidRun(rng, simConfig{procs: 4, keys: 2, events: 6000, ttl: 1e9, pInfo: 0.02}))
		for _, key := range sim.keys {
			lops := leaseOps(sim, key, false)
			if n := len(quiescentChunks(sortedByCall(lops))); n < 2 {
				t.Fatalf("seed %d %s: %d ops make only %d chunk", seed, key, len(lops), n)
			}
			compare(fmt.Sprintf("sim seed %d %s lease", seed, key), LeaseMutexModel(), lops)
			compare(fmt.Sprintf("sim seed %d %s counter", seed, key), CounterModel(), counterOps(sections(sim)[key]))
		}
		ops := genLockHistory(rng, genConfig{procs: 3, keys: 1, opsPerProc: 400, maxLat: 3, maxGap: 200, maxTTL: 60, pInfo: 0.05})
		compare(fmt.Sprintf("random seed %d", seed), LeaseMutexModel(), leaseOps(mustPrepare(t, ops), "lock-0", false))
	}
	t.Logf("%d ok, %d illegal", ok, illegal)
	if ok == 0 || illegal == 0 {
		t.Fatalf("want both outcomes, got %d ok and %d illegal", ok, illegal)
	}
}

func sortedByCall(ops []porcupine.Operation) []porcupine.Operation {
	out := slices.Clone(ops)
	slices.SortStableFunc(out, func(a, b porcupine.Operation) int { return cmp.Compare(a.Call, b.Call) })
	return out
}

func dump(ops []history.Op) string {
	var b strings.Builder
	for _, op := range ops {
		b.WriteString(op.String())
		b.WriteByte('\n')
	}
	return b.String()
}
