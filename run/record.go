package run

import (
	"cmp"
	"encoding/json"
	"fmt"
	"time"

	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/nemesis"
	"github.com/lockharness/lockharness/reports"
	"github.com/lockharness/lockharness/workloads"
)

// record is the run's record, run.json: how the run was made, and what
// its report needs to know of the lock, the workload, the deployment (its
// lock nodes) and the faults, so that the report knows nothing else.
func (r *runner) record(start time.Time, nodes []string) (reports.Record, error) {
	meta, err := r.meta(start)
	if err != nil {
		return reports.Record{}, err
	}
	f := leaseFacts(r.cfg.Lock, r.plan.Lock.NoLease, r.cfg.Workload.TTL)
	f.Fenced, f.Nodes, f.Clients, f.Keys = r.plan.Lock.Fenced, nodes, r.cfg.Workload.Clients, r.cfg.Workload.Keys
	kinds := append(r.cfg.Nemesis.Faults().FaultKinds(), history.ServerExitKind)
	return reports.Record{RunMeta: meta, Facts: &f, FaultKinds: kinds, UnplannedExits: r.exits.list()}, nil
}

// meta is how the run was made, for run.json.
func (r *runner) meta(start time.Time) (reports.RunMeta, error) {
	cj, err := json.Marshal(r.cfg)
	if err != nil {
		return reports.RunMeta{}, fmt.Errorf("encode config: %w", err)
	}
	return reports.RunMeta{
		Test: r.cfg.Test, Lock: r.cfg.Lock, Nemeses: r.cfg.Nemesis.Names, Seed: r.cfg.Seed, Command: r.cfg.Command,
		Scenario: r.cfg.Scenario, Explanation: r.cfg.Explanation, Expected: r.cfg.Expected,
		Config: cj, Start: start, Duration: time.Since(start), Phases: r.phases,
	}, nil
}

// driftLocks are the locks that subtract a drift allowance from their
// validity (go-redsync uses Redlock's factor, 0.01).
var driftLocks = map[string]bool{"redlock": true, "redsync": true}

// leaseFacts is the lease a report measures a run's faults against: none
// for a lock without one, else the workload's TTL and, for a
// Redlock-style lock, the clock drift it allows for.
func leaseFacts(lock string, noLease bool, ttl time.Duration) reports.Facts {
	if noLease {
		return reports.Facts{NoLease: true}
	}
	f := reports.Facts{TTL: ttl}
	if driftLocks[lock] {
		f.Drift = locks.RedlockDrift(ttl)
	}
	return f
}

// StoredRecord reads the record of the run stored in dir (its run.json),
// for `harness report` and `harness check`. A record written before
// records said what the report needs gets it here: the facts of its lock
// from its recorded configuration (the workload's TTL, its default when
// unset; a built-in lock's lease and fencing; Redlock's drift allowance),
// as the report used to read them, and the fault kinds of the nemeses.
// ok is false when dir has no run.json: the record then holds the fault
// kinds alone.
func StoredRecord(dir string) (reports.Record, bool, error) {
	rec, ok, err := reports.ReadRecord(dir)
	if err != nil || !ok {
		return reports.Record{FaultKinds: nemesis.FaultKinds()}, ok, err
	}
	if rec.Facts == nil {
		rec.Facts = recordedFacts(rec.RunMeta)
	}
	if rec.FaultKinds == nil {
		rec.FaultKinds = nemesis.FaultKinds()
	}
	return rec, true, nil
}

// recordedFacts reads the facts of a run from the configuration its
// record holds; nil when it holds none (a run derived from its history).
func recordedFacts(meta reports.RunMeta) *reports.Facts {
	if len(meta.Config) == 0 {
		return nil
	}
	var cfg struct {
		Lock     string
		Workload workloads.Config
	}
	if json.Unmarshal(meta.Config, &cfg) != nil {
		return nil
	}
	lock := cmp.Or(cfg.Lock, meta.Lock)
	info, err := locks.Builtin().Lookup(lock)
	known := err == nil
	wl := cfg.Workload.WithDefaults()
	f := leaseFacts(lock, known && info.NoLease, wl.TTL)
	f.Fenced, f.Clients, f.Keys = known && info.Fenced, wl.Clients, wl.Keys
	return &f
}
