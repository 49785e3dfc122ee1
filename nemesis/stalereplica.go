package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"

	"github.com/lockharness/lockharness/sut"
)

// staleReplica detaches one replica from its master while it still looks
// like a healthy replica to Sentinel: it is given replication credentials
// the master refuses (masteruser and masterauth of no user) and its link
// to the master is closed, so it reconnects, fails to authenticate, and
// misses every write from then on, while reporting role:slave and staying
// eligible for promotion. Params "priority" also sets its replica-priority
// (lower is preferred by Sentinel), as an operator who prefers one replica
// for failover would. The other replicas keep replicating, so WAIT 1 still
// returns 1: the acknowledged replica is not the one Sentinel promotes
// (redisson#2669, redis-doc#1864). Under Sentinel every replica follows the
// master through one shared link, so a link fault cannot single one out;
// credentials can. Stop and the final heal clear the credentials and
// restore the priority.
type staleReplica struct {
	// staled are the replicas made stale, with their replica-priority
	// before the fault.
	staled map[string]string
}

// staleReplicaKinds: how a report draws a replica cut off its master's
// writes.
var staleReplicaKinds = []faultKind{{Name: "stale replica"}}

func (*staleReplica) Info() Info {
	return Info{Name: "stale-replica", Kinds: staleReplicaKinds, Strikes: []string{"start-stale-replica"},
		Needs:       sut.Needs{Replicated: true, Capabilities: []sut.Capability{sut.CanCommand}},
		Description: "a replica stops receiving its master's writes (refused replication credentials) yet looks healthy to Sentinel, optionally preferred for promotion"}
}

func (*staleReplica) Reset() {}

func (*staleReplica) Setup(context.Context, *Exec) error { return nil }

func (*staleReplica) Generate(_ *rand.Rand, cfg Config, _ Topology) []Step {
	return []Step{
		{Action: "start", Targets: []string{"replica"}, Params: map[string]string{"priority": "1"}},
		{At: cfg.Interval, Action: "stop", Targets: []string{"replica"}},
	}
}

var staleReplicaEvent = event{fault: "stale replica"}

func (r *staleReplica) Do(ctx context.Context, e *Exec, s Step) error {
	nodes, err := e.targetNodes(s.Targets)
	if err != nil {
		return err
	}
	switch s.Action {
	case "start":
		cmds, err := capable[sut.Commander](nodes, sut.CanCommand)
		if err != nil {
			return err
		}
		prio := s.Params["priority"]
		if r.staled == nil {
			r.staled = map[string]string{}
		}
		return e.record("start-stale-replica", staleReplicaEvent, nodeNames(nodes), func() (string, error) {
			var errs []error
			for i, c := range cmds {
				name := nodes[i].Name()
				if _, ok := r.staled[name]; !ok {
					old, err := configGet(ctx, c, "replica-priority")
					if err != nil {
						errs = append(errs, err)
						continue
					}
					r.staled[name] = old
				}
				errs = append(errs, commands(ctx, c,
					[]string{"config", "set", "masteruser", "lockharness-no-such-user"},
					[]string{"config", "set", "masterauth", "lockharness-refused"}))
				if prio != "" {
					errs = append(errs, commands(ctx, c, []string{"config", "set", "replica-priority", prio}))
				}
				errs = append(errs, commands(ctx, c, []string{"client", "kill", "type", "master"}))
			}
			d := "refused replication credentials; link to the master closed"
			if prio != "" {
				d += "; replica-priority " + prio
			}
			return d, errors.Join(errs...)
		})
	case "stop":
		return e.record("stop-stale-replica", event{ends: []string{staleReplicaEvent.fault}}, nodeNames(nodes), func() (string, error) {
			return r.release(ctx, nodes)
		})
	}
	return fmt.Errorf("unknown action %q (want start or stop)", s.Action)
}

// release gives each stale node its credentials and priority back; a
// replica then catches up on its own.
func (r *staleReplica) release(ctx context.Context, nodes []sut.Node) (string, error) {
	var did []string
	var errs []error
	for _, n := range nodes {
		prio, ok := r.staled[n.Name()]
		if !ok {
			continue
		}
		c, err := sut.As[sut.Commander](n, sut.CanCommand)
		if err == nil {
			err = commands(ctx, c,
				[]string{"config", "set", "masteruser", ""},
				[]string{"config", "set", "masterauth", ""},
				[]string{"config", "set", "replica-priority", prio})
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", n.Name(), err))
			continue
		}
		delete(r.staled, n.Name())
		did = append(did, n.Name())
	}
	if len(did) == 0 {
		return "", errors.Join(errs...)
	}
	return "replication credentials and priority restored on " + strings.Join(did, ", "), errors.Join(errs...)
}

// heal releases every node still stale.
func (r *staleReplica) Heal(ctx context.Context, e *Exec) (string, error) {
	if len(r.staled) == 0 {
		return "", nil
	}
	names := make([]string, 0, len(r.staled))
	for n := range r.staled {
		names = append(names, n)
	}
	sort.Strings(names)
	nodes, err := e.nodes(names)
	if err != nil {
		return "", err
	}
	return r.release(ctx, nodes)
}

// commands sends operator commands in order, stopping at the first error.
func commands(ctx context.Context, c sut.Commander, cmds ...[]string) error {
	for _, args := range cmds {
		if _, err := c.Command(ctx, args...); err != nil {
			return err
		}
	}
	return nil
}
