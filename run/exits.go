package run

import (
	"fmt"
	"sync"

	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/sut"
)

// exits are the unplanned server exits of a run, in words, for its record.
type exits struct {
	mu  sync.Mutex
	all []string
}

func (e *exits) add(s string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.all = append(e.all, s)
}

func (e *exits) list() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.all...)
}

// watchExits has every server of the deployment that the harness
// supervises (sut.ExitWatcher) report each exit the harness did not
// cause: a server killed from outside or crashed. Each is recorded in the
// history (history.ServerExit), which makes the check name it and a
// valid verdict unknown (see checker.Coverage.Disturbed), in the run's
// record, and in the log as it happens. The nemesis's kills and restarts
// and the teardown go through the servers' own Kill and are never
// reported. Without this, a server killed mid-run came back at the next
// heal and the run said VALID without a word.
func (r *runner) watchExits() {
	var watched []sut.ExitWatcher
	for _, n := range r.cl.Members() {
		w, ok := n.(sut.ExitWatcher)
		if !ok {
			continue
		}
		w.WatchExits(func(e sut.Exit) {
			op := r.rec.Record(history.ServerExit(e.Node, e.How))
			s := fmt.Sprintf("%s exited unexpectedly at %.1f s (%s), not by the harness", e.Node, float64(op.Time)/1e9, e.How)
			r.exits.add(s)
			fmt.Fprintf(r.log, "%-9s %s\n", "exit", s) // as the phases' lines are
		})
		watched = append(watched, w)
	}
	r.onExit(func() {
		for _, w := range watched {
			w.WatchExits(nil)
		}
	})
}
