package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
)

// fault is one kind of nemesis: its generator, its actions and its heal.
// A fault value belongs to one Runner and may keep state between its
// actions (a strobing clock, the node a failover promoted).
type fault interface {
	info() Info
	// generate draws one fault period from rng: its steps, with At relative
	// to the start of the period. The last step ends the fault.
	generate(rng *rand.Rand, cfg Config, topo Topology) []Step
	// setup checks that the cluster supports the fault and prepares it.
	setup(ctx context.Context, e *exec) error
	// do performs one action and records it.
	do(ctx context.Context, e *exec, s Step) error
	// reset drops the fault's own state before the final heal (stopping
	// background work); the cluster-wide heal does the rest.
	reset()
}

// builtins are the registered nemeses, one file each.
func builtins() []func() fault {
	return []func() fault{
		func() fault { return &partition{} },
		func() fault { return &nativePartition{} },
		func() fault { return &latency{} },
		func() fault { return &clock{} },
		func() fault { return &pause{} },
		func() fault { return &kill{} },
		func() fault { return &failover{} },
		func() fault { return &clientPause{} },
		func() fault { return &clientCrash{} },
		func() fault { return &dataLoss{} },
		func() fault { return &scriptFlush{} },
		func() fault { return &renewerStall{} },
		func() fault { return &memoryPressure{} },
		func() fault { return &loseReplies{} },
		func() fault { return &staleReplica{} },
		func() fault { return clusterFailover{} },
		func() fault { return &killConnection{} },
	}
}

// newRegistry indexes fault constructors by name and rejects duplicates.
func newRegistry(mks []func() fault) (map[string]func() fault, error) {
	reg := make(map[string]func() fault, len(mks))
	for _, mk := range mks {
		name := mk().info().Name
		if _, dup := reg[name]; dup {
			return nil, fmt.Errorf("nemesis %q registered twice", name)
		}
		reg[name] = mk
	}
	return reg, nil
}

func names(reg map[string]func() fault) []string {
	out := make([]string, 0, len(reg))
	for n := range reg {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
