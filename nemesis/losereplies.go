package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/lockharness/lockharness/sut"
)

// loseReplies drops the replies on links, not the requests: commands reach
// the node and run, and their answers never arrive (toxiproxy's timeout
// toxic on the downstream only). The client cannot tell a command that ran
// from one that did not: its outcome is unknown, and a client that retries
// it runs it a second time (etcd#22082; go-redis retries 3 times by
// default). When the fault stops the stalled connections are closed, as a
// reset would, and a retrying client sends its command again at once.
// Params "duration" makes the window stop by itself that long after it
// began.
type loseReplies struct{}

// loseRepliesKinds: how a report draws links that lose replies.
var loseRepliesKinds = []faultKind{{Name: "lost replies"}}

func (loseReplies) Info() Info {
	return Info{Name: "lose-replies", Kinds: loseRepliesKinds, Strikes: []string{"start-lose-replies"},
		Needs:       sut.Needs{Capabilities: []sut.Capability{sut.CanDropReplies}},
		Description: "drop the replies on links (commands still run): a write whose answer is lost, and a retry that runs it twice"}
}

func (loseReplies) Reset() {}

func (loseReplies) Setup(context.Context, *Exec) error { return nil }

func (loseReplies) Generate(rng *rand.Rand, cfg Config, t Topology) []Step {
	links := linkNames(t.nodeLinks(t.randomNode(rng.IntN)))
	return []Step{
		{Action: "start", Targets: links},
		{At: cfg.Interval / 5, Action: "stop", Targets: links},
	}
}

var lostRepliesEvent = event{fault: "lost replies"}

// do starts or stops dropping the replies on the links the step names.
func (loseReplies) Do(ctx context.Context, e *Exec, s Step) error {
	d, err := e.deployment()
	if err != nil {
		return err
	}
	if len(s.Targets) == 0 {
		return fmt.Errorf("%s: no links", s.Action)
	}
	links, err := resolveLinks(d.Network(), s.Targets)
	if err != nil {
		return err
	}
	switch s.Action {
	case "start":
		return startLosingReplies(ctx, e, s, links)
	case "stop":
		return stopLosingReplies(ctx, e, s.Targets, links)
	}
	return fmt.Errorf("unknown action %q (want start or stop)", s.Action)
}

// startLosingReplies drops the replies on links (named targets in the
// step). With Params "duration" the window stops by itself that long after
// it began.
func startLosingReplies(ctx context.Context, e *Exec, s Step, links []sut.Link) error {
	dur, err := durParam(s.Params, "duration", 0)
	if err != nil {
		return err
	}
	droppers := make([]sut.ReplyDropper, 0, len(links))
	for _, l := range links {
		rd, ok := l.(sut.ReplyDropper)
		if !ok {
			return &sut.UnsupportedError{Capability: sut.CanDropReplies, Target: l.Name(), Need: "the lose-replies nemesis"}
		}
		droppers = append(droppers, rd)
	}
	err = e.record("start-lose-replies", lostRepliesEvent, s.Targets, func() (string, error) {
		var errs []error
		for _, rd := range droppers {
			errs = append(errs, rd.DropReplies())
		}
		detail := "replies dropped, requests delivered"
		if dur > 0 {
			detail += fmt.Sprintf(" for %v", dur)
		}
		return detail, errors.Join(errs...)
	})
	if err == nil && dur > 0 {
		// A window of its own length, measured from when it began,
		// whenever a scripted step that came before it let it begin.
		// A run that ends first leaves it to the final heal.
		go func() {
			t := time.NewTimer(dur)
			defer t.Stop()
			select {
			case <-ctx.Done():
			case <-t.C:
				_ = stopLosingReplies(ctx, e, s.Targets, links)
			}
		}()
	}
	return err
}

// stopLosingReplies delivers the replies on links (named targets) again:
// the stalled connections are closed, as a reset would.
func stopLosingReplies(ctx context.Context, e *Exec, targets []string, links []sut.Link) error {
	return e.record("stop-lose-replies", event{ends: []string{lostRepliesEvent.fault}}, targets, func() (string, error) {
		var errs []error
		for _, l := range links {
			errs = append(errs, l.Uncut(ctx))
		}
		return "replies delivered again; stalled connections closed", errors.Join(errs...)
	})
}
