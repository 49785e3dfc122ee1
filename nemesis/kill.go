package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/lockharness/lockharness/cluster"
	"github.com/lockharness/lockharness/deploy"
)

// kill crashes nodes with SIGKILL and restarts them on the same port and
// directory, optionally after a delay (antirez's "delayed restart": a node
// that stays down longer than the longest lock TTL cannot bring back a lock
// it forgot). What the node remembers depends on its persistence: nothing
// with none, up to a second of writes with aof-everysec, every
// acknowledged write with aof-always.
type kill struct{}

func (kill) info() Info {
	return Info{Name: "kill", Strikes: []string{"kill"}, Needs: deploy.Needs{Capabilities: []deploy.Capability{deploy.CanKill}}, Description: "SIGKILL a node and restart it on the same port (persistence none, aof-everysec or aof-always; optional restart delay)"}
}

func (kill) reset() {}

func (kill) setup(ctx context.Context, e *exec) error {
	c, err := e.cluster()
	if err != nil {
		return err
	}
	if p := e.cfg.Persistence; p != "" && p != c.Config().Persistence {
		return c.SetPersistence(ctx, p)
	}
	return nil
}

func (kill) generate(rng *rand.Rand, cfg Config, t Topology) []Step {
	target := t.randomNodeOrMaster(rng.IntN)
	return []Step{
		{Action: "kill", Targets: []string{target}},
		{At: cfg.RestartDelay, Action: "restart", Targets: []string{target}},
	}
}

func (kill) do(ctx context.Context, e *exec, s Step) error {
	c, err := e.cluster()
	if err != nil {
		return err
	}
	switch s.Action {
	case "kill":
		nodes, err := e.targetNodes(s.Targets)
		if err != nil {
			return err
		}
		return e.record("kill", serverNames(nodes), func() (string, error) {
			var errs []error
			for _, n := range nodes {
				errs = append(errs, n.Kill())
			}
			return "SIGKILL, persistence " + c.Config().Persistence, errors.Join(errs...)
		})
	case "restart":
		var nodes []*cluster.Server
		if len(s.Targets) == 0 || isRole(s.Targets) {
			for _, n := range c.Nodes {
				if !n.Running() {
					nodes = append(nodes, n)
				}
			}
		} else if nodes, err = e.nodes(s.Targets); err != nil {
			return err
		}
		if c.Replicated() && len(c.Sentinels) > 0 {
			// Come back in the role Sentinel has given it meanwhile.
			_, _ = c.RefreshMaster(ctx)
		}
		return e.record("restart", serverNames(nodes), func() (string, error) {
			var errs []error
			for _, n := range nodes {
				if n.Running() {
					continue
				}
				errs = append(errs, n.Start(ctx, true))
			}
			return fmt.Sprintf("persistence %s", c.Config().Persistence), errors.Join(errs...)
		})
	}
	return fmt.Errorf("unknown action %q (want kill or restart)", s.Action)
}
