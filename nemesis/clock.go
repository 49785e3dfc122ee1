package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/sut"
)

// clock skews one node's clock through its libfaketime control file: a bump
// (a jump forward or back), a strobe (flipping between two offsets), a drift
// (running fast or slow), and reset. Every change is confirmed by reading
// the node's TIME before it is recorded as done.
type clock struct {
	mu      sync.Mutex
	strobes map[string]func() // node -> stop (waits for the strober to exit)
}

// clockKinds: how a report draws a clock set off its time.
var clockKinds = []faultKind{
	{Name: "clock", Colour: "#9467bd", StartedBy: []string{"bump-clock", "drift-clock", "strobe-clock"}, EndedBy: []string{"reset-clock"}},
}

func (*clock) Info() Info {
	return Info{Name: "clock", Kinds: clockKinds, Strikes: []string{"bump-clock", "strobe-clock", "drift-clock"}, Needs: sut.Needs{Capabilities: []sut.Capability{sut.CanSetClock}}, Description: "per node, through libfaketime: bump the clock (± up to minutes), strobe it between two offsets, make it drift (rate ≠ 1), reset; each change confirmed with TIME"}
}

// confirmTolerance is how far a node's TIME may be from the clock it was
// set to and still count as set.
const confirmTolerance = 100 * time.Millisecond

// setup has nothing to prepare: Setup has checked that every lock node's
// clock can be set (sut.CanSetClock).
func (*clock) Setup(context.Context, *Exec) error { return nil }

func (*clock) Generate(rng *rand.Rand, cfg Config, t Topology) []Step {
	node := t.randomNode(rng.IntN)
	// ClockBump is a magnitude (the direction is drawn below); a negative
	// one from a library caller means the same jump, not a panic.
	bump := cfg.ClockBump
	if bump < 0 {
		bump = -bump
	}
	delta := bump/10 + time.Duration(rng.Int64N(int64(bump-bump/10)+1))
	delta = delta.Round(time.Millisecond)
	if rng.IntN(2) == 0 {
		delta = -delta
	}
	var start Step
	switch rng.IntN(3) {
	case 0:
		start = Step{Action: "bump", Targets: []string{node}, Params: map[string]string{"delta": fmtSkew(delta)}}
	case 1:
		start = Step{Action: "strobe", Targets: []string{node}, Params: map[string]string{
			"a": "0s", "b": fmtSkew(delta), "period": cfg.StrobePeriod.String()}}
	default:
		rate := cfg.DriftRate
		if rate == 0 {
			rate = []float64{0.5, 2}[rng.IntN(2)]
		}
		start = Step{Action: "drift", Targets: []string{node}, Params: map[string]string{"rate": strconv.FormatFloat(rate, 'g', -1, 64)}}
	}
	if len(cfg.ClockModes) > 0 && !slices.Contains(cfg.ClockModes, start.Action) {
		start = Step{Action: "bump", Targets: []string{node}, Params: map[string]string{"delta": fmtSkew(delta)}}
	}
	return []Step{start, {At: cfg.Interval, Action: "reset", Targets: []string{node}}}
}

// ClockModes are the clock nemesis's modes, for a configuration to be
// checked against (Config.ClockModes).
func ClockModes() []string { return []string{"bump", "strobe", "drift"} }

func fmtSkew(d time.Duration) string {
	if d >= 0 {
		return "+" + d.String()
	}
	return d.String()
}

// ns is a duration as the history's nanoseconds, for an optional field.
func ns(d time.Duration) *int64 {
	v := int64(d)
	return &v
}

// do runs one step on the nodes it names: bump, drift, strobe or reset.
// Each stops a strobe running on a node before it sets that node's clock.
func (k *clock) Do(ctx context.Context, e *Exec, s Step) error {
	nodes, err := e.targetNodes(s.Targets)
	if err != nil {
		return err
	}
	clocks, err := capable[sut.Clocked](nodes, sut.CanSetClock)
	if err != nil {
		return err
	}
	names := nodeNames(nodes)
	switch s.Action {
	case "bump":
		return k.bump(ctx, e, s, clocks, names)
	case "drift":
		return k.drift(ctx, e, s, clocks, names)
	case "strobe":
		return k.strobe(ctx, e, s, clocks, names)
	case "reset":
		return k.resetClocks(ctx, e, clocks, names)
	}
	return fmt.Errorf("unknown action %q (want bump, strobe, drift or reset)", s.Action)
}

