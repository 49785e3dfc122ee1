package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/lockharness/lockharness/cluster"
	"github.com/lockharness/lockharness/deploy"
)

// failover moves the master of a replicated topology.
//
// Manual (cluster FailoverManual): freeze one replica's replication link,
// promote that replica after a window (REPLICAOF NO ONE), move the clients
// to it, and later demote the old master. Writes acknowledged by the old
// master during the window never reach the new one: a lock granted there
// is lost, every time (a frozen link holds the bytes; pausing the replica
// would not, they are already in its socket buffer).
//
// Sentinel: pause or isolate the master and let Sentinel promote a
// replica; the heal resumes or reconnects the old master and waits for
// Sentinel to demote it.
type failover struct {
	cutLink   string // manual: the frozen replication link
	replica   string // manual: the replica to promote
	oldMaster string // the master before the failover
	how       string // sentinel: pause or isolate
}

func (*failover) info() Info {
	return Info{Name: "failover", Strikes: []string{"promote", "await-promotion"}, Needs: deploy.Needs{Replicated: true}, Description: "replicated topology: manual (freeze a replica's replication link, promote it, move clients, demote the old master) or Sentinel (pause or isolate the master, let Sentinel promote)"}
}

func (f *failover) reset() { *f = failover{} }

func (*failover) setup(_ context.Context, e *exec) error {
	c, err := e.cluster()
	if err != nil {
		return err
	}
	if !c.Replicated() {
		return fmt.Errorf("failover needs a replicated topology (cluster Config.Topology %q)", cluster.Replicated)
	}
	return nil
}

func (*failover) generate(rng *rand.Rand, cfg Config, t Topology) []Step {
	if !t.Sentinel {
		pick := strconv.Itoa(rng.IntN(1 << 16))
		return []Step{
			{Action: "cut", Targets: []string{"replica"}, Params: map[string]string{"pick": pick}},
			{At: cfg.FailoverWindow, Action: "promote"},
			{At: cfg.FailoverWindow + cfg.Interval, Action: "demote"},
		}
	}
	how := cfg.SentinelFault
	if how == "" {
		how = []string{"pause", "isolate"}[rng.IntN(2)]
	}
	return []Step{
		{Action: "start", Targets: []string{"master"}, Params: map[string]string{"how": how}},
		{At: cfg.Interval, Action: "stop", Targets: []string{"master"}},
	}
}

