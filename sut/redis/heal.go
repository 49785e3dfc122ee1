package redis

import (
	"context"

	"github.com/lockharness/lockharness/sut"
)

// Heal brings the whole cluster back to normal, whatever broke it: links,
// paused and dead processes, clocks, then the replication topology
// (sut.HealAll, through the seam). It returns what it did, for the
// history.
func (c *Cluster) Heal(ctx context.Context) (string, error) { return sut.HealAll(ctx, c) }

// Healthy checks that nothing a nemesis does is left over: no link has a
// toxic, every process runs and none is paused, every faked clock reads
// real time, and a replicated topology has one master (the one the harness
// and the sentinels take as master) followed by every other node
// (sut.CheckHealthy).
func (c *Cluster) Healthy(ctx context.Context) error { return sut.CheckHealthy(ctx, c) }
