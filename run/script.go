package run

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/lockharness/lockharness/nemesis"
	"github.com/lockharness/lockharness/schedule"
)

// startScript performs the leading steps of a script at 0 (those that
// await no holder) and returns the rest. A step that fails is recorded by
// the nemesis and the run goes on, as in runScript.
func startScript(ctx context.Context, nem *nemesis.Runner, env nemesis.Env, steps []nemesis.Step, ex *executed) ([]nemesis.Step, error) {
	for len(steps) > 0 && steps[0].At == 0 && steps[0].Await == nil {
		rec := schedule.StepOf(steps[0])
		err := nem.Do(ctx, env, steps[0])
		ex.done(rec, time.Now(), 0, "", err)
		if err != nil {
			var unknown *nemesis.UnknownError
			if errors.As(err, &unknown) {
				return nil, err
			}
		}
		steps = steps[1:]
	}
	return steps, nil
}

// runScript performs each step at its time from now, until ctx is done. A
// step that fails is recorded by the nemesis and the script goes on, as in a
// random schedule. A step that awaits a holder shifts the rest of the
// script by as long as it waited, so the steps after it keep their distance
// from it (a restart stays as long after its kill as the script says).
// Each step is recorded in ex as it happened; those the run's end cut off
// are recorded as not done.
//
// With end set (a random schedule that awaits holders), a fault whose
// own end (its stop, reset or restart) would come after end is not
// started: the final heal would undo it unawaited, at whatever moment the
// run ends. A clock reset there is a forward jump on a node, and broke
// the grant that rested on a bare quorum with it at that moment
// (redlock × clock, one run in three).
//
// over is closed once every step has acted or been given up (the run's
// end may then come early: EndEarly).
func runScript(ctx context.Context, nem *nemesis.Runner, env nemesis.Env, steps []nemesis.Step, ex *executed, end time.Time, over chan<- struct{}) error {
	err := runSteps(ctx, nem, env, steps, ex, end)
	close(over)
	if err != nil || ctx.Err() != nil {
		return err
	}
	<-ctx.Done()
	return nil
}

// runSteps is runScript's steps, each at its time; it returns once the
// last has acted, or when ctx ends (the rest recorded as cut off).
func runSteps(ctx context.Context, nem *nemesis.Runner, env nemesis.Env, steps []nemesis.Step, ex *executed, end time.Time) error {
	start := time.Now()
	skip := map[int]bool{}
	for i, s := range steps {
		rec := schedule.StepOf(s)
		if !wait(ctx, time.Until(start.Add(s.At))) {
			ex.cutOff(steps[i:])
			return nil
		}
		if skip[i] {
			ex.done(rec, time.Now(), 0, "", errEndsAfterRun)
			continue
		}
		var waited time.Duration
		holder := ""
		if s.Await != nil {
			began := time.Now()
			p, key, err := nem.AwaitHolder(ctx, env, s)
			if err != nil {
				ex.done(rec, time.Now(), time.Since(began), "", err)
				continue // no holder came: the step does not happen
			}
			waited, holder = time.Since(began), holderName(p, key)
			start = time.Now().Add(-s.At)
			s.Await = nil
			s = s.WithHolder(p)
		}
		if j, ok := undoOf(steps, i); ok && !end.IsZero() && start.Add(steps[j].At).After(end) {
			skip[j] = true
			ex.done(rec, time.Now(), waited, holder, errEndsAfterRun)
			continue
		}
		err := nem.Do(ctx, env, s)
		ex.done(rec, time.Now(), waited, holder, err)
		if err != nil {
			var unknown *nemesis.UnknownError
			if errors.As(err, &unknown) {
				return err
			}
		}
	}
	return nil
}

// errEndsAfterRun is why a fault of a random schedule was not started:
// its end would come after the run's (runScript).
var errEndsAfterRun = fmt.Errorf("%w: its end would come after the run's end, and the final heal would undo it unawaited", nemesis.ErrNotDone)

// endActions end a fault that a step before them started.
var endActions = map[string]bool{"stop": true, "reset": true, "restart": true, "resume": true}

// undoOf is the step that ends the fault steps[i] starts: the next step of
// the same nemesis on the same targets with an ending action, before any
// other step of that nemesis starts one.
func undoOf(steps []nemesis.Step, i int) (int, bool) {
	s := steps[i]
	if endActions[s.Action] {
		return 0, false
	}
	for j := i + 1; j < len(steps); j++ {
		o := steps[j]
		if o.Nemesis != s.Nemesis {
			continue
		}
		if endActions[o.Action] && slices.Equal(o.Targets, s.Targets) {
			return j, true
		}
		return 0, false
	}
	return 0, false
}

