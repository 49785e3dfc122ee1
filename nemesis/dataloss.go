package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockharness/lockharness/cluster"
)

// dataLoss destroys data on a node the way an operator or another
// application does: FLUSHALL (everything, lock keys and fencing counters
// included), or DEL of named keys. The process, its links and its clock are
// untouched, so nothing in the lock can notice; a lock key that vanishes
// is free for the next client at once (redisson#3829: keys lost on a shard
// switch). There is nothing to heal: lost data stays lost.
type dataLoss struct{}

func (dataLoss) info() Info {
	return Info{Name: "data-loss", Strikes: []string{"flush", "delete-keys"},
		Description: "FLUSHALL a node, or DEL named keys on it (an operator's or another application's mistake): lock keys and fencing counters vanish"}
}

func (dataLoss) reset() {}

func (dataLoss) setup(context.Context, *exec) error { return nil }

func (dataLoss) generate(rng *rand.Rand, _ Config, t Topology) []Step {
	return []Step{{Action: "flush", Targets: []string{t.randomNodeOrMaster(rng.IntN)}}}
}

func (dataLoss) do(ctx context.Context, e *exec, s Step) error {
	nodes, err := e.targetNodes(s.Targets)
	if err != nil {
		return err
	}
	switch s.Action {
	case "flush":
		return e.record("flush", serverNames(nodes), func() (string, error) {
			return "FLUSHALL", onEach(ctx, nodes, func(ctx context.Context, n *cluster.Server, cl *redis.Client) error {
				return cl.Do(ctx, "flushall").Err()
			})
		})
	case "delete":
		keys := splitList(s.Params["keys"])
		if len(keys) == 0 {
			return fmt.Errorf("delete: no keys (Params keys=k1,k2)")
		}
		return e.record("delete-keys", serverNames(nodes), func() (string, error) {
			var deleted int64
			err := onEach(ctx, nodes, func(ctx context.Context, n *cluster.Server, cl *redis.Client) error {
				args := []any{"del"}
				for _, k := range keys {
					args = append(args, k)
				}
				d, err := cl.Do(ctx, args...).Int64()
				deleted += d
				return err
			})
			return fmt.Sprintf("DEL %s: %d deleted", strings.Join(keys, " "), deleted), err
		})
	}
	return fmt.Errorf("unknown action %q (want flush or delete)", s.Action)
}

// adminTimeout bounds one administrative command a nemesis sends a node
// directly (not through any client's link).
const adminTimeout = 2 * time.Second

// onEach runs fn on a direct connection to each node, and joins the errors,
// each naming its node.
func onEach(ctx context.Context, nodes []*cluster.Server, fn func(context.Context, *cluster.Server, *redis.Client) error) error {
	var errs []error
	for _, n := range nodes {
		cl := cluster.NewRedisClient(n.Addr(), cluster.ClientOptions{Timeout: adminTimeout, PoolSize: 1})
		if err := fn(ctx, n, cl); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", n.Name, err))
		}
		_ = cl.Close()
	}
	return errors.Join(errs...)
}

func splitList(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}
