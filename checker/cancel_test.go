package checker

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// A cancelled check returns Unknown at once, even while porcupine is inside
// a step that takes long: the search runs in its own goroutine.
func TestLinearizabilityCheckReturnsOnCancel(t *testing.T) {
	entered := make(chan struct{}, 1)
	release := make(chan struct{})
	defer close(release)
	model := porcupine.Model{
		Init: func() any { return 0 },
		Step: func(s, in, out any) (bool, any) {
			select {
			case entered <- struct{}{}:
			default:
			}
			<-release // a step that never ends while the test runs
			return true, s
		},
		Equal: func(a, b any) bool { return a == b },
	}
	ops := []porcupine.Operation{{ClientId: 0, Call: 0, Return: 1}, {ClientId: 1, Call: 2, Return: 3}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan linResult, 1)
	go func() { done <- checkLinearizable(ctx, model, ops, time.Hour) }()
	<-entered
	cancel()
	r := <-done // never returns if cancellation waits for porcupine
	if r.res != porcupine.Unknown || !strings.Contains(r.reason, "cancelled") {
		t.Fatalf("got %v %q, want unknown: cancelled", r.res, r.reason)
	}
}
