package sut

import "context"

// Capabilities of a sharded deployment (Redis Cluster), both backed by
// Sharded.
const (
	// CanFailoverShard: a replica can be told to take over its master's
	// slots (CLUSTER FAILOVER), gracefully or by force.
	CanFailoverShard Capability = "shard-failover"
	// CanMoveSlots: a hash slot and its keys can move to another master,
	// as resharding does.
	CanMoveSlots Capability = "move-slots"
)

// Sharded is a deployment whose keys are spread over several masters by
// hash slot, each master with replicas of its own (Redis Cluster). Its
// answers are the nodes' own: who owns a slot is what the owner says of
// itself, not what the harness last did.
type Sharded interface {
	// Slot is the hash slot key lives in.
	Slot(key string) int
	// Shard is the master serving slot now and its replicas.
	Shard(ctx context.Context, slot int) (Shard, error)
	// Masters are the nodes serving slots now, in name order.
	Masters(ctx context.Context) ([]string, error)
	// Failover tells replica to take over its master's slots, as an
	// operator would (over a connection no fault reaches): mode
	// FailoverGraceful, FailoverForce or FailoverTakeover. It returns once
	// the replica reports itself a master serving those slots.
	Failover(ctx context.Context, replica, mode string) error
	// MoveSlot moves slot and every key in it from its master to master
	// to, as resharding does, and returns how many keys moved.
	MoveSlot(ctx context.Context, slot int, to string) (int, error)
}

// Shard is one hash slot's master and its replicas.
type Shard struct {
	Slot     int
	Master   string
	Replicas []string
}

// Modes of Sharded.Failover, after Redis's CLUSTER FAILOVER options.
const (
	// FailoverGraceful: the master stops taking writes until the replica
	// has every one of them, then the replica takes over.
	FailoverGraceful = ""
	// FailoverForce: the replica takes over at once, with whatever it has
	// received, once a majority of masters vote for it.
	FailoverForce = "force"
	// FailoverTakeover: the replica takes over at once, without a vote.
	FailoverTakeover = "takeover"
)