// bump moves each node's clock by Params "delta" from where it is now,
// keeping its rate, and records the offset each node then reads.
func (k *clock) bump(ctx context.Context, e *Exec, s Step, clocks []sut.Clocked, names []string) error {
	delta, err := durParam(s.Params, "delta", e.cfg.ClockBump)
	if err != nil {
		return err
	}
	return e.recordV("bump-clock", event{fault: "clock"}.value(names), func(v *history.Value) error {
		var d []string
		var errs []error
		for i, n := range clocks {
			k.stopStrobe(names[i])
			c := n.Clock()
			if err := n.SetClock(c.SkewAt(time.Now())+delta, c.Rate); err != nil {
				errs = append(errs, err)
				continue
			}
			obs, err := n.ConfirmClock(ctx, confirmTolerance, 5*time.Second)
			errs = append(errs, err)
			d = append(d, fmt.Sprintf("%s %s (reads %s)", names[i], fmtSkew(delta), fmtSkew(obs.Round(time.Millisecond))))
			nc := history.NodeClock{Node: names[i], Delta: ns(delta)}
			if err == nil {
				nc.Offset = ns(obs.Round(time.Millisecond))
			}
			v.Clocks = append(v.Clocks, nc)
		}
		v.Detail = strings.Join(d, ", ")
		return errors.Join(errs...)
	})
}

// drift makes each node's clock run at Params "rate" from where it is now.
func (k *clock) drift(ctx context.Context, e *Exec, s Step, clocks []sut.Clocked, names []string) error {
	rate, err := floatParam(s.Params, "rate", 2)
	if err != nil {
		return err
	}
	return e.recordV("drift-clock", event{fault: "clock"}.value(names), func(v *history.Value) error {
		var errs []error
		for i, n := range clocks {
			k.stopStrobe(names[i])
			if err := n.SetClock(n.Clock().SkewAt(time.Now()), rate); err != nil {
				errs = append(errs, err)
				continue
			}
			_, err := n.ConfirmClock(ctx, confirmTolerance, 5*time.Second)
			errs = append(errs, err)
			v.Clocks = append(v.Clocks, history.NodeClock{Node: names[i], Rate: rate})
		}
		v.Detail = fmt.Sprintf("rate x%g", rate)
		return errors.Join(errs...)
	})
}

// strobe flips each node's clock between offsets Params "a" and "b" every
// "period", in the background until the next step on that node; the far
// offset is set and confirmed first.
func (k *clock) strobe(ctx context.Context, e *Exec, s Step, clocks []sut.Clocked, names []string) error {
	a, err := durParam(s.Params, "a", 0)
	if err != nil {
		return err
	}
	b, err := durParam(s.Params, "b", e.cfg.ClockBump)
	if err != nil {
		return err
	}
	period, err := durParam(s.Params, "period", e.cfg.StrobePeriod)
	if err != nil {
		return err
	}
	return e.recordV("strobe-clock", event{fault: "clock"}.value(names), func(v *history.Value) error {
		var errs []error
		for i, n := range clocks {
			k.stopStrobe(names[i])
			// Confirm the far offset once, then flip in the background.
			if err := n.SetClock(b, 1); err != nil {
				errs = append(errs, err)
				continue
			}
			if _, err := n.ConfirmClock(ctx, confirmTolerance, 5*time.Second); err != nil {
				errs = append(errs, err)
				continue
			}
			k.startStrobe(names[i], n, a, b, period)
			v.Clocks = append(v.Clocks, history.NodeClock{Node: names[i], Strobe: []int64{int64(a), int64(b)}, Period: int64(period)})
		}
		v.Detail = fmt.Sprintf("between %s and %s every %v", fmtSkew(a), fmtSkew(b), period)
		return errors.Join(errs...)
	})
}

// resetClocks sets each node's clock back to real time, and ends the clock
// fault.
func (k *clock) resetClocks(ctx context.Context, e *Exec, clocks []sut.Clocked, names []string) error {
	return e.recordV("reset-clock", event{ends: []string{"clock"}}.value(names), func(v *history.Value) error {
		var errs []error
		for i, n := range clocks {
			k.stopStrobe(names[i])
			if err := n.SetClock(0, 1); err != nil {
				errs = append(errs, err)
				continue
			}
			_, err := n.ConfirmClock(ctx, confirmTolerance, 5*time.Second)
			errs = append(errs, err)
			v.Clocks = append(v.Clocks, history.NodeClock{Node: names[i], Offset: ns(0)})
		}
		return errors.Join(errs...)
	})
}

func (k *clock) startStrobe(name string, n sut.Clocked, a, b, period time.Duration) {
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(period)
		defer t.Stop()
		cur := b
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			if cur == b {
				cur = a
			} else {
				cur = b
			}
			// A failed write leaves the last offset; the reset that ends
			// the strobe rewrites the file anyway.
			_ = n.SetClock(cur, 1)
		}
	}()
	k.mu.Lock()
	if k.strobes == nil {
		k.strobes = map[string]func(){}
	}
	k.strobes[name] = func() { close(stop); <-done }
	k.mu.Unlock()
}

func (k *clock) stopStrobe(node string) {
	k.mu.Lock()
	stop := k.strobes[node]
	delete(k.strobes, node)
	k.mu.Unlock()
	if stop != nil {
		stop()
	}
}

func (k *clock) Reset() {
	k.mu.Lock()
	var nodes []string
	for n := range k.strobes {
		nodes = append(nodes, n)
	}
	k.mu.Unlock()
	for _, n := range nodes {
		k.stopStrobe(n)
	}
}
