package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/lockharness/lockharness/sut"
)

// kill crashes nodes with SIGKILL and restarts them on the same port and
// directory, optionally after a delay (antirez's "delayed restart": a node
// that stays down longer than the longest lock TTL cannot bring back a lock
// it forgot). What the node remembers depends on its persistence: nothing
// with none, up to a second of writes with aof-everysec, every
// acknowledged write with aof-always.
//
// A kill that awaited a holder holds that holder's release back until the
// restart (its gates): a node that forgot the lock is then back while the
// holder's lease still runs, however long a loaded machine takes to
// restart it (up to 620ms at load 48, more than the 400ms hold of a
// matrix cell), so whether the lock breaks is the schedule's doing.
type kill struct{ gates gates }

// killKinds: how a report draws a node down, from its kill to its restart.
var killKinds = []faultKind{
	{Name: "kill", Label: "node down", Colour: "#8c564b", StartedBy: []string{"kill"}, EndedBy: []string{"restart"}},
}

func (*kill) Info() Info {
	return Info{Name: "kill", Kinds: killKinds, Strikes: []string{"kill"}, Needs: sut.Needs{Capabilities: []sut.Capability{sut.CanKill}}, Description: "SIGKILL a node and restart it on the same port (persistence none, aof-everysec or aof-always; optional restart delay)"}
}

// Reset lets go the releases a kill held back.
func (k *kill) Reset() { k.gates.open() }

func (*kill) Setup(ctx context.Context, e *Exec) error {
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

func (*kill) Generate(rng *rand.Rand, cfg Config, t Topology) []Step {
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

func (k *kill) Do(ctx context.Context, e *Exec, s Step) error {
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
			held := k.holdHolder(e, s)
			var errs []error
			for _, kl := range killers {
				errs = append(errs, kl.Kill(ctx))
			}
			return "SIGKILL, persistence " + persistence(d) + held, errors.Join(errs...)
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
			for _, kl := range killers {
				if kl.Running() {
					continue
				}
				errs = append(errs, kl.Start(ctx))
			}
			k.gates.open() // the node answers again: the held release goes out
			return fmt.Sprintf("persistence %s", persistence(d)), errors.Join(errs...)
		})
	}
	return fmt.Errorf("unknown action %q (want kill or restart)", s.Action)
}

// holdHolder holds back the release of the holder step s awaited, if any,
// until the restart (or the fault interval, if no restart comes), and
// says so for the kill's detail.
func (k *kill) holdHolder(e *Exec, s Step) string {
	p, ok := holderOf(s)
	if !ok {
		return ""
	}
	rh, ok := e.env.Clients.(ReleaseHolder)
	if !ok {
		return ""
	}
	let, ok := rh.HoldRelease(p, time.Now().Add(e.cfg.Interval))
	if !ok {
		return fmt.Sprintf("; process %v had left its critical section", p)
	}
	k.gates.add(let)
	return fmt.Sprintf("; process %v's release held until the restart", p)
}
