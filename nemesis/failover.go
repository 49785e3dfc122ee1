package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/lockharness/lockharness/sut"
)

// failover moves the master of a replicated topology.
//
// Manual (sut.FailoverManual): freeze one replica's replication link,
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

// failoverKinds: how a report draws a failover's stages. A manual one cuts
// the replication link, promotes the replica (which ends the cut) and
// demotes the old master; a Sentinel one pauses or isolates the master,
// awaits the promotion (a mark) and heals the master. "failover" is the
// name the report has always coloured like a promotion.
var failoverKinds = []faultKind{
	{Name: "replication cut", StartedBy: []string{"cut-replication"}, EndedBy: []string{"promote"}},
	{Name: "promote", Colour: "#17becf", StartedBy: []string{"promote"}, EndedBy: []string{"demote"}, Marks: []string{"await-promotion"}},
	{Name: "failover", Colour: "#17becf"},
	{Name: "master paused", StartedBy: []string{"pause-master"}, EndedBy: []string{"heal-master"}},
	{Name: "master isolated", StartedBy: []string{"isolate-master"}, EndedBy: []string{"heal-master"}},
}

func (*failover) Info() Info {
	return Info{Name: "failover", Kinds: failoverKinds, Strikes: []string{"promote", "await-promotion"}, Needs: sut.Needs{Replicated: true}, Description: "replicated topology: manual (freeze a replica's replication link, promote it, move clients, demote the old master) or Sentinel (pause or isolate the master, let Sentinel promote)"}
}

func (f *failover) Reset() { *f = failover{} }

// setup checks what the layout's kind of failover needs beyond a master
// with replicas (Setup has checked that): promoting by hand and cutting a
// replication link, or an elected master and pausing or isolating it.
func (*failover) Setup(_ context.Context, e *Exec) error {
	d, _, err := e.replication()
	if err != nil {
		return err
	}
	needs := sut.Needs{Capabilities: []sut.Capability{sut.CanPromote, sut.CanCutLinks}}
	if d.Layout().Elected {
		needs.Capabilities = []sut.Capability{sut.CanElect}
		switch e.cfg.SentinelFault {
		case "pause":
			needs.Capabilities = append(needs.Capabilities, sut.CanPause)
		case "isolate":
			needs.Capabilities = append(needs.Capabilities, sut.CanCutLinks)
		default:
			needs.Capabilities = append(needs.Capabilities, sut.CanPause, sut.CanCutLinks)
		}
	}
	return sut.Check(d, "the failover nemesis", needs)
}

