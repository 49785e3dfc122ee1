package cluster

import (
	"context"

	"github.com/lockharness/lockharness/deploy"
)

// Heal brings the whole cluster back to normal, whatever broke it: links,
// paused and dead processes, clocks, then the replication topology
// (deploy.HealAll, through the seam). It returns what it did, for the
// history.
func (c *Cluster) Heal(ctx context.Context) (string, error) { return deploy.HealAll(ctx, c) }

// Healthy checks that nothing a nemesis does is left over: no link has a
// toxic, every process runs and none is paused, every faked clock reads
// real time, and a replicated topology has one master (the one the harness
// and the sentinels take as master) followed by every other node
// (deploy.CheckHealthy).
func (c *Cluster) Healthy(ctx context.Context) error { return deploy.CheckHealthy(ctx, c) }
