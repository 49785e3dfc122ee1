package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/lockharness/lockharness/sut"
)

// latency slows links down: every byte waits latency ± jitter.
type latency struct{}

// latencyKinds: how a report draws slow links; "delay", coloured alike,
// is the name the report has always known that shade by too.
var latencyKinds = []faultKind{
	{Name: "latency", Colour: "#1f77b4", StartedBy: []string{"start-latency"}, EndedBy: []string{"stop-latency"}},
	{Name: "delay", Colour: "#1f77b4"},
}

func (latency) Info() Info {
	return Info{Name: "latency", Kinds: latencyKinds, Strikes: []string{"start-latency"}, Needs: sut.Needs{Capabilities: []sut.Capability{sut.CanSlowLinks}}, Description: "adds delay and jitter to every link of a node (a slow node or a congested network path)"}
}

func (latency) Reset() {}

func (latency) Setup(context.Context, *Exec) error { return nil }

func (latency) Generate(rng *rand.Rand, cfg Config, t Topology) []Step {
	node := t.randomNode(rng.IntN)
	targets := linkNames(t.nodeLinks(node))
	params := map[string]string{"latency": cfg.Latency.String(), "jitter": cfg.Jitter.String()}
	return []Step{
		{Action: "start", Targets: targets, Params: params},
		{At: cfg.Interval, Action: "stop", Targets: targets},
	}
}

func (latency) Do(ctx context.Context, e *Exec, s Step) error {
	d, err := e.deployment()
	if err != nil {
		return err
	}
	net := d.Network()
	targets := s.Targets
	switch s.Action {
	case "start":
		if len(targets) == 0 {
			targets = linkNames(e.topo.nodeLinks(e.topo.randomNode(e.rng.IntN)))
		}
		lat, err := durParam(s.Params, "latency", e.cfg.Latency)
		if err != nil {
			return err
		}
		jit, err := durParam(s.Params, "jitter", e.cfg.Jitter)
		if err != nil {
			return err
		}
		links, err := resolveLinks(net, targets)
		if err != nil {
			return err
		}
		return e.record("start-latency", event{fault: "latency"}, targets, func() (string, error) {
			var errs []error
			for _, l := range links {
				if err := l.Unslow(ctx); err != nil {
					errs = append(errs, err)
					continue
				}
				errs = append(errs, l.Slow(lat, jit))
			}
			return fmt.Sprintf("latency %v ± %v", lat, jit), errors.Join(errs...)
		})
	case "stop":
		if len(targets) == 0 {
			for _, l := range net.Links() {
				targets = append(targets, l.Name())
			}
		}
		links, err := resolveLinks(net, targets)
		if err != nil {
			return err
		}
		return e.record("stop-latency", event{ends: []string{"latency"}}, targets, func() (string, error) {
			var errs []error
			for _, l := range links {
				errs = append(errs, l.Unslow(ctx))
			}
			return "", errors.Join(errs...)
		})
	}
	return fmt.Errorf("unknown action %q (want start or stop)", s.Action)
}
