package reports

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/history"
)

// Record is a run's record, run.json: how the run was made (RunMeta,
// which results.json repeats) and what its report needs to know of the
// lock, the workload and the faults (Facts, FaultKinds), so that the
// report reads nothing but the history, the check's result and this.
//
// A record written before Facts and FaultKinds existed has neither; the
// caller fills them in (lockharness.StoredRecord does, from the recorded
// configuration) or the report goes without: no fault sizes, and an old
// history's nemesis events read by the start-X/stop-X convention alone.
type Record struct {
	RunMeta
	// Facts are what the report measures faults against; nil when the
	// run recorded no configuration.
	Facts *Facts `json:"facts,omitempty"`
	// FaultKinds say what each kind of fault is called and how it is
	// drawn (see history.FaultKind).
	FaultKinds []history.FaultKind `json:"fault_kinds,omitempty"`
	// UnplannedExits say, in words, each server that exited during the
	// run without the harness asking (history.FServerExit), and how.
	UnplannedExits []string `json:"unplanned_exits,omitempty"`
}

// Facts are what a report needs to know of the lock under test, its
// workload and its deployment.
type Facts struct {
	// System is the system the lock ran on ("redis", "etcd", …); empty
	// in a record written before it was recorded.
	System string `json:"system,omitempty"`
	// TTL is the lease the workload asked for (0 for a lock without one).
	TTL time.Duration `json:"ttl_ns,omitempty"`
	// Drift is the clock drift the lock allows for (Redlock's 1% of the
	// TTL plus 2 ms); zero for a lock that allows for none.
	Drift time.Duration `json:"drift_ns,omitempty"`
	// NoLease is true for a lock without a TTL, held as long as its
	// holder's session lasts: faults are not measured against a lease.
	NoLease bool `json:"no_lease,omitempty"`
	// Fenced is true when the lock's leases carry a fencing token.
	Fenced bool `json:"fenced,omitempty"`
	// Nodes are the lock nodes, Clients the client slots and Keys the
	// lock keys of the run.
	Nodes   []string `json:"nodes,omitempty"`
	Clients int      `json:"clients,omitempty"`
	Keys    int      `json:"keys,omitempty"`
}

// ReadRecord reads dir/run.json; ok is false when the run has none.
func ReadRecord(dir string) (rec Record, ok bool, err error) {
	b, err := os.ReadFile(filepath.Join(dir, MetaFile))
	if errors.Is(err, os.ErrNotExist) {
		return rec, false, nil
	}
	if err != nil {
		return rec, false, fmt.Errorf("read run metadata: %w", err)
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		return rec, false, fmt.Errorf("read %s: %w", filepath.Join(dir, MetaFile), err)
	}
	return rec, true, nil
}

// DeriveRecord is the record of a run without run.json, guessed from its
// directory and what the check res saw of its history: the test is the
// parent directory's name, the start the directory's timestamp, the
// duration the last event's time, the nemeses the fault families seen
// (read with rec's fault kinds, which it keeps).
func DeriveRecord(dir string, rec Record, res checker.Result) Record {
	faults := newFaultBook(rec.FaultKinds).faultsUntil(res.Seen.Nemesis, res.Seen.End)
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	meta := RunMeta{Test: filepath.Base(filepath.Dir(abs)), Duration: time.Duration(res.Seen.End)}
	stamp, _, _ := strings.Cut(filepath.Base(abs), "-")
	if t, err := time.Parse("20060102T150405.000Z", stamp); err == nil {
		meta.Start = t
	}
	seen := map[string]bool{}
	for _, f := range faults {
		if !seen[f.Family] {
			seen[f.Family] = true
			meta.Nemeses = append(meta.Nemeses, f.Family)
		}
	}
	slices.Sort(meta.Nemeses)
	return Record{RunMeta: meta, FaultKinds: rec.FaultKinds}
}