func (f *failover) do(ctx context.Context, e *exec, s Step) error {
	c, err := e.cluster()
	if err != nil {
		return err
	}
	if !c.Replicated() {
		return fmt.Errorf("failover needs a replicated topology")
	}
	switch s.Action {
	case "cut":
		m := c.Master()
		rs := c.Replicas()
		if len(rs) == 0 {
			return fmt.Errorf("no replica to promote")
		}
		var r *cluster.Server
		if len(s.Targets) == 1 && !isRole(s.Targets) {
			if r, err = c.Node(s.Targets[0]); err != nil {
				return err
			}
		} else {
			k, _ := strconv.Atoi(s.Params["pick"])
			r = rs[k%len(rs)]
		}
		l, err := c.Link(r.Name, m.Name)
		if err != nil {
			return err
		}
		f.cutLink, f.replica, f.oldMaster = l.Name, r.Name, m.Name
		return e.record("cut-replication", []string{l.Name}, func() (string, error) {
			return fmt.Sprintf("%s stops receiving %s's writes", r.Name, m.Name), l.Blackhole()
		})
	case "promote":
		r := f.replica
		if len(s.Targets) == 1 && !isRole(s.Targets) {
			r = s.Targets[0]
		}
		if r == "" {
			rs := c.Replicas()
			if len(rs) == 0 {
				return fmt.Errorf("no replica to promote")
			}
			r = rs[0].Name
		}
		old := c.Master().Name
		f.oldMaster, f.replica = old, r
		return e.record("promote", []string{r}, func() (string, error) {
			if err := c.Promote(ctx, r); err != nil {
				return "", err
			}
			if err := c.SetMaster(r); err != nil {
				return "", err
			}
			var errs []error
			for _, o := range c.Replicas() {
				if o.Name != old {
					errs = append(errs, c.Follow(ctx, o.Name, r))
				}
			}
			if f.cutLink != "" {
				// The frozen link led to the old master; it is not used
				// any more, and must not stay cut for a later failover.
				if ls, err := resolveLinks(c, []string{f.cutLink}); err == nil {
					errs = append(errs, ls[0].Unblackhole(ctx))
				}
				f.cutLink = ""
			}
			return fmt.Sprintf("REPLICAOF NO ONE; clients moved from %s", old), errors.Join(errs...)
		})
	case "demote":
		old := f.oldMaster
		if len(s.Targets) == 1 && !isRole(s.Targets) {
			old = s.Targets[0]
		}
		m := c.Master()
		if old == "" || old == m.Name {
			return e.record("demote", nil, func() (string, error) {
				return "", fmt.Errorf("%w: no old master to demote", ErrNotDone)
			})
		}
		return e.record("demote", []string{old}, func() (string, error) {
			if err := c.Follow(ctx, old, m.Name); err != nil {
				return "", err
			}
			f.oldMaster = ""
			return "follows " + m.Name, nil
		})
	case "start":
		how := s.Params["how"]
		if how == "" {
			how = "pause"
		}
		m := c.Master()
		if sm, err := c.SentinelMaster(ctx); err == nil {
			if err := c.SetMaster(sm); err != nil {
				return err
			}
			m = c.Master()
		}
		f.oldMaster, f.how = m.Name, how
		err := e.record(how+"-master", []string{m.Name}, func() (string, error) {
			switch how {
			case "pause":
				return "SIGSTOP", m.Pause()
			case "isolate":
				ls, err := resolveLinks(c, linkNames(e.topo.nodeLinks(m.Name)))
				if err != nil {
					return "", err
				}
				var errs []error
				for _, l := range ls {
					if !l.Blackholed() {
						errs = append(errs, l.Blackhole())
					}
				}
				return "every link to and from it blackholed", errors.Join(errs...)
			}
			return "", fmt.Errorf("unknown failover fault %q (want pause or isolate)", how)
		})
		if err != nil {
			return err
		}
		return e.record("await-promotion", nil, func() (string, error) {
			t0 := time.Now()
			for {
				sm, err := c.SentinelMaster(ctx)
				if err == nil && sm != m.Name {
					return fmt.Sprintf("sentinels name %s after %v", sm, time.Since(t0).Round(time.Millisecond)), c.SetMaster(sm)
				}
				if time.Since(t0) > 15*time.Second {
					return "", fmt.Errorf("sentinels still name %s after %v", m.Name, time.Since(t0).Round(time.Millisecond))
				}
				if err := sleep(ctx, 20*time.Millisecond); err != nil {
					return "", err
				}
			}
		})
	case "stop":
		old := f.oldMaster
		if old == "" {
			return e.record("heal-master", nil, func() (string, error) {
				return "", fmt.Errorf("%w: no master was failed", ErrNotDone)
			})
		}
		n, err := c.Node(old)
		if err != nil {
			return err
		}
		return e.record("heal-master", []string{old}, func() (string, error) {
			var err error
			switch f.how {
			case "isolate":
				ls, lerr := resolveLinks(c, linkNames(e.topo.nodeLinks(old)))
				if lerr != nil {
					return "", lerr
				}
				var errs []error
				for _, l := range ls {
					errs = append(errs, l.Unblackhole(ctx))
				}
				err = errors.Join(errs...)
			default:
				err = n.Resume()
			}
			if err != nil {
				return "", err
			}
			f.oldMaster = ""
			t0 := time.Now()
			// Sentinel demotes the returning master at its next look at it.
			for {
				ri, err := n.Replication(ctx)
				if err == nil && ri.Role == "slave" {
					return fmt.Sprintf("%s demoted by Sentinel after %v", old, time.Since(t0).Round(time.Millisecond)), nil
				}
				if time.Since(t0) > 15*time.Second {
					return "", fmt.Errorf("%s still %s %v after %v", old, ri.Role, err, time.Since(t0).Round(time.Millisecond))
				}
				if err := sleep(ctx, 20*time.Millisecond); err != nil {
					return "", err
				}
			}
		})
	}
	return fmt.Errorf("unknown action %q (manual: cut, promote, demote; sentinel: start, stop)", s.Action)
}
