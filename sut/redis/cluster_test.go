package redis_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/sut/local"
	redisbackend "github.com/lockharness/lockharness/sut/redis"
	"github.com/lockharness/lockharness/sut/redis/redistest"
)

func TestUpDown(t *testing.T) {
	ctx := context.Background()
	c := redistest.Up(t, sut.Config{Nodes: 3, Clients: 2})
	for cl := 0; cl < 2; cl++ {
		eps := c.Endpoints(cl)
		if len(eps) != 3 {
			t.Fatalf("client %d: %d endpoints, want 3", cl, len(eps))
		}
		for _, ep := range eps {
			if err := redisbackend.Ping(ctx, ep.Addr, time.Second); err != nil {
				t.Fatalf("ping %s via %s: %v", ep.Node, ep.Addr, err)
			}
		}
	}
	if err := redisbackend.Ping(ctx, c.StorageAddr(), time.Second); err != nil {
		t.Fatal(err)
	}
	// A blackholed link times out; after heal a new connection works.
	l, err := c.Link("c0", "n2")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Cut(); err != nil {
		t.Fatal(err)
	}
	if err := redisbackend.Ping(ctx, l.Addr(), 300*time.Millisecond); err == nil {
		t.Fatal("ping through a blackholed link succeeded")
	}
	l.Heal(ctx)
	if err := redisbackend.Ping(ctx, l.Addr(), time.Second); err != nil {
		t.Fatalf("after heal: %v", err)
	}
	if err := c.Down(); err != nil {
		t.Fatal(err)
	}
	for _, n := range c.Nodes {
		if n.Running() {
			t.Fatalf("%s still running after Down", n.Name)
		}
	}
}

func TestMissingBinary(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := redisbackend.Up(context.Background(), sut.Config{Nodes: 1})
	if !errors.Is(err, local.ErrMissingBinary) {
		t.Fatalf("got %v, want ErrMissingBinary", err)
	}
}

// A server whose port another server took answers nobody: its start must
// fail with ErrPortBusy, not take the other's PONG for its own.
func TestStartOnTakenPortIsBusy(t *testing.T) {
	mk := redisOnOnePort(t)
	ctx := context.Background()
	first := mk("first")
	if err := first.Start(ctx, true); err != nil {
		t.Fatal(err)
	}
	second := mk("second")
	err := second.Start(ctx, true)
	if !errors.Is(err, local.ErrPortBusy) {
		t.Fatalf("start on a taken port: %v, want ErrPortBusy", err)
	}
	if pid, err := redisbackend.ServerPID(ctx, first.Addr(), time.Second); err != nil || pid != first.PID() {
		t.Fatalf("ServerPID = %d, %v; want %d", pid, err, first.PID())
	}
}

// A server of another system answers a probe that does not say which
// process it is: its start must still fail with ErrPortBusy when the
// process listening on its port is not its own (a process that listens on
// nothing, here, started on the first server's port), and succeed when it
// is.
func TestReadyOfAnotherProcessIsBusy(t *testing.T) {
	ctx := context.Background()
	first := redisOnOnePort(t)("first")
	port := first.Port
	first.Ready = func(ctx context.Context) error { return redisbackend.Ping(ctx, first.Addr(), 200*time.Millisecond) }
	if err := first.Start(ctx, true); err != nil {
		t.Fatalf("a server that listens on its own port: %v", err)
	}
	sleep, err := redisbackend.LookBinary("sleep")
	if err != nil {
		t.Fatal(err)
	}
	second := &local.Server{Name: "second", Port: port, Binary: sleep, Args: []string{"60"}, Dir: t.TempDir(), Output: true}
	second.Ready = func(ctx context.Context) error { return redisbackend.Ping(ctx, second.Addr(), 200*time.Millisecond) }
	t.Cleanup(func() { _ = second.Kill() })
	if err := second.Start(ctx, true); !errors.Is(err, local.ErrPortBusy) {
		t.Fatalf("a server whose probe another process answers: %v, want ErrPortBusy", err)
	}
}

// redisOnOnePort makes redis-servers that all want one free port, each in
// its own directory and killed in Cleanup.
func redisOnOnePort(t *testing.T) func(name string) *local.Server {
	t.Helper()
	redistest.Require(t)
	bin, err := redisbackend.LookBinary("redis-server")
	if err != nil {
		t.Fatal(err)
	}
	port, err := local.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return func(name string) *local.Server {
		dir := t.TempDir()
		s := redisbackend.NewServer(name, port, bin, dir)
		s.Config = redisbackend.RedisConfig(port, dir, name)
		t.Cleanup(func() { _ = s.Kill() })
		return s
	}
}
