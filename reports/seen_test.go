package reports

import (
	"context"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/nemesis"
)

// record is the record a run with meta writes: the fault kinds, and for
// a run that recorded its configuration the facts of its lock (the
// fixtures' runs that do are of a lock on one node with the workload's
// TTL, 1 s, as lockharness.StoredRecord reads their configuration).
func record(meta RunMeta) Record {
	rec := Record{RunMeta: meta, FaultKinds: nemesis.FaultKinds()}
	if len(meta.Config) > 0 {
		rec.Facts = &Facts{TTL: time.Second}
	}
	return rec
}

// kindOf is what a run's record says of the kind of fault name.
func kindOf(name string) history.FaultKind {
	return newFaultBook(nemesis.FaultKinds()).kind(name)
}

// faultsOf is Faults of ops, read with the fault kinds a run records.
func faultsOf(ops []history.Op) []Fault { return Faults(record(RunMeta{}), ops) }

// seenOf is what a check of ops sees, for a result built by hand: every
// event, nemesis event and client fault (not the events a violation names,
// nor porcupine's views, which only a check keeps).
func seenOf(ops []history.Op) checker.Seen {
	s := checker.Seen{Complete: true}
	for i := range ops {
		s.Add(&ops[i])
	}
	return s
}

// checked is res, built by hand, with what the real check of ops saw:
// its porcupine views among it.
func checked(ops []history.Op, res checker.Result) checker.Result {
	chk, err := checker.Check(context.Background(), history.Events(ops), checker.Config{Views: true})
	if err != nil {
		panic(err)
	}
	res.Seen = chk.Seen
	return res
}

// renderOps renders the run of ops in memory, its result res built by
// hand (with what the check saw, when it says nothing of it), into dir.
func renderOps(ctx context.Context, dir string, meta RunMeta, ops []history.Op, res checker.Result) error {
	if !res.Seen.Complete {
		res = checked(ops, res)
	}
	_, err := Render(ctx, dir, record(meta), history.Events(ops), res)
	return err
}

// newRunView is the view of the run of ops, its result res built by hand
// (with what a check sees of ops, when it says nothing of it), digested.
func newRunView(meta RunMeta, ops []history.Op, res checker.Result) *runView {
	if !res.Seen.Complete {
		res.Seen = seenOf(ops)
	}
	v := newView(record(meta), Normalize(res), history.Events(ops))
	if err := v.scanHolds(); err != nil { // holds in memory cannot fail
		panic(err)
	}
	d := newDigest(unkept(v.res), lastTime(v.src))
	if err := each(context.Background(), v.src, d.see); err != nil { // nor can a slice
		panic(err)
	}
	v.digested(d)
	return v
}
