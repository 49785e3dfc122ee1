package run

import (
	"context"
	"errors"
	"time"

	"github.com/lockharness/lockharness/nemesis"
)

// startScript performs the leading steps of a script at 0 (those that
// await no holder) and returns the rest. A step that fails is recorded by
// the nemesis and the run goes on, as in runScript.
func startScript(ctx context.Context, nem *nemesis.Runner, env nemesis.Env, steps []nemesis.Step) ([]nemesis.Step, error) {
	for len(steps) > 0 && steps[0].At == 0 && steps[0].Await == nil {
		if err := nem.Do(ctx, env, steps[0]); err != nil {
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
func runScript(ctx context.Context, nem *nemesis.Runner, env nemesis.Env, steps []nemesis.Step) error {
	start := time.Now()
	for _, s := range steps {
		if !wait(ctx, time.Until(start.Add(s.At))) {
			return nil
		}
		if s.Await != nil {
			if err := nem.Await(ctx, env, s); err != nil {
				continue // no holder came: the step does not happen
			}
			start = time.Now().Add(-s.At)
			s.Await = nil
		}
		if err := nem.Do(ctx, env, s); err != nil {
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
