package nemesis_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/nemesis"
	"github.com/lockharness/lockharness/sut"
)

// holderClients is the workload's side of a fault that strikes a holder,
// reduced to what the nemesis asks: one holder, process 2 in slot 2,
// whose release the fault holds back and lets go.
type holderClients struct {
	mu   sync.Mutex
	held bool
	let  chan struct{}
}

func newHolderClients() *holderClients { return &holderClients{let: make(chan struct{})} }

func (h *holderClients) PauseHolder(context.Context, time.Duration, nemesis.PausePoint) (history.Process, bool) {
	return 0, false
}
func (h *holderClients) CrashHolder(context.Context) (history.Process, bool) { return 0, false }
func (h *holderClients) ArmFailpoint(string, time.Duration, bool)            {}
func (h *holderClients) AwaitHolder(context.Context, nemesis.Await) (history.Process, string, bool) {
	return 2, "lock-0", true
}
func (h *holderClients) ClientOf(p history.Process) (int, bool) { return int(p), p == 2 }
func (h *holderClients) HoldRelease(p history.Process, _ time.Time) (func(), bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.held = true
	return sync.OnceFunc(func() { close(h.let) }), p == 2
}

// released reports whether the held release was let go.
func (h *holderClients) released() bool {
	select {
	case <-h.let:
		return true
	default:
		return false
	}
}

// The holder pattern cuts the struck holder's client from every node and
// nothing else, holds its release back until the stop heals the links,
// and leaves its idle connections open through the heal: the held
// release goes out on its pooled connection and reaches the node.
func TestPartitionHolder(t *testing.T) {
	t.Parallel()
	h := newHolderClients()
	f := start(t, sut.Config{Nodes: 2, Clients: 3}, nemesis.Config{Names: []string{"partition"}}, h)
	ctx := context.Background()
	addr := func(from, to string) string {
		l, err := f.c.Link(from, to)
		if err != nil {
			t.Fatal(err)
		}
		return l.Addr()
	}
	idle := proxied(t, addr("c2", "n1"), 200*time.Millisecond)
	if err := idle.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	params := map[string]string{"pattern": nemesis.PatternHolder}
	f.do(t, nemesis.Step{Nemesis: "partition", Action: "start", Params: params}.WithHolder(2))
	op, _ := last(f.rec, "start-partition")
	if got := strings.Join(op.Value.Targets, ","); got != "c2->n1,c2->n2" {
		t.Fatalf("holder pattern cut %s, want c2->n1,c2->n2 (the holder's client, from every node)", got)
	}
	if !h.held || h.released() {
		t.Fatalf("the holder's release: held %v, let go %v; want held until the heal", h.held, h.released())
	}
	if err := proxied(t, addr("c2", "n2"), 200*time.Millisecond).Ping(ctx).Err(); err == nil {
		t.Fatal("c2->n2 answers through the cut")
	}
	if err := proxied(t, addr("c1", "n1"), 200*time.Millisecond).Ping(ctx).Err(); err != nil {
		t.Fatalf("c1->n1 was cut: %v", err)
	}
	f.do(t, nemesis.Step{Nemesis: "partition", Action: "stop", Params: params})
	if !h.released() {
		t.Fatal("the stop did not let the held release go")
	}
	// The first command on the connection idle through the cut succeeds:
	// the heal did not close it (toxiproxy's timeout toxic would have).
	if err := idle.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("the connection idle through the cut, after the heal: %v", err)
	}
}

// The holder pattern without a holder to strike (no workload that can
// hold a release back) refuses, naming what it needs.
func TestPartitionHolderNeedsWorkload(t *testing.T) {
	t.Parallel()
	f := start(t, sut.Config{Nodes: 1, Clients: 2}, nemesis.Config{Names: []string{"partition"}}, nil)
	err := f.r.Do(context.Background(), f.env, nemesis.Step{Nemesis: "partition", Action: "start",
		Params: map[string]string{"pattern": nemesis.PatternHolder}}.WithHolder(1))
	if err == nil || !strings.Contains(err.Error(), "hold a holder's release back") {
		t.Fatalf("holder pattern without a workload: %v", err)
	}
}

// A kill that awaited a holder holds its release back until the restart,
// which lets it go once the node answers again.
func TestKillHoldsReleaseUntilRestart(t *testing.T) {
	t.Parallel()
	h := newHolderClients()
	f := start(t, sut.Config{Nodes: 1, Clients: 3}, nemesis.Config{Names: []string{"kill"}}, h)
	f.do(t, nemesis.Step{Nemesis: "kill", Action: "kill", Targets: []string{"n1"}}.WithHolder(2))
	if !h.held || h.released() {
		t.Fatalf("after the kill, the holder's release: held %v, let go %v; want held", h.held, h.released())
	}
	if op, _ := last(f.rec, "kill"); !strings.Contains(op.Value.Detail, "process 2's release held until the restart") {
		t.Fatalf("kill recorded as %q", op.Value.Detail)
	}
	f.do(t, nemesis.Step{Nemesis: "kill", Action: "restart", Targets: []string{"n1"}})
	if !h.released() {
		t.Fatal("the restart did not let the held release go")
	}
}
