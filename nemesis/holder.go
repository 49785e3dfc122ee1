package nemesis

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"time"

	"github.com/lockharness/lockharness/history"
)

// ReleaseHolder is the workload's side of a fault that must come before
// the release of the holder it struck, whatever the machine's timing: a
// node's restart before the holder's release (kill), the heal of the
// holder's cut link before its late release (partition, pattern holder).
// Env.Clients may implement it; a fault that needs it and finds it
// missing says so.
type ReleaseHolder interface {
	// HoldRelease makes process p, inside its critical section, wait once
	// its write is done and before it releases until let is called, until
	// passes, or the run ends. False when p is not inside its section.
	HoldRelease(p history.Process, until time.Time) (let func(), ok bool)
	// ClientOf is the client slot process p runs in: its links are
	// c<slot>'s.
	ClientOf(p history.Process) (int, bool)
}

// ParamHolder is the step parameter through which a step that awaited a
// holder hands it to its fault: the holder's process number. Runner.Do
// and a script runner set it after the await; it is never written in a
// schedule (a replay awaits again).
const ParamHolder = "holder"

// WithHolder is s with the holder its await found, for its fault.
func (s Step) WithHolder(p history.Process) Step {
	params := maps.Clone(s.Params)
	if params == nil {
		params = map[string]string{}
	}
	params[ParamHolder] = strconv.Itoa(int(p))
	s.Params = params
	return s
}

// holderOf is the holder step s awaited (ParamHolder), if any.
func holderOf(s Step) (history.Process, bool) {
	v, ok := s.Params[ParamHolder]
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, false
	}
	return history.Process(n), true
}

// releaseHolder is the run's ReleaseHolder, or an error naming the fault
// that needs it.
func (e *Exec) releaseHolder(need string) (ReleaseHolder, error) {
	rh, ok := e.env.Clients.(ReleaseHolder)
	if !ok {
		return nil, fmt.Errorf("%s needs a workload that can hold a holder's release back (nemesis.ReleaseHolder)", need)
	}
	return rh, nil
}

// strikeHolder is the holder step s struck: the one its await found, or,
// for a step that awaited none, the next client to begin its critical
// section within the fault interval (as kill-connection finds one).
func (e *Exec) strikeHolder(ctx context.Context, s Step) (history.Process, error) {
	if p, ok := holderOf(s); ok {
		return p, nil
	}
	if e.env.Clients == nil {
		return 0, fmt.Errorf("no Clients to find a holder among")
	}
	wctx, cancel := context.WithTimeout(ctx, e.cfg.Interval)
	defer cancel()
	p, _, ok := e.env.Clients.AwaitHolder(wctx, Await{})
	if !ok {
		return 0, e.noHolder()
	}
	return p, nil
}

// noHolder is why a fault that waits for a holder did nothing: none came
// within the fault interval.
func (e *Exec) noHolder() error {
	return fmt.Errorf("%w: no client reached its critical section holding a lock within %v", ErrNotDone, e.cfg.Interval)
}

// gates are the releases a fault holds back, each let go by the step that
// ends the fault (or by Reset, at the final heal).
type gates struct{ let []func() }

// add keeps let until open.
func (g *gates) add(let func()) { g.let = append(g.let, let) }

// open lets every held release go.
func (g *gates) open() {
	for _, let := range g.let {
		let()
	}
	g.let = nil
}
