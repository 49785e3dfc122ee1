package nemesis_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/nemesis"
	"github.com/lockharness/lockharness/sut"
	redisbackend "github.com/lockharness/lockharness/sut/redis"
)

// The measured effect of lose-replies: a command through the link runs but
// its answer never comes (the client times out, the node counted it); a
// client that retries runs it again once the fault stops, so one INCR
// counts twice.
func TestLoseReplies(t *testing.T) {
	t.Parallel()
	f := start(t, sut.Config{Nodes: 1, Clients: 1}, nemesis.Config{Names: []string{"lose-replies"}}, nil)
	ctx := context.Background()
	n1, _ := f.c.Server("n1")
	direct := client(t, n1, time.Second)
	l, _ := f.c.Link("c0", "n1")
	links := []string{"c0->n1"}

	once := redisbackend.NewRedisClient(l.Addr(), sut.ClientOptions{Timeout: 200 * time.Millisecond, PoolSize: 1})
	t.Cleanup(func() { _ = once.Close() })
	if err := once.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	f.do(t, nemesis.Step{Nemesis: "lose-replies", Action: "start", Targets: links})
	if err := once.Incr(ctx, "ctr").Err(); err == nil {
		t.Fatal("INCR answered although its reply was dropped")
	}
	if n, _ := direct.Get(ctx, "ctr").Int(); n != 1 {
		t.Fatalf("the node counted %d, want 1: the request must be delivered", n)
	}
	f.do(t, nemesis.Step{Nemesis: "lose-replies", Action: "stop", Targets: links})

	retrying := redisbackend.NewRedisClient(l.Addr(), sut.ClientOptions{Timeout: time.Second, PoolSize: 1, MaxRetries: 3})
	t.Cleanup(func() { _ = retrying.Close() })
	if err := retrying.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	f.do(t, nemesis.Step{Nemesis: "lose-replies", Action: "start", Targets: links})
	go func() {
		time.Sleep(300 * time.Millisecond)
		_ = f.r.Do(context.Background(), f.env, nemesis.Step{Nemesis: "lose-replies", Action: "stop", Targets: links})
	}()
	n, err := retrying.Incr(ctx, "ctr").Result()
	if err != nil || n != 3 {
		t.Fatalf("a retried INCR returned %d, %v; want 3 (it ran twice: 1 → 2 → 3)", n, err)
	}
	if op, _ := last(f.rec, "start-lose-replies"); op.Type != history.OK {
		t.Fatalf("start-lose-replies recorded as %+v", op)
	}
}

// With a duration the window stops by itself that long after it began,
// and the history says so.
func TestLoseRepliesForADuration(t *testing.T) {
	t.Parallel()
	f := start(t, sut.Config{Nodes: 1, Clients: 1}, nemesis.Config{Names: []string{"lose-replies"}}, nil)
	l, _ := f.c.Link("c0", "n1")
	f.do(t, nemesis.Step{Nemesis: "lose-replies", Action: "start", Targets: []string{"c0->n1"}, Params: map[string]string{"duration": "300ms"}})
	if op, _ := last(f.rec, "start-lose-replies"); op.Type != history.OK || op.Value.Detail != "replies dropped, requests delivered for 300ms" {
		t.Fatalf("start-lose-replies recorded as %+v", op)
	}
	took := waitFor(t, 5*time.Second, "the window stops by itself", func() bool {
		op, ok := last(f.rec, "stop-lose-replies")
		return ok && op.Type == history.OK
	})
	if took < 250*time.Millisecond {
		t.Fatalf("the window stopped after %v, want about 300ms", took)
	}
	if l.Faulted() {
		t.Fatalf("the link still has %v after the window", l.Faults())
	}
}
