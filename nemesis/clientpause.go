package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/lockharness/lockharness/history"
)

// clientPause stops a client that holds a lock, inside its critical
// section, the way a long GC pause does (Params "at": before-write, the
// default, or after-write); or arms a lock failpoint so the
// next client reaching it pauses there. The workload does the pausing
// (Clients); the nemesis chooses when and records it. A pause aimed at a
// holder waits, up to the fault interval, for a client to reach that point
// holding a lock, so it strikes inside a critical section even when
// clients hold locks only for an instant (--hold 0).
type clientPause struct{}

// clientPauseKinds: how a report draws a paused client.
var clientPauseKinds = []faultKind{{Name: "pause-client", Label: "client pause"}}

func (clientPause) Info() Info {
	return Info{Name: "client-pause", Kinds: clientPauseKinds, StrikesClient: history.FPause, Description: "pause a client while it holds a lock (a GC pause), or at a lock's named failpoint"}
}

func (clientPause) Reset() {}

func (clientPause) Setup(_ context.Context, e *Exec) error {
	if e.env.Clients == nil {
		return fmt.Errorf("client-pause needs the workload's Clients")
	}
	return nil
}

func (clientPause) Generate(rng *rand.Rand, cfg Config, _ Topology) []Step {
	d := cfg.ClientPause.String()
	if len(cfg.Failpoints) > 0 && rng.IntN(2) == 0 {
		fp := cfg.Failpoints[rng.IntN(len(cfg.Failpoints))]
		return []Step{{Action: "failpoint", Params: map[string]string{"failpoint": fp, "duration": d}}}
	}
	return []Step{{Action: "holder", Params: map[string]string{"duration": d}}}
}

func (clientPause) Do(ctx context.Context, e *Exec, s Step) error {
	if e.env.Clients == nil {
		return fmt.Errorf("no Clients to pause")
	}
	d, err := durParam(s.Params, "duration", e.cfg.ClientPause)
	if err != nil {
		return err
	}
	switch s.Action {
	case "holder":
		at, err := ParsePausePoint(s.Params["at"])
		if err != nil {
			return err
		}
		return e.recordV("pause-client", durValue(d, "pause-client"), func(v *history.Value) error {
			wctx, cancel := context.WithTimeout(ctx, e.cfg.Interval)
			defer cancel()
			p, ok := e.env.Clients.PauseHolder(wctx, d, at)
			if !ok {
				return e.noHolder()
			}
			v.Targets = []string{"c" + p.String()}
			v.Detail = fmt.Sprintf("holder paused %v in its critical section (%s)", d, at)
			return nil
		})
	case "failpoint":
		fp := s.Params["failpoint"]
		if fp == "" {
			return fmt.Errorf("failpoint: no failpoint name")
		}
		return e.recordV("pause-client", durValue(d, "pause-client"), func(v *history.Value) error {
			e.env.Clients.ArmFailpoint(fp, d, false)
			v.Detail = fmt.Sprintf("armed failpoint %s: next client there pauses %v", fp, d)
			return nil
		})
	}
	return fmt.Errorf("unknown action %q (want holder or failpoint)", s.Action)
}
