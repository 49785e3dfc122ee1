package locks

import (
	"context"
	"testing"
	"time"
)

// An end of the wait (o.Stop closed, ctx cancelled) that comes as the
// acquire settles either cancels the lock's context before settle, which
// then says so, or never does: a lock returned as held is not given up a
// moment later by a cancellation nobody reported. The end is made to race
// settle on every round; the contexts settle called live must still live
// once every end has run.
func TestRueidislockWaitEndRacesSettle(t *testing.T) {
	const rounds = 2000
	var live []context.Context
	for i := range rounds {
		stop := make(chan struct{})
		ctx, cancel := context.WithCancel(context.Background())
		src, settle := waitContext(ctx, AcquireOptions{Wait: time.Hour, Stop: stop})
		if i%2 == 0 {
			close(stop)
		} else {
			cancel()
		}
		ended := settle()
		cancel()
		if ended != (src.Err() != nil) {
			t.Fatalf("round %d: settle reported ended=%v, the lock's context has error %v", i, ended, src.Err())
		}
		if !ended {
			live = append(live, src)
		}
	}
	// The ends' goroutines have nothing left to wait for: give them time
	// to run, then none may have cancelled a context settle called live.
	time.Sleep(200 * time.Millisecond)
	for i, src := range live {
		if src.Err() != nil {
			t.Fatalf("%d of %d settled-live contexts cancelled after settle (the first: #%d)", countDone(live), len(live), i)
		}
	}
	t.Logf("%d of %d rounds settled before the end ran", len(live), rounds)
}

func countDone(cs []context.Context) int {
	n := 0
	for _, c := range cs {
		if c.Err() != nil {
			n++
		}
	}
	return n
}
