package workloads_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/workloads"
)

// fpWatchdogRenew is the failpoint watchdogLock's renewer reaches before
// each renewal.
const fpWatchdogRenew = "before-watchdog-renew"

// watchdogLock is the token lock with a watchdog of its own, as a user's
// lock may have one: a goroutine that, from the grant until the release,
// renews the lease every TTL/3 and reaches a failpoint before each
// renewal, on its own thread (locks.RenewerContext), reporting each
// renewal through Options.OnRenew.
type watchdogLock struct {
	locks.Renewer
	opts locks.Options
	mu   sync.Mutex
	stop map[string]func()
}

func newWatchdogLock(nodes []sut.ClientNode, opts locks.Options) (locks.Lock, error) {
	info, err := locks.Builtin().Lookup("token")
	if err != nil {
		return nil, err
	}
	inner, err := info.New(nodes, opts)
	if err != nil {
		return nil, err
	}
	return &watchdogLock{Renewer: inner.(locks.Renewer), opts: opts, stop: map[string]func(){}}, nil
}

func (l *watchdogLock) Acquire(ctx context.Context, key string, o locks.AcquireOptions) (locks.Lease, error) {
	lease, err := l.Renewer.Acquire(ctx, key, o)
	if err != nil {
		return lease, err
	}
	wctx, cancel := context.WithCancel(locks.RenewerContext(context.Background()))
	done := make(chan struct{})
	go l.watchdog(wctx, lease, done)
	l.mu.Lock()
	l.stop[key] = func() { cancel(); <-done }
	l.mu.Unlock()
	return lease, nil
}

func (l *watchdogLock) watchdog(ctx context.Context, lease locks.Lease, done chan struct{}) {
	defer close(done)
	t := time.NewTicker(l.opts.TTL / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if l.opts.Failpoint != nil {
			_ = l.opts.Failpoint(ctx, fpWatchdogRenew)
		}
		if ctx.Err() != nil {
			return
		}
		report := l.opts.OnRenew(lease.Key)
		next, err := l.Renewer.Renew(ctx, lease)
		report(next, err)
		if err != nil {
			return
		}
		lease = next
	}
}

func (l *watchdogLock) Release(ctx context.Context, lease locks.Lease) error {
	l.stopWatchdog(lease.Key)
	return l.Renewer.Release(ctx, lease)
}

func (l *watchdogLock) stopWatchdog(key string) {
	l.mu.Lock()
	stop := l.stop[key]
	delete(l.stop, key)
	l.mu.Unlock()
	if stop != nil {
		stop()
	}
}

func (l *watchdogLock) Close() error {
	l.mu.Lock()
	keys := make([]string, 0, len(l.stop))
	for k := range l.stop {
		keys = append(keys, k)
	}
	l.mu.Unlock()
	for _, k := range keys {
		l.stopWatchdog(k)
	}
	return nil
}

// A failpoint that fires on a watchdog's thread pauses that thread, not
// its client: it is recorded as a pause of a renewer thread owned by the
// client, so that the client's own pause at the same time (here one in
// every critical section, 300ms, while the watchdog's 300ms pause at its
// first renewal, 100ms after the grant, is under way) does not make the
// history unusable, and the checkers judge the run (it was: 3 of 3 runs
// of such a lock unknown, "pause invoked while its pause was
// outstanding").
func TestFailpointPauseOnAWatchdogIsTheWatchdogs(t *testing.T) {
	info := locks.Info{Name: "watchdog-token", Failpoints: []string{fpWatchdogRenew}, New: newWatchdogLock}
	m, rec, stop := startInfo(t, info, workloads.Config{Clients: 1, TTL: 300 * time.Millisecond,
		ClientPause: 300 * time.Millisecond, ClientPauseRate: 1})
	m.ArmFailpoint(fpWatchdogRenew, 300*time.Millisecond, false)
	time.Sleep(1200 * time.Millisecond)
	m.ArmFailpoint(fpWatchdogRenew, 300*time.Millisecond, false)
	time.Sleep(1200 * time.Millisecond)
	stop()
	ops := rec.Ops()
	watchdogPauses := 0
	for _, op := range ops {
		if op.F != history.FPause || op.Type != history.Invoke || op.Value == nil || op.Value.Detail != "failpoint "+fpWatchdogRenew {
			continue
		}
		watchdogPauses++
		if op.Owner == nil || *op.Owner != 0 || op.Process < workloads.RenewerBase {
			t.Fatalf("a watchdog's failpoint pause recorded as its client's: %v", op)
		}
	}
	if watchdogPauses != 2 {
		t.Fatalf("%d watchdog pauses recorded, want the 2 armed", watchdogPauses)
	}
	r, err := checker.Check(context.Background(), history.Events(ops), checker.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range r.Checkers {
		if v.Verdict != checker.Valid {
			t.Errorf("%s: %s: %s", name, v.Verdict, v.Reason)
		}
	}
}
