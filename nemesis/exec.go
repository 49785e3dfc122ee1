package nemesis

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/sut"
)

// ErrNotDone is wrapped by Do's error when a step certainly did not happen
// (nothing to act on: no client holds a lock, no old master to demote). It
// is recorded as fail, not info.
var ErrNotDone = errors.New("not done")

// record runs fn between an invoke and its completion in the history, as
// the nemesis process: ok when fn succeeds, fail when it returns an error
// wrapping ErrNotDone, info otherwise (the fault may be half applied). ev
// says what the event means (the fault it starts, those it ends); fn may
// fill in the completion's detail.
func (e *Exec) record(f string, ev event, targets []string, fn func() (string, error)) error {
	return e.recordV(f, ev.value(targets), func(v *history.Value) error {
		d, err := fn()
		v.Detail = d
		return err
	})
}

// event is what a nemesis event means, in the history's structured fields.
type event struct {
	fault string   // the fault it puts in force
	ends  []string // the faults it ends
}

// mark is an event that is neither the start nor the end of a fault.
var mark = event{}

func (ev event) value(targets []string) *history.Value {
	return &history.Value{Targets: targets, Fault: ev.fault, Ends: ev.ends, Mark: ev.fault == "" && len(ev.ends) == 0}
}

func (e *Exec) recordV(f string, inv *history.Value, fn func(v *history.Value) error) error {
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

func (e *Exec) deployment() (sut.Deployment, error) {
	if e.env.Deployment == nil {
		return nil, fmt.Errorf("no deployment")
	}
	return e.env.Deployment, nil
}

// replication is the deployment's master and replicas, or an error when it
// has none.
func (e *Exec) replication() (sut.Deployment, sut.Replication, error) {
	d, err := e.deployment()
	if err != nil {
		return nil, nil, err
	}
	r, ok := d.(sut.Replication)
	if !ok || !d.Layout().Replicated {
		return nil, nil, fmt.Errorf("needs a replicated topology (a master with replicas): %w", sut.ErrUnsupported)
	}
	return d, r, nil
}

// targetNodes resolves a step's node targets, or picks one node at random
// (from the run's seed) when the step names none.
func (e *Exec) targetNodes(targets []string) ([]sut.Node, error) {
	if len(targets) == 0 {
		targets = []string{e.topo.randomNode(e.rng.IntN)}
	}
	return e.nodes(targets)
}

// nodes resolves node targets: names, or the roles "master" and "replica"
// (the first replica) of a replicated topology.
func (e *Exec) nodes(targets []string) ([]sut.Node, error) {
	d, err := e.deployment()
	if err != nil {
		return nil, err
	}
	var out []sut.Node
	for _, t := range targets {
		name := t
		switch t {
		case "master":
			m := sut.Primary(d)
			if m == "" {
				return nil, fmt.Errorf("target master: topology has no master")
			}
			name = m
		case "replica":
			rs := sut.Replicas(d)
			if len(rs) == 0 {
				return nil, fmt.Errorf("target replica: topology has no replica")
			}
			name = rs[0]
		}
		n, err := d.Node(name)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

// lockNodes are the deployment's lock nodes.
func lockNodes(d sut.Deployment) []sut.Node {
	var out []sut.Node
	for _, n := range d.Members() {
		if n.Kind() == sut.KindLock {
			out = append(out, n)
		}
	}
	return out
}

func nodeNames(ns []sut.Node) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = n.Name()
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

// capable returns each node's implementation of T, the interface behind
// capability c, or the error of the first node that lacks it.
func capable[T any](nodes []sut.Node, c sut.Capability) ([]T, error) {
	out := make([]T, 0, len(nodes))
	for _, n := range nodes {
		t, err := sut.As[T](n, c)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}
