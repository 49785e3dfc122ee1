package run

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/reports"
)

// A record written before records said what the report needs (run.json
// with the run's configuration alone) gets the lock's facts from that
// configuration, as the report used to read them: the workload's TTL (its
// default when unset), Redlock's drift allowance, no lease for a row lock;
// and the nemeses' fault kinds.
func TestStoredRecordOfAnOldRun(t *testing.T) {
	old := func(lock string, ttl time.Duration) reports.RunMeta {
		b, _ := json.Marshal(map[string]any{"lock": lock, "workload": map[string]any{"TTL": ttl}})
		return reports.RunMeta{Lock: lock, Config: b}
	}
	for _, c := range []struct {
		name string
		meta reports.RunMeta
		want *reports.Facts
	}{
		{"token", old("token", 3*time.Second), &reports.Facts{TTL: 3 * time.Second, Clients: 5, Keys: 1}},
		{"redlock", old("redlock", 2*time.Second), &reports.Facts{TTL: 2 * time.Second, Drift: 22 * time.Millisecond, Clients: 5, Keys: 1}},
		{"unset TTL", old("token", 0), &reports.Facts{TTL: time.Second, Clients: 5, Keys: 1}},
		{"fenced", old("fenced", time.Second), &reports.Facts{TTL: time.Second, Fenced: true, Clients: 5, Keys: 1}},
		{"row lock", reports.RunMeta{Lock: "mysql-for-update", Config: []byte(`{"Lock":"mysql-for-update","Workload":{"TTL":1000000000}}`)},
			&reports.Facts{NoLease: true, Clients: 5, Keys: 1}},
		{"no configuration", reports.RunMeta{Lock: "token"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := reports.WriteJSON(dir, reports.MetaFile, c.meta); err != nil {
				t.Fatal(err)
			}
			rec, ok, err := StoredRecord(dir)
			if err != nil || !ok {
				t.Fatalf("stored record: %v, %v", ok, err)
			}
			if got, _ := json.Marshal(rec.Facts); string(got) != mustJSON(c.want) {
				t.Errorf("facts %s, want %s", got, mustJSON(c.want))
			}
			if len(rec.FaultKinds) == 0 {
				t.Error("no fault kinds")
			}
		})
	}
}

// A record that says its facts is read as it is, and a run without
// run.json has a record of the fault kinds alone.
func TestStoredRecordOfANewRun(t *testing.T) {
	dir := t.TempDir()
	rec := reports.Record{RunMeta: reports.RunMeta{Lock: "token", Config: []byte(`{"workload":{"TTL":5000000000}}`)},
		Facts: &reports.Facts{TTL: 2 * time.Second, Nodes: []string{"n1"}}}
	if err := reports.WriteJSON(dir, reports.MetaFile, rec); err != nil {
		t.Fatal(err)
	}
	got, ok, err := StoredRecord(dir)
	if err != nil || !ok || got.Facts.TTL != 2*time.Second || len(got.Facts.Nodes) != 1 || len(got.FaultKinds) == 0 {
		t.Errorf("record %+v (%v, %v)", got, ok, err)
	}
	none, ok, err := StoredRecord(t.TempDir())
	if err != nil || ok || none.Facts != nil || len(none.FaultKinds) == 0 {
		t.Errorf("no run.json: %+v (%v, %v)", none, ok, err)
	}
}

// A lock of the user's own registry leaves in the record all the report
// needs of it: its system, fencing and drift allowance, so that the
// report of its stored run reads nothing of a registry; a lock without a
// lease records none, whatever the TTL.
func TestLockFactsOfAUsersLock(t *testing.T) {
	mine := locks.Info{Name: "my-quorum", System: locks.SystemEtcd, Fenced: true,
		Drift: func(ttl time.Duration) time.Duration { return ttl / 10 }}
	got := lockFacts(mine, 2*time.Second)
	want := reports.Facts{System: locks.SystemEtcd, Fenced: true, TTL: 2 * time.Second, Drift: 200 * time.Millisecond}
	if mustJSON(got) != mustJSON(want) {
		t.Errorf("facts %s, want %s", mustJSON(got), mustJSON(want))
	}
	row := lockFacts(locks.Info{Name: "my-row", NoLease: true, Drift: mine.Drift}, time.Second)
	if mustJSON(row) != mustJSON(reports.Facts{System: locks.SystemRedis, NoLease: true}) {
		t.Errorf("row lock facts %s", mustJSON(row))
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}