func (*failover) Generate(rng *rand.Rand, cfg Config, t Topology) []Step {
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

// do runs one step: cut, promote and demote for a manual failover, start
// and stop for Sentinel's.
func (f *failover) Do(ctx context.Context, e *Exec, s Step) error {
	d, r, err := e.replication()
	if err != nil {
		return err
	}
	switch s.Action {
	case "cut":
		return f.cut(e, s, d, r)
	case "promote":
		return f.promote(ctx, e, s, d, r)
	case "demote":
		return f.demote(ctx, e, s, r)
	case "start":
		return f.failMaster(ctx, e, s, d, r)
	case "stop":
		return f.healMaster(ctx, e, d, r)
	}
	return fmt.Errorf("unknown action %q (manual: cut, promote, demote; sentinel: start, stop)", s.Action)
}

// cut freezes the replication link of the replica the step names (or the
// one its pick draws) from the master: what the master acknowledges from
// now on never reaches that replica.
func (f *failover) cut(e *Exec, s Step, d sut.Deployment, r sut.Replication) error {
	m := r.Primary()
	rs := sut.Replicas(d)
	if len(rs) == 0 {
		return fmt.Errorf("no replica to promote")
	}
	var rep string
	if len(s.Targets) == 1 && !isRole(s.Targets) {
		n, err := d.Node(s.Targets[0])
		if err != nil {
			return err
		}
		rep = n.Name()
	} else {
		k, _ := strconv.Atoi(s.Params["pick"])
		rep = rs[k%len(rs)]
	}
	l, err := d.Network().Link(rep, m)
	if err != nil {
		return err
	}
	f.cutLink, f.replica, f.oldMaster = l.Name(), rep, m
	return e.record("cut-replication", event{fault: "replication cut"}, []string{l.Name()}, func() (string, error) {
		return fmt.Sprintf("%s stops receiving %s's writes", rep, m), l.Cut()
	})
}

// promote makes a replica the master (the one the step names, else the
// one cut froze, else the first) and moves the clients and the other
// replicas to it. The old master is left as it is, a second master: the
// split brain the demote ends.
func (f *failover) promote(ctx context.Context, e *Exec, s Step, d sut.Deployment, r sut.Replication) error {
	rep := f.replica
	if len(s.Targets) == 1 && !isRole(s.Targets) {
		rep = s.Targets[0]
	}
	if rep == "" {
		rs := sut.Replicas(d)
		if len(rs) == 0 {
			return fmt.Errorf("no replica to promote")
		}
		rep = rs[0]
	}
	old := r.Primary()
	f.oldMaster, f.replica = old, rep
	// The frozen link is dropped when the replica is promoted.
	return e.record("promote", event{fault: "promote", ends: []string{"replication cut"}}, []string{rep}, func() (string, error) {
		if err := r.Promote(ctx, rep); err != nil {
			return "", err
		}
		if err := r.SetPrimary(rep); err != nil {
			return "", err
		}
		var errs []error
		for _, o := range sut.Replicas(d) {
			if o != old {
				errs = append(errs, r.Follow(ctx, o, rep))
			}
		}
		if f.cutLink != "" {
			// The frozen link led to the old master; it is not used
			// any more, and must not stay cut for a later failover.
			if ls, err := resolveLinks(d.Network(), []string{f.cutLink}); err == nil {
				errs = append(errs, ls[0].Uncut(ctx))
			}
			f.cutLink = ""
		}
		return fmt.Sprintf("REPLICAOF NO ONE; clients moved from %s", old), errors.Join(errs...)
	})
}

// demote makes the old master (the one the step names, else the one
// promote replaced) follow the master: the end of the split brain.
func (f *failover) demote(ctx context.Context, e *Exec, s Step, r sut.Replication) error {
	old := f.oldMaster
	if len(s.Targets) == 1 && !isRole(s.Targets) {
		old = s.Targets[0]
	}
	m := r.Primary()
	// Demoting the old master ends the split brain that promoting a
	// replica began, whichever node each names.
	ev := event{ends: []string{"promote"}}
	if old == "" || old == m {
		return e.record("demote", ev, nil, func() (string, error) {
			return "", fmt.Errorf("%w: no old master to demote", ErrNotDone)
		})
	}
	return e.record("demote", ev, []string{old}, func() (string, error) {
		if err := r.Follow(ctx, old, m); err != nil {
			return "", err
		}
		f.oldMaster = ""
		return "follows " + m, nil
	})
}

// failMaster pauses or isolates (Params "how") the master Sentinel names,
// then waits for Sentinel to promote a replica, as a mark of its own: the
// history shows how long the clients were without a master.
func (f *failover) failMaster(ctx context.Context, e *Exec, s Step, d sut.Deployment, r sut.Replication) error {
	how := s.Params["how"]
	if how == "" {
		how = "pause"
	}
	if sm, err := r.Elected(ctx); err == nil {
		if err := r.SetPrimary(sm); err != nil {
			return err
		}
	}
	m := r.Primary()
	mn, err := d.Node(m)
	if err != nil {
		return err
	}
	f.oldMaster, f.how = m, how
	err = e.record(how+"-master", event{fault: "master " + pastTense(how)}, []string{m}, func() (string, error) {
		return strikeMaster(ctx, e, d.Network(), how, mn, m)
	})
	if err != nil {
		return err
	}
	return e.record("await-promotion", mark, nil, func() (string, error) {
		return awaitPromotion(ctx, r, m)
	})
}

// strikeMaster pauses master m (node mn) or cuts every link to and from it.
func strikeMaster(ctx context.Context, e *Exec, net sut.Network, how string, mn sut.Node, m string) (string, error) {
	switch how {
	case "pause":
		p, err := sut.As[sut.Pauser](mn, sut.CanPause)
		if err != nil {
			return "", err
		}
		return "SIGSTOP", p.Pause(ctx)
	case "isolate":
		ls, err := resolveLinks(net, linkNames(e.topo.nodeLinks(m)))
		if err != nil {
			return "", err
		}
		var errs []error
		for _, l := range ls {
			if !l.IsCut() {
				errs = append(errs, l.Cut())
			}
		}
		return "every link to and from it blackholed", errors.Join(errs...)
	}
	return "", fmt.Errorf("unknown failover fault %q (want pause or isolate)", how)
}

// awaitPromotion polls Sentinel until it names a master other than m (and
// takes it as the master), 15 seconds at most.
func awaitPromotion(ctx context.Context, r sut.Replication, m string) (string, error) {
	t0 := time.Now()
	for {
		sm, err := r.Elected(ctx)
		if err == nil && sm != m {
			return fmt.Sprintf("sentinels name %s after %v", sm, time.Since(t0).Round(time.Millisecond)), r.SetPrimary(sm)
		}
		if time.Since(t0) > 15*time.Second {
			return "", fmt.Errorf("sentinels still name %s after %v", m, time.Since(t0).Round(time.Millisecond))
		}
		if err := sleep(ctx, 20*time.Millisecond); err != nil {
			return "", err
		}
	}
}

// healMaster brings back the master failMaster struck and waits for
// Sentinel to demote it.
func (f *failover) healMaster(ctx context.Context, e *Exec, d sut.Deployment, r sut.Replication) error {
	old := f.oldMaster
	ev := event{ends: []string{"master paused", "master isolated"}}
	if old == "" {
		return e.record("heal-master", ev, nil, func() (string, error) {
			return "", fmt.Errorf("%w: no master was failed", ErrNotDone)
		})
	}
	n, err := d.Node(old)
	if err != nil {
		return err
	}
	return e.record("heal-master", ev, []string{old}, func() (string, error) {
		if err := f.unstrikeMaster(ctx, e, d.Network(), n, old); err != nil {
			return "", err
		}
		f.oldMaster = ""
		return awaitDemotion(ctx, r, old)
	})
}

// unstrikeMaster undoes what strikeMaster did to old (node n): its links
// uncut, or the process resumed.
func (f *failover) unstrikeMaster(ctx context.Context, e *Exec, net sut.Network, n sut.Node, old string) error {
	switch f.how {
	case "isolate":
		ls, err := resolveLinks(net, linkNames(e.topo.nodeLinks(old)))
		if err != nil {
			return err
		}
		var errs []error
		for _, l := range ls {
			errs = append(errs, l.Uncut(ctx))
		}
		return errors.Join(errs...)
	default:
		p, err := sut.As[sut.Pauser](n, sut.CanPause)
		if err != nil {
			return err
		}
		return p.Resume(ctx)
	}
}

// awaitDemotion polls old until it reports itself a replica, 15 seconds at
// most: Sentinel demotes a returning master at its next look at it.
func awaitDemotion(ctx context.Context, r sut.Replication, old string) (string, error) {
	t0 := time.Now()
	for {
		ri, err := r.Role(ctx, old)
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
}

// pastTense names what a Sentinel failover did to the master.
func pastTense(how string) string {
	switch how {
	case "pause":
		return "paused"
	case "isolate":
		return "isolated"
	}
	return how
}
