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
// lock nodes) and the faults, so that the report knows nothing else: a
// stored run of a lock of the user's own registry reads back without it.
func (r *runner) record(start time.Time, nodes []string) (reports.Record, error) {
	meta, err := r.meta(start)
	if err != nil {
		return reports.Record{}, err
	}
	f := lockFacts(r.plan.Lock, r.cfg.Workload.TTL)
	f.Nodes, f.Clients, f.Keys = nodes, r.cfg.Workload.Clients, r.cfg.Workload.Keys
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

// lockFacts are the lock's facts a report measures a run's faults
// against: its system and fencing, no lease for a lock without one, else
// the workload's TTL and the clock drift the lock allows for
// (locks.Info.Drift).
func lockFacts(info locks.Info, ttl time.Duration) reports.Facts {
	f := reports.Facts{System: info.SystemName(), Fenced: info.Fenced}
	if info.NoLease {
		f.NoLease = true
		return f
	}
	f.TTL = ttl
	if info.Drift != nil {
		f.Drift = info.Drift(ttl)
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
	// Records without facts were written when every run's lock was a
	// built-in one: its facts are those of locks.Builtin(). A lock it does
	// not know (renamed since) is taken as what the report assumed then:
	// a lease of the TTL, unfenced, no drift.
	lock := cmp.Or(cfg.Lock, meta.Lock)
	info, err := locks.Builtin().Lookup(lock)
	if err != nil {
		info = locks.Info{Name: lock}
	}
	wl := cfg.Workload.WithDefaults()
	f := lockFacts(info, wl.TTL)
	f.System, f.Clients, f.Keys = "", wl.Clients, wl.Keys // an old record did not say
	return &f
}
