package nemesis

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lockharness/lockharness/cluster"
)

// nothingToHeal is healAll's detail when everything was healthy.
const nothingToHeal = "nothing to heal"

// healAll brings the whole cluster back to normal, whatever broke it:
// links, paused and dead processes, clocks, then the replication topology.
// It returns what it did, for the history.
func healAll(ctx context.Context, c *cluster.Cluster) (string, error) {
	if c == nil {
		return "", fmt.Errorf("heal: no cluster")
	}
	var did []string
	var errs []error
	var healed int
	for _, l := range c.Links() {
		if l.Faulted() {
			healed++
		}
	}
	c.HealLinks(ctx)
	if healed > 0 {
		did = append(did, fmt.Sprintf("healed %d links", healed))
	}
	procs := append(append([]*cluster.Server(nil), c.Nodes...), c.Sentinels...)
	for _, s := range procs {
		if s.Paused() {
			if err := s.Resume(); err != nil {
				errs = append(errs, err)
				continue
			}
			did = append(did, "resumed "+s.Name)
		}
	}
	if c.Replicated() && len(c.Sentinels) > 0 {
		// A restarted node should come back in the role Sentinel gave it.
		_, _ = c.RefreshMaster(ctx)
	}
	for _, s := range procs {
		if !s.Running() {
			if err := s.Restart(ctx); err != nil {
				errs = append(errs, err)
				continue
			}
			did = append(did, "restarted "+s.Name)
		}
	}
	for _, s := range c.Nodes {
		if !s.Faked() {
			continue
		}
		if !s.Clock().Real() {
			if err := s.SetClock(0, 1); err != nil {
				errs = append(errs, err)
				continue
			}
			did = append(did, "reset clock of "+s.Name)
		}
		if _, err := s.ConfirmClock(ctx, 100*time.Millisecond, 5*time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	if c.Replicated() {
		d, err := healReplication(ctx, c)
		if d != "" {
			did = append(did, d)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	if len(did) == 0 {
		did = append(did, nothingToHeal)
	}
	return strings.Join(did, ", "), errors.Join(errs...)
}

// healReplication leaves one master, the one the harness (or, with
// Sentinel, the sentinels) take as master, and every other node a replica
// of it with its link up.
func healReplication(ctx context.Context, c *cluster.Cluster) (string, error) {
	var did []string
	if len(c.Sentinels) > 0 {
		// Sentinel demotes a returning old master by itself, but only at its
		// next INFO round (up to 10 s); wait a little, then do what it would.
		m, err := waitSentinelMaster(ctx, c, 10*time.Second)
		if err != nil {
			return "", err
		}
		if err := c.SetMaster(m); err != nil {
			return "", err
		}
	}
	m := c.Master()
	ri, err := m.Replication(ctx)
	if err != nil {
		return "", err
	}
	if ri.Role != "master" {
		if err := c.Promote(ctx, m.Name); err != nil {
			return "", err
		}
		did = append(did, "promoted "+m.Name)
	}
	deadline := time.Now().Add(5 * time.Second)
	if len(c.Sentinels) > 0 {
		deadline = time.Now().Add(12 * time.Second)
	}
	for _, r := range c.Replicas() {
		for {
			ri, err := r.Replication(ctx)
			if err == nil && ri.Role == "slave" && followsMaster(c, r, m, ri.MasterAddr) {
				break
			}
			if time.Now().After(deadline) || len(c.Sentinels) == 0 {
				if err := c.Follow(ctx, r.Name, m.Name); err != nil {
					return strings.Join(did, ", "), err
				}
				did = append(did, fmt.Sprintf("%s follows %s", r.Name, m.Name))
				break
			}
			if err := sleep(ctx, 50*time.Millisecond); err != nil {
				return strings.Join(did, ", "), err
			}
		}
	}
	if err := waitLinksUp(ctx, c, 10*time.Second); err != nil {
		return strings.Join(did, ", "), err
	}
	did = append(did, "master "+m.Name)
	return strings.Join(did, ", "), nil
}

// followsMaster reports whether replica r replicates from m through the
// link the topology uses for that (its own, or m's announced address).
func followsMaster(c *cluster.Cluster, r, m *cluster.Server, addr string) bool {
	l, err := c.ReplicationLink(r.Name, m.Name)
	return err == nil && l.Addr() == addr
}

func waitSentinelMaster(ctx context.Context, c *cluster.Cluster, timeout time.Duration) (string, error) {
	deadline := time.Now().Add(timeout)
	for {
		m, err := c.SentinelMaster(ctx)
		if err == nil {
			return m, nil
		}
		if time.Now().After(deadline) {
			return "", err
		}
		if err := sleep(ctx, 50*time.Millisecond); err != nil {
			return "", err
		}
	}
}

func waitLinksUp(ctx context.Context, c *cluster.Cluster, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for _, r := range c.Replicas() {
		for {
			ri, err := r.Replication(ctx)
			if err == nil && ri.Role == "slave" && ri.LinkUp {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s: replication link not up after %v (%+v, %v)", r.Name, timeout, ri, err)
			}
			if err := sleep(ctx, 20*time.Millisecond); err != nil {
				return err
			}
		}
	}
	return nil
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// Healthy checks that nothing a nemesis does is left over: no link has a
// toxic, every process runs and none is paused, every faked clock reads
// real time, and a replicated topology has one master (the one the harness
// and the sentinels take as master) followed by every other node.
func Healthy(ctx context.Context, c *cluster.Cluster) error {
	var errs []error
	for _, l := range c.Links() {
		if l.Faulted() {
			errs = append(errs, fmt.Errorf("link %s still has toxics %v", l.Name, l.Toxics()))
		}
	}
	for _, s := range append(append([]*cluster.Server(nil), c.Nodes...), c.Sentinels...) {
		if !s.Running() {
			errs = append(errs, fmt.Errorf("%s is not running", s.Name))
		}
		if s.Paused() {
			errs = append(errs, fmt.Errorf("%s is paused", s.Name))
		}
	}
	for _, s := range c.Nodes {
		if !s.Faked() {
			continue
		}
		if !s.Clock().Real() {
			errs = append(errs, fmt.Errorf("%s clock is %v", s.Name, s.Clock()))
		}
		if skew, err := s.ConfirmClock(ctx, 100*time.Millisecond, time.Second); err != nil {
			errs = append(errs, fmt.Errorf("%s clock reads %v: %w", s.Name, skew, err))
		}
	}
	if c.Replicated() {
		m := c.Master()
		if ri, err := m.Replication(ctx); err != nil || ri.Role != "master" {
			errs = append(errs, fmt.Errorf("master %s: %+v %v", m.Name, ri, err))
		}
		for _, r := range c.Replicas() {
			ri, err := r.Replication(ctx)
			if err != nil || ri.Role != "slave" || !ri.LinkUp || !followsMaster(c, r, m, ri.MasterAddr) {
				errs = append(errs, fmt.Errorf("replica %s does not follow %s: %+v %v", r.Name, m.Name, ri, err))
			}
		}
		if len(c.Sentinels) > 0 {
			if sm, err := c.SentinelMaster(ctx); err != nil || sm != m.Name {
				errs = append(errs, fmt.Errorf("sentinels say master %q (%v), harness %s", sm, err, m.Name))
			}
		}
	}
	return errors.Join(errs...)
}
