package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/sut"
)

// killConnection waits for a client to begin its critical section, then
// has the server end that holder's session (KILL CONNECTION): the server
// rolls back its transaction and frees its locks at once, while the
// client, between two commands, knows nothing and goes on working. It is
// the fault of locks that last as long as a connection (a row held FOR
// UPDATE, GET_LOCK), where an operator's KILL, wait_timeout or a restart
// ends the promise without a word to the holder.
type killConnection struct{}

// killConnectionKinds: how a report draws a killed session, an instant.
var killConnectionKinds = []faultKind{{Name: "kill-connection", Instant: true}}

func (killConnection) Info() Info {
	return Info{Name: "kill-connection", Kinds: killConnectionKinds, Strikes: []string{"kill-connection"},
		Needs:       sut.Needs{Capabilities: []sut.Capability{sut.CanKillConnections}},
		Description: "KILL CONNECTION of the session holding a lock, while its client works in its critical section"}
}

func (killConnection) Reset() {}

func (killConnection) Setup(_ context.Context, e *Exec) error {
	if e.env.Clients == nil {
		return fmt.Errorf("kill-connection needs the workload's Clients, to find a holder")
	}
	return nil
}

func (killConnection) Generate(*rand.Rand, Config, Topology) []Step {
	return []Step{{Action: "holder"}}
}

func (killConnection) Do(ctx context.Context, e *Exec, s Step) error {
	if s.Action != "holder" {
		return fmt.Errorf("unknown action %q (want holder)", s.Action)
	}
	d, err := e.deployment()
	if err != nil {
		return err
	}
	ck, ok := d.(sut.ConnectionKiller)
	if !ok || !d.Capabilities().Has(sut.CanKillConnections) {
		return &sut.UnsupportedError{Capability: sut.CanKillConnections, Need: "the kill-connection nemesis"}
	}
	if e.env.Clients == nil {
		return fmt.Errorf("no Clients to find a holder among")
	}
	return e.recordV("kill-connection", &history.Value{Fault: "kill-connection"}, func(v *history.Value) error {
		wctx, cancel := context.WithTimeout(ctx, e.cfg.Interval)
		p, key, ok := e.env.Clients.AwaitHolder(wctx, Await{})
		cancel()
		if !ok {
			return e.noHolder()
		}
		k, err := ck.KillHolder(ctx, key)
		if errors.Is(err, sut.ErrNoHolder) {
			return fmt.Errorf("%w: %v", ErrNotDone, err)
		}
		if err != nil {
			return err
		}
		v.Targets = []string{"c" + p.String()}
		v.Detail = fmt.Sprintf("KILL CONNECTION %d (held %s; from %s)", k.ID, k.Key, k.From)
		return nil
	})
}
