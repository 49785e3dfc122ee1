package nemesis

import (
	"context"
	"time"

	"github.com/lockharness/lockharness/sut"
)

// Healthy checks that nothing a nemesis does is left over on d (see
// sut.Deployment.Healthy): the final heal must leave it so.
func Healthy(ctx context.Context, d sut.Deployment) error { return d.Healthy(ctx) }

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
