package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/lockharness/lockharness/sut"
)

// nativePartition cuts nodes off from each other inside the deployment's
// own network (sut.NodePartitioner: iptables in the containers' network
// namespaces), beneath the harness's proxies. The clients still reach every
// node; only the nodes and sentinels lose each other. That is the partition
// of Jepsen's nodes, which the partition nemesis's client links cannot
// express: a node that its clients reach and its replicas and sentinels do
// not (Sentinel's split brain), or, behind a proxy that would hold the
// bytes, packets that are dropped, handshakes included.
//
// A step's Targets are one side (node names or "master"); every other
// member, lock nodes and sentinels, is the other side. Its events are those
// of the partition nemesis (start-partition, stop-partition, fault
// "partition"), with "native" in the detail.
type nativePartition struct{}

func (nativePartition) Info() Info {
	return Info{Name: "native-partition", Kinds: partitionKinds, Strikes: []string{"start-partition"},
		Needs:       sut.Needs{Capabilities: []sut.Capability{sut.CanPartitionNodes}},
		Description: "cuts nodes off from each other inside the deployment's own network (iptables in each container, Docker backend), beneath the harness's proxies: isolate a node, or halves; clients still reach every node"}
}

func (nativePartition) Reset() {}

func (nativePartition) Setup(context.Context, *Exec) error { return nil }

// nativePatterns are the patterns the native partition draws from: one
// side against everyone else.
var nativePatterns = []string{PatternIsolate, PatternHalves}

func (nativePartition) Generate(rng *rand.Rand, cfg Config, t Topology) []Step {
	patterns := nativePatterns
	if len(cfg.PartitionPatterns) > 0 {
		var allowed []string
		for _, p := range cfg.PartitionPatterns {
			if slices.Contains(nativePatterns, p) {
				allowed = append(allowed, p)
			}
		}
		if len(allowed) > 0 {
			patterns = allowed
		}
	}
	pat := patterns[rng.IntN(len(patterns))]
	side := nativeSide(rng, t, pat)
	return []Step{
		{Action: "start", Targets: side, Params: map[string]string{"pattern": pat}},
		{At: cfg.Interval, Action: "stop", Params: map[string]string{"pattern": pat}},
	}
}

// nativeSide draws the side a pattern cuts off from every other member:
// one node (isolate), or half the lock nodes (halves); in a replicated
// topology isolate takes the master half the time.
func nativeSide(rng *rand.Rand, t Topology, pat string) []string {
	if pat == PatternHalves && len(t.Nodes) >= 2 {
		nodes := pick(rng.IntN, t.Nodes, len(t.Nodes))
		side := nodes[:len(nodes)/2]
		slices.Sort(side)
		return side
	}
	return []string{t.randomNodeOrMaster(rng.IntN)}
}

// sidePairs are the pairs a native partition cuts: each member of side
// against each member not in it.
func sidePairs(side, members []string) [][2]string {
	var out [][2]string
	for _, a := range side {
		for _, b := range members {
			if !slices.Contains(side, b) {
				out = append(out, [2]string{a, b})
			}
		}
	}
	return out
}

func (nativePartition) Do(ctx context.Context, e *Exec, s Step) error {
	d, err := e.deployment()
	if err != nil {
		return err
	}
	p, ok := d.(sut.NodePartitioner)
	if !ok || !d.Capabilities().Has(sut.CanPartitionNodes) {
		ue := &sut.UnsupportedError{Capability: sut.CanPartitionNodes, Need: "the native-partition nemesis"}
		if h, ok := d.(sut.Hinter); ok {
			ue.Hint = h.Hint(sut.CanPartitionNodes)
		}
		return ue
	}
	var members []string
	for _, m := range d.Members() {
		members = append(members, m.Name())
	}
	switch s.Action {
	case "start":
		targets := s.Targets
		if len(targets) == 0 {
			targets = nativeSide(e.rng, e.topo, s.Params["pattern"])
		}
		ns, err := e.nodes(targets)
		if err != nil {
			return err
		}
		side := nodeNames(ns)
		var rest []string
		for _, m := range members {
			if !slices.Contains(side, m) {
				rest = append(rest, m)
			}
		}
		if len(rest) == 0 {
			return fmt.Errorf("native partition: %v is every member, nothing to cut it from", side)
		}
		detail := fmt.Sprintf("native (iptables in the containers): %s | %s; clients reach every node",
			strings.Join(side, "+"), strings.Join(rest, "+"))
		if pat := s.Params["pattern"]; pat != "" {
			detail = pat + ", " + detail
		}
		return e.record("start-partition", event{fault: "partition"}, side, func() (string, error) {
			return detail, p.PartitionNodes(ctx, sidePairs(side, members))
		})
	case "stop":
		cut := p.PartitionedNodes()
		return e.record("stop-partition", event{ends: []string{"partition"}}, cut, func() (string, error) {
			return "native: every member reaches every other", p.HealNodes(ctx)
		})
	}
	return fmt.Errorf("unknown action %q (want start or stop)", s.Action)
}
