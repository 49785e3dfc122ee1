package nemesis_test

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/nemesis"
	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/sut/local"
	redisbackend "github.com/lockharness/lockharness/sut/redis"
	"github.com/lockharness/lockharness/sut/redis/redistest"
)

// fixture is a running cluster with a nemesis runner and a recorder.
type fixture struct {
	c   *redisbackend.Cluster
	r   *nemesis.Runner
	env nemesis.Env
	rec *history.Recorder
}

// start brings up a cluster and a runner. Cleanup heals (the final heal),
// asserts that nothing is left broken and that final-heal was recorded,
// then stops the cluster.
func start(t *testing.T, ccfg sut.Config, ncfg nemesis.Config, clients nemesis.Clients) *fixture {
	t.Helper()
	ctx := context.Background()
	c := redistest.Up(t, ccfg)
	r, err := nemesis.New(ncfg)
	if err != nil {
		t.Fatal(err)
	}
	rec := history.NewRecorder(history.NewClock(), io.Discard)
	f := &fixture{c: c, r: r, rec: rec, env: nemesis.Env{Deployment: c, Recorder: rec, Clients: clients}}
	if err := r.Setup(ctx, f.env); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// The final heal works on a cancelled context.
		cctx, cancel := context.WithCancel(context.Background())
		cancel()
		t0 := time.Now()
		if err := r.Heal(cctx, f.env); err != nil {
			t.Errorf("final heal: %v", err)
		}
		t.Logf("final heal took %v", time.Since(t0).Round(time.Millisecond))
		if err := nemesis.Healthy(context.Background(), c); err != nil {
			t.Errorf("after final heal: %v", err)
		}
		if op, ok := last(rec, history.FFinalHeal); !ok || op.Type != history.OK {
			t.Errorf("final-heal not recorded ok: %+v", op)
		}
		// Healing again is harmless.
		if err := r.Heal(cctx, f.env); err != nil {
			t.Errorf("second final heal: %v", err)
		}
		if op, _ := last(rec, history.FFinalHeal); op.Type != history.OK ||
			strings.Contains(op.Value.Detail, "healed") ||
			containsAny(op.Value.Detail, "resumed", "restarted", "reset clock", "promoted", "follows") {
			t.Errorf("second final heal had something to do: %+v", op)
		}
		_ = rec.Close()
	})
	return f
}

func (f *fixture) do(t *testing.T, s nemesis.Step) {
	t.Helper()
	if err := f.r.Do(context.Background(), f.env, s); err != nil {
		t.Fatal(err)
	}
}

// last is the last completion of f in the history.
func last(rec *history.Recorder, f string) (history.Op, bool) {
	ops := rec.Ops()
	for i := len(ops) - 1; i >= 0; i-- {
		if ops[i].F == f && ops[i].Type != history.Invoke {
			return ops[i], true
		}
	}
	return history.Op{}, false
}

// client dials s directly (not through any proxy), closed at cleanup.
func client(t *testing.T, s *local.Server, timeout time.Duration) *redis.Client {
	t.Helper()
	cl := redisbackend.NewRedisClient(s.Addr(), sut.ClientOptions{Timeout: timeout, PoolSize: 1})
	t.Cleanup(func() { _ = cl.Close() })
	return cl
}

// proxied dials addr (a link), closed at cleanup.
func proxied(t *testing.T, addr string, timeout time.Duration) *redis.Client {
	t.Helper()
	cl := redisbackend.NewRedisClient(addr, sut.ClientOptions{Timeout: timeout, PoolSize: 1})
	t.Cleanup(func() { _ = cl.Close() })
	return cl
}

func exists(t *testing.T, cl *redis.Client, key string) bool {
	t.Helper()
	n, err := cl.Exists(context.Background(), key).Result()
	if err != nil {
		t.Fatalf("EXISTS %s: %v", key, err)
	}
	return n == 1
}

func setLock(t *testing.T, cl *redis.Client, key string, ttl time.Duration) {
	t.Helper()
	if err := cl.Do(context.Background(), "set", key, "tok", "px", ttl.Milliseconds(), "nx").Err(); err != nil {
		t.Fatalf("SET %s: %v", key, err)
	}
}

// waitFor polls cond every 5ms until it holds or timeout passes; it returns
// how long it took.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	t0 := time.Now()
	for !cond() {
		if time.Since(t0) > timeout {
			t.Fatalf("%s: not after %v", what, timeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return time.Since(t0)
}

func containsAny(s string, subs ...string) bool {
	for _, x := range subs {
		if strings.Contains(s, x) {
			return true
		}
	}
	return false
}
