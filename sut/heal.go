package sut

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// The replication roles a node reports (RoleInfo.Role), in Redis's words.
const (
	RoleMaster  = "master"
	RoleReplica = "slave"
)

// HealAll brings any deployment back to normal through the seam, whatever
// broke it: every link healed, paused members resumed, dead members
// started (in the role an elected master leaves them), clocks set back to
// real time and confirmed, then, when replicated, one master followed by
// every other node (HealReplication). It returns what it did, for the
// history, or "nothing to heal". A backend's Heal may be just this.
func HealAll(ctx context.Context, d Deployment) (string, error) {
	var h healing
	h.links(ctx, d)
	h.partitionedNodes(ctx, d)
	members := d.Members()
	h.resume(ctx, members)
	followElected(ctx, d)
	h.restart(ctx, members)
	h.clocks(ctx, members)
	h.oneMaster(ctx, d)
	if len(h.did) == 0 {
		h.did = append(h.did, "nothing to heal")
	}
	return strings.Join(h.did, ", "), errors.Join(h.errs...)
}

// healing is what HealAll did, for the history, and what failed, in the
// order of its steps.
type healing struct {
	did  []string
	errs []error
}

// links heals every link, and counts those that had a fault.
func (h *healing) links(ctx context.Context, d Deployment) {
	healed := 0
	for _, l := range d.Network().Links() {
		if Faulted(l) {
			healed++
		}
		l.Heal(ctx)
	}
	if healed > 0 {
		h.did = append(h.did, fmt.Sprintf("healed %d links", healed))
	}
}

// partitionedNodes rejoins the nodes a deployment that partitions its own
// nodes has cut off.
func (h *healing) partitionedNodes(ctx context.Context, d Deployment) {
	p, ok := nodePartitioner(d)
	if !ok {
		return
	}
	if cut := p.PartitionedNodes(); len(cut) > 0 {
		if err := p.HealNodes(ctx); err != nil {
			h.errs = append(h.errs, err)
		} else {
			h.did = append(h.did, "rejoined "+strings.Join(cut, ", "))
		}
	}
}

// resume resumes the paused members.
func (h *healing) resume(ctx context.Context, members []Node) {
	for _, n := range members {
		if p, err := As[Pauser](n, CanPause); err == nil && p.Paused() {
			if err := p.Resume(ctx); err != nil {
				h.errs = append(h.errs, err)
				continue
			}
			h.did = append(h.did, "resumed "+n.Name())
		}
	}
}

// followElected takes the master the failure detector elected as the
// master, so that a restarted node comes back in the role it gave it.
func followElected(ctx context.Context, d Deployment) {
	if r, ok := replication(d); ok && d.Capabilities().Has(CanElect) {
		if m, err := r.Elected(ctx); err == nil {
			_ = r.SetPrimary(m)
		}
	}
}

// restart starts the members that are not running.
func (h *healing) restart(ctx context.Context, members []Node) {
	for _, n := range members {
		if k, err := As[Killer](n, CanKill); err == nil && !k.Running() {
			if err := k.Start(ctx); err != nil {
				h.errs = append(h.errs, err)
				continue
			}
			h.did = append(h.did, "restarted "+n.Name())
		}
	}
}

// clocks sets the lock nodes' clocks back to real time, and confirms each
// clock, reset or not.
func (h *healing) clocks(ctx context.Context, members []Node) {
	for _, n := range members {
		c, err := As[Clocked](n, CanSetClock)
		if err != nil || n.Kind() != KindLock {
			continue
		}
		if !c.Clock().Real() {
			if err := c.SetClock(0, 1); err != nil {
				h.errs = append(h.errs, err)
				continue
			}
			h.did = append(h.did, "reset clock of "+n.Name())
		}
		if _, err := c.ConfirmClock(ctx, 100*time.Millisecond, 5*time.Second); err != nil {
			h.errs = append(h.errs, err)
		}
	}
}

// oneMaster makes a replicated deployment one master followed by every
// other node (HealReplication).
func (h *healing) oneMaster(ctx context.Context, d Deployment) {
	if _, ok := replication(d); !ok {
		return
	}
	s, err := HealReplication(ctx, d)
	if s != "" {
		h.did = append(h.did, s)
	}
	if err != nil {
		h.errs = append(h.errs, err)
	}
}

