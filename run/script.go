package run

import (
	"context"
	"errors"
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
func runScript(ctx context.Context, nem *nemesis.Runner, env nemesis.Env, steps []nemesis.Step, ex *executed) error {
	start := time.Now()
	for i, s := range steps {
		rec := schedule.StepOf(s)
		if !wait(ctx, time.Until(start.Add(s.At))) {
			ex.cutOff(steps[i:])
			return nil
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
	<-ctx.Done()
	return nil
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
