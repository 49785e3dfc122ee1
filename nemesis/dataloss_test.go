package nemesis_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/nemesis"
	"github.com/lockharness/lockharness/sut"
)

// The measured effect of data-loss: a held lock key and a fencing counter
// are gone after the fault, and another client's SET NX succeeds at once.
func TestDataLoss(t *testing.T) {
	t.Parallel()
	f := start(t, sut.Config{Nodes: 1}, nemesis.Config{Names: []string{"data-loss"}}, nil)
	ctx := context.Background()
	n1, _ := f.c.Server("n1")
	cl := client(t, n1, time.Second)
	setLock(t, cl, "lock-0", 30*time.Second)
	if err := cl.Set(ctx, "fence:lock-0", 7, 0).Err(); err != nil {
		t.Fatal(err)
	}
	f.do(t, nemesis.Step{Nemesis: "data-loss", Action: "delete", Targets: []string{"n1"}, Params: map[string]string{"keys": "fence:lock-0"}})
	if exists(t, cl, "fence:lock-0") || !exists(t, cl, "lock-0") {
		t.Fatal("delete removed the wrong keys")
	}
	if n, _ := cl.Incr(ctx, "fence:lock-0").Result(); n != 1 {
		t.Fatalf("the fencing counter restarted at %d, want 1", n)
	}
	op, _ := last(f.rec, "delete-keys")
	if op.Type != history.OK || !strings.Contains(op.Value.Detail, "1 deleted") {
		t.Fatalf("delete-keys recorded as %+v", op)
	}
	f.do(t, nemesis.Step{Nemesis: "data-loss", Action: "flush", Targets: []string{"n1"}})
	if exists(t, cl, "lock-0") {
		t.Fatal("the lock key survived FLUSHALL")
	}
	if ok, err := cl.SetNX(ctx, "lock-0", "other", 30*time.Second).Result(); err != nil || !ok {
		t.Fatalf("another client's SET NX after the flush: %v %v, want granted", ok, err)
	}
	if op, _ := last(f.rec, "flush"); op.Type != history.OK || len(op.Value.Targets) != 1 || op.Value.Targets[0] != "n1" {
		t.Fatalf("flush recorded as %+v", op)
	}
	if err := f.r.Do(ctx, f.env, nemesis.Step{Nemesis: "data-loss", Action: "delete", Targets: []string{"n1"}}); err == nil {
		t.Fatal("delete without keys was accepted")
	}
}

// The measured effect of script-flush: a script the node had cached is
// gone (EVALSHA gets NOSCRIPT), and go-redis's Script.Run still works
// because it falls back to EVAL.
func TestScriptFlush(t *testing.T) {
	t.Parallel()
	f := start(t, sut.Config{Nodes: 1}, nemesis.Config{Names: []string{"script-flush"}}, nil)
	ctx := context.Background()
	n1, _ := f.c.Server("n1")
	cl := client(t, n1, time.Second)
	sha, err := cl.ScriptLoad(ctx, "return 1").Result()
	if err != nil {
		t.Fatal(err)
	}
	f.do(t, nemesis.Step{Nemesis: "script-flush", Action: "flush", Targets: []string{"n1"}})
	err = cl.EvalSha(ctx, sha, nil).Err()
	if err == nil || !strings.HasPrefix(err.Error(), "NOSCRIPT") {
		t.Fatalf("EVALSHA after SCRIPT FLUSH: %v, want NOSCRIPT", err)
	}
	if op, _ := last(f.rec, "script-flush"); op.Type != history.OK {
		t.Fatalf("script-flush recorded as %+v", op)
	}
}
