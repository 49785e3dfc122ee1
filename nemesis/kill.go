package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/lockharness/lockharness/sut"
)

// kill crashes nodes with SIGKILL and restarts them on the same port and
// directory, optionally after a delay (antirez's "delayed restart": a node
// that stays down longer than the longest lock TTL cannot bring back a lock
// it forgot). What the node remembers depends on its persistence: nothing
// with none, up to a second of writes with aof-everysec, every
// acknowledged write with aof-always.
type kill struct{}

// killKinds: how a report draws a node down, from its kill to its restart.
var killKinds = []faultKind{
	{Name: "kill", Label: "node down", Colour: "#8c564b", StartedBy: []string{"kill"}, EndedBy: []string{"restart"}},
}

func (kill) Info() Info {
	return Info{Name: "kill", Kinds: killKinds, Strikes: []string{"kill"}, Needs: sut.Needs{Capabilities: []sut.Capability{sut.CanKill}}, Description: "SIGKILL a node and restart it on the same port (persistence none, aof-everysec or aof-always; optional restart delay)"}
}

func (kill) Reset() {}

func (kill) Setup(ctx context.Context, e *Exec) error {
	d, err := e.deployment()
	if err != nil {
		return err
	}
	p := e.cfg.Persistence
	if p == "" {
		return nil
	}
	ps, ok := d.(sut.Persister)
	if !ok || !d.Capabilities().Has(sut.CanSetPersistence) {
		return &sut.UnsupportedError{Capability: sut.CanSetPersistence, Need: "the kill nemesis with persistence " + p}
	}
	if p != ps.Persistence() {
		return ps.SetPersistence(ctx, p)
	}
	return nil
}

func (kill) Generate(rng *rand.Rand, cfg Config, t Topology) []Step {
	target := t.randomNodeOrMaster(rng.IntN)
	return []Step{
		{Action: "kill", Targets: []string{target}},
		{At: cfg.RestartDelay, Action: "restart", Targets: []string{target}},
	}
}

// persistence is the deployment's persistence mode, for the history.
func persistence(d sut.Deployment) string {
	if ps, ok := d.(sut.Persister); ok {
		return ps.Persistence()
	}
	return "unknown"
}

func (kill) Do(ctx context.Context, e *Exec, s Step) error {
	d, err := e.deployment()
	if err != nil {
		return err
	}
	switch s.Action {
	case "kill":
		nodes, err := e.targetNodes(s.Targets)
		if err != nil {
			return err
		}
		killers, err := capable[sut.Killer](nodes, sut.CanKill)
		if err != nil {
			return err
		}
		return e.record("kill", event{fault: "kill"}, nodeNames(nodes), func() (string, error) {
			var errs []error
			for _, k := range killers {
				errs = append(errs, k.Kill(ctx))
			}
			return "SIGKILL, persistence " + persistence(d), errors.Join(errs...)
		})
	case "restart":
		var nodes []sut.Node
		if len(s.Targets) == 0 || isRole(s.Targets) {
			for _, n := range lockNodes(d) {
				if k, err := sut.As[sut.Killer](n, sut.CanKill); err == nil && !k.Running() {
					nodes = append(nodes, n)
				}
			}
		} else if nodes, err = e.nodes(s.Targets); err != nil {
			return err
		}
		killers, err := capable[sut.Killer](nodes, sut.CanKill)
		if err != nil {
			return err
		}
		if r, ok := d.(sut.Replication); ok && d.Capabilities().Has(sut.CanElect) {
			// Come back in the role Sentinel has given it meanwhile.
			if m, err := r.Elected(ctx); err == nil {
				_ = r.SetPrimary(m)
			}
		}
		return e.record("restart", event{ends: []string{"kill"}}, nodeNames(nodes), func() (string, error) {
			var errs []error
			for _, k := range killers {
				if k.Running() {
					continue
				}
				errs = append(errs, k.Start(ctx))
			}
			return fmt.Sprintf("persistence %s", persistence(d)), errors.Join(errs...)
		})
	}
	return fmt.Errorf("unknown action %q (want kill or restart)", s.Action)
}