// withEnds is the steps before limit, and after it only those that end a
// fault begun before it (undoOf).
func withEnds(steps []nemesis.Step, limit time.Duration) []nemesis.Step {
	var out []nemesis.Step
	ends := map[int]bool{}
	for i, s := range steps {
		if s.At >= limit && !ends[i] {
			continue
		}
		out = append(out, s)
		if j, ok := undoOf(steps, i); ok {
			ends[j] = true
		}
	}
	return out
}

// wait sleeps for d; false if ctx ended first.
func wait(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// unawaited are the actions that give back what a holder needs (a link
// healed, a node restarted or resumed): with one node, nobody can hold
// while it is cut off or down, so such a step awaiting a holder would
// never act.
var unawaited = map[string]bool{"stop": true, "restart": true, "resume": true}

// awaitHolders makes each step of a random schedule that strikes wait
// for a holder with half its lease (ttl) left, so that the fault lands
// inside a hold and has time to matter before the lease ends, however a
// loaded machine times the grants. A step on one node of a multi-node
// lock waits for a holder granted by every node: the fault strikes the
// holder's grant, and the grant has a margin, so what the lock does then
// is the lock's doing, not the draw's. A grant on a bare quorum (the
// state in which one node forgetting the lock gives it away) comes from
// split votes under contention, too rarely for a random run to count on
// one (a matrix cell waited out its whole run phase for one), and too
// often to leave to chance (a third of the cells that awaited any grant
// with that node struck one); the catalogue makes it on purpose
// (redlock-clock-jump, redlock-crash-restart). A clock reset awaits too:
// undoing a backward jump is a forward one. A pause of a holder strikes
// at the end of its hold (the workload's safe point), so it waits for a
// holder with the hold and a quarter of the lease still to run (at most
// nine tenths of the lease): the pause then begins inside a live lease
// however long the holder took to get it. The steps after an awaited
// one keep their distance from it (runScript).
//
// A kill awaits a holder with nine tenths of its lease left, and holds
// that holder's release back until the restart (nemesis kill): the node,
// back empty, then answers while the lease still runs (a restart took up
// to 620ms at load 48), and the lock's promise is tested, not the race
// between the restart and a 400ms hold. The heal of a holder partition
// awaits a holder too (healsHolderCut).
//
// The reset of a clock on one node of a multi-node lock awaits a holder
// granted by every other node: while that node's clock strobes or drifts
// it seldom grants along with all the others (a strobing node's key of a
// failed contender is still there when the next holder asks), so an await
// for a grant by every node waited out the run, and the final heal reset
// the clock unawaited, a forward jump that broke whichever grant rested
// on a bare quorum with that node at that moment (redlock × clock, seed 2,
// once in three runs). A holder granted by the others keeps a majority
// whatever the jump does to that node.
//
// nodes is how many nodes grant a lease each (Plan.grantingNodes): a
// consensus group's or a replicated deployment's nodes do not, and an
// await for a grant by every one of them would never hold.
func awaitHolders(steps []nemesis.Step, nodes int, ttl, hold time.Duration) []nemesis.Step {
	var every []string
	for i := 1; i <= nodes; i++ {
		every = append(every, "n"+strconv.Itoa(i))
	}
	out := make([]nemesis.Step, len(steps))
	for i, s := range steps {
		out[i] = s
		if unawaited[s.Action] && !healsHolderCut(s) {
			continue
		}
		a := &nemesis.Await{LeaseLeft: ttl / 2}
		switch {
		case s.Nemesis == "client-pause" && s.Action == "holder":
			a.LeaseLeft = min(hold+ttl/4, ttl*9/10)
		case s.Nemesis == "kill" && s.Action == "kill":
			a.LeaseLeft = ttl * 9 / 10
		}
		if nodes > 1 && len(s.Targets) == 1 && isNodeName(s.Targets[0]) {
			a.Granted = every
			if s.Nemesis == "clock" && s.Action == "reset" {
				a.Granted = others(every, s.Targets[0])
			}
		}
		out[i].Await = a
	}
	return out
}

// others are the nodes of every but node.
func others(every []string, node string) []string {
	var out []string
	for _, n := range every {
		if n != node {
			out = append(out, n)
		}
	}
	return out
}

// healsHolderCut reports whether s heals a partition of the holder's
// client alone (pattern holder): the other clients go on meanwhile, so
// the heal awaits one of them holding with half its lease left, and the
// cut holder's release, held back until the heal, reaches the node inside
// that lease (nemesis.PatternHolder).
func healsHolderCut(s nemesis.Step) bool {
	return s.Nemesis == "partition" && s.Action == "stop" && s.Params["pattern"] == nemesis.PatternHolder
}

// isNodeName reports whether target names a lock node ("n3"), not a
// role, a client or a link.
func isNodeName(target string) bool {
	if len(target) < 2 || target[0] != 'n' {
		return false
	}
	for _, r := range target[1:] {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
