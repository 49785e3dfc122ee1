package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/lockharness/lockharness/sut"
)

// pause stops node processes with SIGSTOP and continues them with SIGCONT.
// A stopped Redis still accepts TCP connections (the kernel does) but
// answers nothing; keys whose TTL ran out meanwhile are gone at once after
// it continues.
type pause struct{}

// pauseKinds: how a report draws a paused node ("pause-node"; "pause" and
// "resume" in histories recorded before).
var pauseKinds = []faultKind{
	{Name: "pause", Label: "node pause", Colour: "#6e6e6e", StartedBy: []string{"pause-node", "pause"}, EndedBy: []string{"resume-node", "resume"}},
}

func (pause) Info() Info {
	return Info{Name: "pause", Kinds: pauseKinds, Strikes: []string{"pause-node"}, Needs: sut.Needs{Capabilities: []sut.Capability{sut.CanPause}}, Description: "SIGSTOP then SIGCONT a node (in a replicated topology often the master)"}
}

func (pause) Reset() {}

func (pause) Setup(context.Context, *Exec) error { return nil }

func (pause) Generate(rng *rand.Rand, cfg Config, t Topology) []Step {
	target := t.randomNodeOrMaster(rng.IntN)
	return []Step{
		{Action: "pause", Targets: []string{target}},
		{At: cfg.PauseDuration, Action: "resume", Targets: []string{target}},
	}
}

func (pause) Do(ctx context.Context, e *Exec, s Step) error {
	d, err := e.deployment()
	if err != nil {
		return err
	}
	switch s.Action {
	case "pause":
		nodes, err := e.targetNodes(s.Targets)
		if err != nil {
			return err
		}
		ps, err := capable[sut.Pauser](nodes, sut.CanPause)
		if err != nil {
			return err
		}
		return e.record("pause-node", event{fault: "pause"}, nodeNames(nodes), func() (string, error) {
			var errs []error
			for _, p := range ps {
				errs = append(errs, p.Pause(ctx))
			}
			return "SIGSTOP", errors.Join(errs...)
		})
	case "resume":
		// Roles may have moved while paused (Sentinel promoted another
		// node), so a role target resumes every paused node.
		var nodes []sut.Node
		if len(s.Targets) == 0 || isRole(s.Targets) {
			for _, n := range lockNodes(d) {
				if p, err := sut.As[sut.Pauser](n, sut.CanPause); err == nil && p.Paused() {
					nodes = append(nodes, n)
				}
			}
		} else if nodes, err = e.nodes(s.Targets); err != nil {
			return err
		}
		ps, err := capable[sut.Pauser](nodes, sut.CanPause)
		if err != nil {
			return err
		}
		return e.record("resume-node", event{ends: []string{"pause"}}, nodeNames(nodes), func() (string, error) {
			var errs []error
			for _, p := range ps {
				errs = append(errs, p.Resume(ctx))
			}
			return "SIGCONT", errors.Join(errs...)
		})
	}
	return fmt.Errorf("unknown action %q (want pause or resume)", s.Action)
}

func isRole(targets []string) bool {
	for _, t := range targets {
		if t == "master" || t == "replica" {
			return true
		}
	}
	return false
}
