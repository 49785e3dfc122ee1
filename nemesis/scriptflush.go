package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/lockharness/lockharness/sut"
)

// scriptFlush empties a node's Lua script cache with SCRIPT FLUSH, as a
// restart or a failover to a replica that never ran the scripts does: the
// next EVALSHA of a lock's cached script gets NOSCRIPT (nestjs-redis#15,
// redlock-rb#27). A lock that sends EVALSHA and falls back to EVAL on
// NOSCRIPT (go-redis's Script.Run) recovers at once; one that only sends
// EVALSHA fails every scripted operation until it loads its scripts again.
// The keys are untouched. There is nothing to heal: scripts are loaded
// again by whoever needs them.
type scriptFlush struct{}

func (scriptFlush) Info() Info {
	return Info{Name: "script-flush", Strikes: []string{"script-flush"},
		Needs:       sut.Needs{Capabilities: []sut.Capability{sut.CanCommand}},
		Description: "SCRIPT FLUSH a node: cached Lua scripts are forgotten, as after a restart or failover (EVALSHA gets NOSCRIPT)"}
}

func (scriptFlush) Reset() {}

func (scriptFlush) Setup(context.Context, *Exec) error { return nil }

func (scriptFlush) Generate(rng *rand.Rand, _ Config, t Topology) []Step {
	return []Step{{Action: "flush", Targets: []string{t.randomNodeOrMaster(rng.IntN)}}}
}

func (scriptFlush) Do(ctx context.Context, e *Exec, s Step) error {
	if s.Action != "flush" {
		return fmt.Errorf("unknown action %q (want flush)", s.Action)
	}
	nodes, err := e.targetNodes(s.Targets)
	if err != nil {
		return err
	}
	cmds, err := capable[sut.Commander](nodes, sut.CanCommand)
	if err != nil {
		return err
	}
	return e.record("script-flush", mark, nodeNames(nodes), func() (string, error) {
		var errs []error
		for _, c := range cmds {
			_, err := c.Command(ctx, "script", "flush")
			errs = append(errs, err)
		}
		return "SCRIPT FLUSH", errors.Join(errs...)
	})
}
