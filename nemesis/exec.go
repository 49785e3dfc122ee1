package nemesis

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/lockharness/lockharness/cluster"
	"github.com/lockharness/lockharness/history"
)

// exec is what an action runs with: the environment, the configuration and
// the topology of the schedule.
type exec struct {
	env  Env
	cfg  Config
	topo Topology
	rng  *rand.Rand // for choices a scripted step leaves open; from the seed
}

// ErrNotDone is wrapped by Do's error when a step certainly did not happen
// (nothing to act on: no client holds a lock, no old master to demote). It
// is recorded as fail, not info.
var ErrNotDone = errors.New("not done")

// record runs fn between an invoke and its completion in the history, as
// the nemesis process: ok when fn succeeds, fail when it returns an error
// wrapping ErrNotDone, info otherwise (the fault may be half applied). fn
// may fill in the completion's value (targets it resolved, a detail).
func (e *exec) record(f string, targets []string, fn func() (string, error)) error {
	return e.recordV(f, &history.Value{Targets: targets}, func(v *history.Value) error {
		d, err := fn()
		v.Detail = d
		return err
	})
}

func (e *exec) recordV(f string, inv *history.Value, fn func(v *history.Value) error) error {
	rec := e.env.Recorder
	if rec != nil {
		iv := *inv
		rec.Invoke(history.Nemesis, f, "", &iv)
	}
	v := *inv
	err := fn(&v)
	if rec != nil {
		t := history.OK
		if errors.Is(err, ErrNotDone) {
			t = history.Fail
		} else if err != nil {
			t = history.Info
		}
		rec.Complete(history.Nemesis, t, f, "", &v, err)
	}
	return err
}

func (e *exec) cluster() (*cluster.Cluster, error) {
	if e.env.Cluster == nil {
		return nil, fmt.Errorf("no cluster")
	}
	return e.env.Cluster, nil
}

// targetNodes resolves a step's node targets, or picks one node at random
// (from the run's seed) when the step names none.
func (e *exec) targetNodes(targets []string) ([]*cluster.Server, error) {
	if len(targets) == 0 {
		targets = []string{e.topo.randomNode(e.rng.IntN)}
	}
	return e.nodes(targets)
}

// nodes resolves node targets: names, or the roles "master" and "replica"
// (the first replica) of a replicated topology.
func (e *exec) nodes(targets []string) ([]*cluster.Server, error) {
	c, err := e.cluster()
	if err != nil {
		return nil, err
	}
	var out []*cluster.Server
	for _, t := range targets {
		switch t {
		case "master":
			m := c.Master()
			if m == nil {
				return nil, fmt.Errorf("target master: topology has no master")
			}
			out = append(out, m)
		case "replica":
			rs := c.Replicas()
			if len(rs) == 0 {
				return nil, fmt.Errorf("target replica: topology has no replica")
			}
			out = append(out, rs[0])
		default:
			s, err := c.Node(t)
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		}
	}
	return out, nil
}

func serverNames(ss []*cluster.Server) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.Name
	}
	return out
}

// param reads a duration parameter, with a default.
func durParam(p map[string]string, key string, def time.Duration) (time.Duration, error) {
	v, ok := p[key]
	if !ok || v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("parameter %s=%q: %w", key, v, err)
	}
	return d, nil
}

func floatParam(p map[string]string, key string, def float64) (float64, error) {
	v, ok := p[key]
	if !ok || v == "" {
		return def, nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return 0, fmt.Errorf("parameter %s=%q: %w", key, v, err)
	}
	return f, nil
}

// pick chooses k distinct items of xs at random.
func pick[T any](rngIntN func(int) int, xs []T, k int) []T {
	idx := make([]int, len(xs))
	for i := range idx {
		idx[i] = i
	}
	for i := len(idx) - 1; i > 0; i-- {
		j := rngIntN(i + 1)
		idx[i], idx[j] = idx[j], idx[i]
	}
	if k > len(xs) {
		k = len(xs)
	}
	out := make([]T, 0, k)
	for _, i := range idx[:k] {
		out = append(out, xs[i])
	}
	return out
}
