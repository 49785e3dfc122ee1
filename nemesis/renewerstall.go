package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/lockharness/lockharness/history"
)

// RenewerStaller is the workload's side of renewer-stall: it holds back
// every background renewal a lock makes on its own (a watchdog) for d,
// from now, while the clients themselves go on working. Renewals already
// sent are not affected.
type RenewerStaller interface {
	StallRenewers(d time.Duration)
}

// renewerStall starves the locks' watchdogs, not the clients: the thread
// that renews a lease stops (a starved thread pool, a reconnect, a
// scheduler that runs it late; redisson#5697, #2515) while the holder
// keeps working in its critical section. A lease renewed every TTL/3 then
// runs out after at most a TTL, the holder does not learn it, and another
// client acquires. Its size is a multiple of the lock's TTL: a stall
// shorter than 2/3 of a TTL is absorbed by the renewal period. It heals
// itself when the stall ends.
type renewerStall struct{}

// renewerStallKinds: how a report draws the renewals held back.
var renewerStallKinds = []faultKind{{Name: "renewer stall"}}

func (renewerStall) Info() Info {
	return Info{Name: "renewer-stall", Kinds: renewerStallKinds, Strikes: []string{"stall-renewers"},
		Description: "hold back the locks' watchdog renewals (a starved renewer thread) while the clients keep working"}
}

func (renewerStall) Reset() {}

func (renewerStall) Setup(_ context.Context, e *Exec) error {
	if _, ok := e.env.Clients.(RenewerStaller); !ok {
		return fmt.Errorf("renewer-stall needs a workload that can stall its locks' renewals")
	}
	return nil
}

func (renewerStall) Generate(_ *rand.Rand, cfg Config, _ Topology) []Step {
	return []Step{{Action: "stall", Params: map[string]string{"duration": cfg.ClientPause.String()}}}
}

func (renewerStall) Do(_ context.Context, e *Exec, s Step) error {
	if s.Action != "stall" {
		return fmt.Errorf("unknown action %q (want stall)", s.Action)
	}
	st, ok := e.env.Clients.(RenewerStaller)
	if !ok {
		return fmt.Errorf("no workload that can stall its locks' renewals")
	}
	d, err := durParam(s.Params, "duration", e.cfg.ClientPause)
	if err != nil {
		return err
	}
	if d <= 0 {
		return fmt.Errorf("stall: duration must be positive, got %v", d)
	}
	return e.recordV("stall-renewers", durValue(d, "renewer stall"), func(v *history.Value) error {
		st.StallRenewers(d)
		v.Detail = fmt.Sprintf("every watchdog renewal held back %v; the clients go on", d)
		return nil
	})
}
