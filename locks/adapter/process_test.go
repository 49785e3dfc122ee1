package adapter_test

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/locks/adapter"
	"github.com/lockharness/lockharness/sut"
)

// startShipped starts one client of a shipped adapter over slot's nodes.
func startShipped(t *testing.T, name string, nodes func(int) []sut.ClientNode, slot int) locks.Lock {
	t.Helper()
	l, err := adapter.Factory(shipped(t, name))(nodes(slot), locks.Options{TTL: time.Second, Dir: t.TempDir(), Client: int64(slot)})
	if err != nil {
		t.Fatal(err)
	}
	pid := l.(pider).PID()
	t.Cleanup(func() {
		_ = l.(locks.Closer).Close()
		noProcessLeft(t, []int{pid})
	})
	return l
}

// A client pause stops the adapter's process: nothing it does happens
// until it continues (a request meanwhile times out, unknown), and then it
// goes on answering.
func TestStopPausesTheAdapter(t *testing.T) {
	nodes := redisNodes(t)
	l := startShipped(t, "redis-py", nodes, 0)
	pr := l.(locks.Process)
	if err := pr.Stop(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	_, err := l.Acquire(ctx, "paused", locks.AcquireOptions{})
	cancel()
	if locks.Outcome(err) != history.Info {
		t.Fatalf("acquire by a stopped adapter: %v, want unknown", err)
	}
	if n, _ := nodes(0)[0].Client.Exists(context.Background(), "paused").Result(); n != 0 {
		t.Fatal("a stopped adapter took the lock")
	}
	if err := pr.Continue(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Acquire(context.Background(), "after", locks.AcquireOptions{}); err != nil {
		t.Fatalf("acquire after continue: %v", err)
	}
	if err := pr.Err(); err != nil {
		t.Fatalf("a pause counted as a fault: %v", err)
	}
}

// A client crash kills the adapter's process group at once: it releases
// nothing (its lock stays taken until its lease ends), the crash is not
// the adapter's fault, and every later request is unknown.
func TestKillCrashesTheAdapter(t *testing.T) {
	nodes := redisNodes(t)
	a := startShipped(t, "redis-py", nodes, 0)
	b := startShipped(t, "redis-py", nodes, 1)
	if _, err := a.Acquire(context.Background(), "crash", locks.AcquireOptions{}); err != nil {
		t.Fatal(err)
	}
	pid := a.(pider).PID()
	if err := a.(locks.Process).Kill(); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(-pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("process group %d after Kill: %v, want gone", pid, err)
	}
	if err := a.(locks.Process).Err(); err != nil {
		t.Fatalf("the harness's kill counted as the adapter's fault: %v", err)
	}
	if _, err := b.Acquire(context.Background(), "crash", locks.AcquireOptions{}); !errors.Is(err, locks.ErrNotAcquired) {
		t.Fatalf("the crashed client's lock: %v, want still held", err)
	}
	if err := a.Release(context.Background(), locks.Lease{Key: "crash", Token: "t"}); locks.Outcome(err) != history.Info {
		t.Fatalf("release by a killed adapter: %v, want unknown", err)
	}
}
