package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/sut"
)

// clusterFailover strikes, in a Redis Cluster (sut.Sharded), the hash
// slot a lock key lives in:
//
//   - "failover": CLUSTER FAILOVER sent to a replica of the slot's master
//     (param mode: "" graceful, the master stops writes until the replica
//     has them all; "force", the replica takes over at once with what it
//     has; "takeover", without even a vote), done once the replica reports
//     itself a master serving the slot;
//   - "move-slot": the slot and its keys migrate to another master (param
//     to; default the next master after the owner), as resharding does:
//     clients get ASK while it moves and MOVED after.
//
// A master votes about the same master's slots at most once in twice the
// cluster's node timeout: a graceful or FORCE failover of a pair that
// failed over just before gets no votes and is recorded as info when the
// replica is still not master after 8s (TAKEOVER needs no vote).
//
// The key is param key, or, when none is given, the key of a client
// holding a lock now. Each action is recorded with the slot, its master
// before and after, and how long it took (history.ShardChange).
type clusterFailover struct{}

func (clusterFailover) Info() Info {
	return Info{Name: "cluster-failover", Strikes: []string{"cluster-failover", "move-slot"},
		Needs:       sut.Needs{Capabilities: []sut.Capability{sut.CanFailoverShard, sut.CanMoveSlots}},
		Description: "Redis Cluster: fail over the master of a lock key's slot to its replica (CLUSTER FAILOVER, graceful, FORCE or TAKEOVER), or move the slot to another master (SETSLOT IMPORTING/MIGRATING, MIGRATE, SETSLOT NODE)"}
}

func (clusterFailover) Reset() {}

func (clusterFailover) Setup(context.Context, *Exec) error { return nil }

func (clusterFailover) Generate(rng *rand.Rand, _ Config, _ Topology) []Step {
	switch rng.IntN(4) {
	case 0:
		return []Step{{Action: "move-slot"}}
	default:
		mode := []string{sut.FailoverGraceful, sut.FailoverForce, sut.FailoverTakeover}[rng.IntN(3)]
		return []Step{{Action: "failover", Params: map[string]string{"mode": mode}}}
	}
}

// do finds the slot of the step's key and its shard, then fails the
// shard's master over or moves the slot.
func (clusterFailover) Do(ctx context.Context, e *Exec, s Step) error {
	d, err := e.deployment()
	if err != nil {
		return err
	}
	sh, ok := d.(sut.Sharded)
	if !ok {
		return fmt.Errorf("the cluster-failover nemesis needs a Redis Cluster (--topology cluster): %w", sut.ErrUnsupported)
	}
	switch s.Action {
	case "failover", "move-slot":
	default:
		return fmt.Errorf("unknown action %q (want failover or move-slot)", s.Action)
	}
	f := s.Action
	if f == "failover" {
		f = "cluster-failover"
	}
	key, err := e.lockKey(ctx, s.Params["key"])
	if err != nil {
		return e.record(f, mark, nil, func() (string, error) { return "", err })
	}
	slot := sh.Slot(key)
	shard, err := sh.Shard(ctx, slot)
	if err != nil {
		return e.record(f, mark, nil, func() (string, error) { return "", err })
	}
	t := struckSlot{key: key, slot: slot, shard: shard}
	if s.Action == "failover" {
		return failoverSlot(ctx, e, sh, s.Params, t)
	}
	return moveSlot(ctx, e, sh, s.Params, t)
}

// struckSlot is what a cluster-failover step strikes: the lock key, its
// slot, and the shard serving the slot before the step.
type struckSlot struct {
	key   string
	slot  int
	shard sut.Shard
}

// change is the history's record of the step as far as it is known before
// the step runs, and inv the invocation that carries it.
func (t struckSlot) change() (change *history.ShardChange, inv *history.Value) {
	change = &history.ShardChange{Key: t.key, Slot: t.slot, From: t.shard.Master}
	return change, &history.Value{Mark: true, Shard: change}
}

// failoverSlot has a replica of the slot's master (params "replica", else
// its first) take the slot over: CLUSTER FAILOVER in params "mode".
func failoverSlot(ctx context.Context, e *Exec, sh sut.Sharded, params map[string]string, t struckSlot) error {
	change, inv := t.change()
	mode := strings.ToLower(params["mode"])
	change.Mode = mode
	replica := params["replica"]
	if replica == "" && len(t.shard.Replicas) > 0 {
		replica = t.shard.Replicas[0]
	}
	inv.Targets = []string{replica, t.shard.Master}
	return e.recordV("cluster-failover", inv, func(v *history.Value) error {
		if replica == "" {
			return fmt.Errorf("%w: slot %d's master %s has no replica", ErrNotDone, t.slot, t.shard.Master)
		}
		c := *change
		v.Shard = &c
		t0 := time.Now()
		if err := sh.Failover(ctx, replica, mode); err != nil {
			return err
		}
		c.To, c.Took = replica, int64(time.Since(t0))
		v.Detail = fmt.Sprintf("%s took over slot %d (%s) from %s: CLUSTER FAILOVER %s in %v",
			replica, t.slot, t.key, t.shard.Master, strings.ToUpper(orWord(mode, "(graceful)")), time.Since(t0).Round(time.Millisecond))
		return nil
	})
}

// moveSlot migrates the slot and its keys to another master (params "to",
// else the next master after the slot's), as resharding does.
func moveSlot(ctx context.Context, e *Exec, sh sut.Sharded, params map[string]string, t struckSlot) error {
	change, inv := t.change()
	to := params["to"]
	if to == "" {
		ms, err := sh.Masters(ctx)
		if err != nil {
			return e.record("move-slot", mark, nil, func() (string, error) { return "", err })
		}
		to = nextAfter(ms, t.shard.Master)
	}
	inv.Targets = []string{t.shard.Master, to}
	return e.recordV("move-slot", inv, func(v *history.Value) error {
		if to == "" || to == t.shard.Master {
			return fmt.Errorf("%w: no other master to move slot %d to", ErrNotDone, t.slot)
		}
		c := *change
		v.Shard = &c
		t0 := time.Now()
		n, err := sh.MoveSlot(ctx, t.slot, to)
		c.Keys = n
		if err != nil {
			return err
		}
		c.To, c.Took = to, int64(time.Since(t0))
		v.Detail = fmt.Sprintf("slot %d (%s) moved from %s to %s with %d key(s) in %v", t.slot, t.key, t.shard.Master, to, n, time.Since(t0).Round(time.Millisecond))
		return nil
	})
}

// lockKey is the key a step names, or the key of a client holding a
// lock now (waiting for one at most a second).
func (e *Exec) lockKey(ctx context.Context, key string) (string, error) {
	if key != "" {
		return key, nil
	}
	if e.env.Clients == nil {
		return "", fmt.Errorf("%w: no key given and no clients to take a holder's key from", ErrNotDone)
	}
	wctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if _, k, ok := e.env.Clients.AwaitHolder(wctx, Await{}); ok {
		return k, nil
	}
	return "", fmt.Errorf("%w: no key given and no client held a lock", ErrNotDone)
}

// nextAfter is the name after x in sorted names, wrapping around; "" when
// names holds nothing else.
func nextAfter(names []string, x string) string {
	for i, n := range names {
		if n == x {
			if len(names) == 1 {
				return ""
			}
			return names[(i+1)%len(names)]
		}
	}
	if len(names) > 0 {
		return names[0]
	}
	return ""
}

func orWord(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
