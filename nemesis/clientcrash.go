package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/lockharness/lockharness/history"
)

// durValue is the value of a client fault lasting d: the fault it puts in
// force on the client it strikes (recorded as a fault of its own until the
// final heal, since the client's own events say when it ended).
func durValue(d time.Duration, fault string) *history.Value {
	return &history.Value{Duration: int64(d), Fault: fault}
}

// clientCrash makes a client that holds a lock die without releasing it (it
// is replaced by a new process), or arms a failpoint so the next client
// reaching it dies there. A lock without expiry stays taken forever.
type clientCrash struct{}

// clientCrashKinds: how a report draws a client's crash, an instant.
var clientCrashKinds = []faultKind{{Name: "crash-client", Instant: true}}

func (clientCrash) Info() Info {
	return Info{Name: "client-crash", Kinds: clientCrashKinds, StrikesClient: history.FCrash, Description: "a client dies holding its lock and is replaced by a new process (or dies at a lock's named failpoint)"}
}

func (clientCrash) Reset() {}

func (clientCrash) Setup(_ context.Context, e *Exec) error {
	if e.env.Clients == nil {
		return fmt.Errorf("client-crash needs the workload's Clients")
	}
	return nil
}

func (clientCrash) Generate(rng *rand.Rand, cfg Config, _ Topology) []Step {
	if len(cfg.Failpoints) > 0 && rng.IntN(2) == 0 {
		fp := cfg.Failpoints[rng.IntN(len(cfg.Failpoints))]
		return []Step{{Action: "failpoint", Params: map[string]string{"failpoint": fp}}}
	}
	return []Step{{Action: "holder"}}
}

func (clientCrash) Do(ctx context.Context, e *Exec, s Step) error {
	if e.env.Clients == nil {
		return fmt.Errorf("no Clients to crash")
	}
	switch s.Action {
	case "holder":
		return e.recordV("crash-client", &history.Value{Fault: "crash-client"}, func(v *history.Value) error {
			wctx, cancel := context.WithTimeout(ctx, e.cfg.Interval)
			defer cancel()
			p, ok := e.env.Clients.CrashHolder(wctx)
			if !ok {
				return e.noHolder()
			}
			v.Targets = []string{"c" + p.String()}
			v.Detail = "holder crashed without releasing"
			return nil
		})
	case "failpoint":
		fp := s.Params["failpoint"]
		if fp == "" {
			return fmt.Errorf("failpoint: no failpoint name")
		}
		return e.recordV("crash-client", &history.Value{Fault: "crash-client"}, func(v *history.Value) error {
			e.env.Clients.ArmFailpoint(fp, 0, true)
			v.Detail = "armed failpoint " + fp + ": next client there crashes"
			return nil
		})
	}
	return fmt.Errorf("unknown action %q (want holder or failpoint)", s.Action)
}
