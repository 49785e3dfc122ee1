package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/lockharness/lockharness/sut"
)

// dataLoss destroys data on a node the way an operator or another
// application does: FLUSHALL (everything, lock keys and fencing counters
// included), or DEL of named keys. The process, its links and its clock are
// untouched, so nothing in the lock can notice; a lock key that vanishes
// is free for the next client at once (redisson#3829: keys lost on a shard
// switch). There is nothing to heal: lost data stays lost.
type dataLoss struct{}

func (dataLoss) Info() Info {
	return Info{Name: "data-loss", Strikes: []string{"flush", "delete-keys"},
		Needs:       sut.Needs{Capabilities: []sut.Capability{sut.CanCommand}},
		Description: "FLUSHALL a node, or DEL named keys on it (an operator's or another application's mistake): lock keys and fencing counters vanish"}
}

func (dataLoss) Reset() {}

func (dataLoss) Setup(context.Context, *Exec) error { return nil }

func (dataLoss) Generate(rng *rand.Rand, _ Config, t Topology) []Step {
	return []Step{{Action: "flush", Targets: []string{t.randomNodeOrMaster(rng.IntN)}}}
}

func (dataLoss) Do(ctx context.Context, e *Exec, s Step) error {
	nodes, err := e.targetNodes(s.Targets)
	if err != nil {
		return err
	}
	cmds, err := capable[sut.Commander](nodes, sut.CanCommand)
	if err != nil {
		return err
	}
	// Data loss is a moment, not a state: nothing ends it.
	switch s.Action {
	case "flush":
		return e.record("flush", mark, nodeNames(nodes), func() (string, error) {
			var errs []error
			for _, c := range cmds {
				_, err := c.Command(ctx, "flushall")
				errs = append(errs, err)
			}
			return "FLUSHALL", errors.Join(errs...)
		})
	case "delete":
		keys := splitList(s.Params["keys"])
		if len(keys) == 0 {
			return fmt.Errorf("delete: no keys (Params keys=k1,k2)")
		}
		return e.record("delete-keys", mark, nodeNames(nodes), func() (string, error) {
			var deleted int64
			var errs []error
			for _, c := range cmds {
				out, err := c.Command(ctx, append([]string{"del"}, keys...)...)
				if err == nil {
					var n int64
					n, err = strconv.ParseInt(out, 10, 64)
					deleted += n
				}
				errs = append(errs, err)
			}
			return fmt.Sprintf("DEL %s: %d deleted", strings.Join(keys, " "), deleted), errors.Join(errs...)
		})
	}
	return fmt.Errorf("unknown action %q (want flush or delete)", s.Action)
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
