package run

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/lockharness/lockharness/workloads"
)

// progress prints the live progress line until stop is done.
func (r *runner) progress(ctx, stop context.Context, wl *workloads.Mutex, start time.Time) <-chan struct{} {
	done := make(chan struct{})
	w := r.cfg.Progress
	if w == nil {
		close(done)
		return done
	}
	every := time.Second
	if !r.cfg.ProgressTTY {
		every = 5 * time.Second
	}
	total := r.cfg.TimeLimit + r.cfg.Recovery
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		var lastOps int64
		last := start
		line := func() {
			ok, fail, info := wl.Stats.OK.Load(), wl.Stats.Fail.Load(), wl.Stats.Info.Load()
			now := time.Now()
			rate := float64(ok+fail+info-lastOps) / now.Sub(last).Seconds()
			lastOps, last = ok+fail+info, now
			s := fmt.Sprintf("%5.1fs / %.0fs  %7.0f ops/s  ok %d  fail %d  info %d",
				now.Sub(start).Seconds(), total.Seconds(), rate, ok, fail, info)
			if r.cfg.ProgressTTY {
				fmt.Fprintf(w, "\r%-78s", s)
			} else {
				fmt.Fprintln(w, strings.TrimSpace(s))
			}
		}
		for {
			select {
			case <-stop.Done():
				if r.cfg.ProgressTTY {
					line()
					fmt.Fprintln(w)
				}
				return
			case <-ctx.Done():
				return
			case <-t.C:
				line()
			}
		}
	}()
	return done
}