// CheckHealthy reports, through the seam, what a nemesis left broken on
// d: a link with a fault, a member not running or paused, a clock not on
// real time, a replicated deployment without one master (the one the
// harness and the failure detector take as master) followed by every
// other node. A backend's Healthy may be just this.
func CheckHealthy(ctx context.Context, d Deployment) error {
	var errs []error
	for _, l := range d.Network().Links() {
		if Faulted(l) {
			errs = append(errs, fmt.Errorf("link %s still has toxics %v", l.Name(), l.Faults()))
		}
	}
	if p, ok := nodePartitioner(d); ok {
		if cut := p.PartitionedNodes(); len(cut) > 0 {
			errs = append(errs, fmt.Errorf("%s still cut off from other nodes", strings.Join(cut, ", ")))
		}
	}
	for _, n := range d.Members() {
		if k, err := As[Killer](n, CanKill); err == nil && !k.Running() {
			errs = append(errs, fmt.Errorf("%s is not running", n.Name()))
		}
		if p, err := As[Pauser](n, CanPause); err == nil && p.Paused() {
			errs = append(errs, fmt.Errorf("%s is paused", n.Name()))
		}
	}
	for _, n := range d.Members() {
		c, err := As[Clocked](n, CanSetClock)
		if err != nil || n.Kind() != KindLock {
			continue
		}
		if !c.Clock().Real() {
			errs = append(errs, fmt.Errorf("%s clock is %v", n.Name(), c.Clock()))
		}
		if skew, err := c.ConfirmClock(ctx, 100*time.Millisecond, time.Second); err != nil {
			errs = append(errs, fmt.Errorf("%s clock reads %v: %w", n.Name(), skew, err))
		}
	}
	if r, ok := replication(d); ok {
		m := r.Primary()
		if ri, err := r.Role(ctx, m); err != nil || ri.Role != RoleMaster {
			errs = append(errs, fmt.Errorf("master %s: %+v %v", m, ri, err))
		}
		for _, rep := range Replicas(d) {
			ri, err := r.Role(ctx, rep)
			if err != nil || ri.Role != RoleReplica || !ri.LinkUp || !follows(r, rep, m, ri.MasterAddr) {
				errs = append(errs, fmt.Errorf("replica %s does not follow %s: %+v %v", rep, m, ri, err))
			}
		}
		if d.Capabilities().Has(CanElect) {
			if sm, err := r.Elected(ctx); err != nil || sm != m {
				errs = append(errs, fmt.Errorf("sentinels say master %q (%v), harness %s", sm, err, m))
			}
		}
	}
	return errors.Join(errs...)
}

// nodePartitioner is d's NodePartitioner when d can partition its nodes.
func nodePartitioner(d Deployment) (NodePartitioner, bool) {
	p, ok := d.(NodePartitioner)
	return p, ok && d.Capabilities().Has(CanPartitionNodes)
}

// replication is d's Replication when d is replicated.
func replication(d Deployment) (Replication, bool) {
	r, ok := d.(Replication)
	return r, ok && d.Layout().Replicated
}

// Primary is the master of a replicated deployment now, or "" when it is
// not replicated.
func Primary(d Deployment) string {
	if r, ok := replication(d); ok {
		return r.Primary()
	}
	return ""
}

// Replicas are the lock nodes of a replicated deployment other than its
// master now, in name order; none when it is not replicated.
func Replicas(d Deployment) []string {
	r, ok := replication(d)
	if !ok {
		return nil
	}
	m := r.Primary()
	var out []string
	for _, n := range d.Layout().Nodes {
		if n != m {
			out = append(out, n)
		}
	}
	return out
}

// HealReplication leaves one master, the one the harness (or, with an
// elected master, the failure detector) takes as master, and every other
// node a replica of it with its link up. It returns what it did.
func HealReplication(ctx context.Context, d Deployment) (string, error) {
	r, ok := replication(d)
	if !ok {
		return "", fmt.Errorf("heal replication: %w: the deployment is not replicated", ErrUnsupported)
	}
	elected := d.Capabilities().Has(CanElect)
	var did []string
	if elected {
		// Sentinel demotes a returning old master by itself, but only at its
		// next INFO round (up to 10 s); wait a little, then do what it would.
		m, err := waitElected(ctx, r, 10*time.Second)
		if err != nil {
			return "", err
		}
		if err := r.SetPrimary(m); err != nil {
			return "", err
		}
	}
	m := r.Primary()
	ri, err := r.Role(ctx, m)
	if err != nil {
		return "", err
	}
	if ri.Role != RoleMaster {
		if err := r.Promote(ctx, m); err != nil {
			return "", err
		}
		did = append(did, "promoted "+m)
	}
	deadline := time.Now().Add(5 * time.Second)
	if elected {
		deadline = time.Now().Add(12 * time.Second)
	}
	for _, rep := range Replicas(d) {
		for {
			ri, err := r.Role(ctx, rep)
			if err == nil && ri.Role == RoleReplica && follows(r, rep, m, ri.MasterAddr) {
				break
			}
			if time.Now().After(deadline) || !elected {
				if err := r.Follow(ctx, rep, m); err != nil {
					return strings.Join(did, ", "), err
				}
				did = append(did, fmt.Sprintf("%s follows %s", rep, m))
				break
			}
			if err := sleep(ctx, 50*time.Millisecond); err != nil {
				return strings.Join(did, ", "), err
			}
		}
	}
	if err := waitLinksUp(ctx, d, r, 10*time.Second); err != nil {
		return strings.Join(did, ", "), err
	}
	did = append(did, "master "+m)
	return strings.Join(did, ", "), nil
}

// follows reports whether replica follows primary through the link the
// deployment uses for that (its own, or the primary's shared one): the
// address the replica reports dialing is that link's.
func follows(r Replication, replica, primary, addr string) bool {
	l, err := r.ReplicationLink(replica, primary)
	return err == nil && l.Addr() == addr
}

func waitElected(ctx context.Context, r Replication, timeout time.Duration) (string, error) {
	deadline := time.Now().Add(timeout)
	for {
		m, err := r.Elected(ctx)
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

func waitLinksUp(ctx context.Context, d Deployment, r Replication, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for _, rep := range Replicas(d) {
		for {
			ri, err := r.Role(ctx, rep)
			if err == nil && ri.Role == RoleReplica && ri.LinkUp {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s: replication link not up after %v (%+v, %v)", rep, timeout, ri, err)
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
