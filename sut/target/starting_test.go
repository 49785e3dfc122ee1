package target

import (
	"context"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockharness/lockharness/sut/local"
	"github.com/lockharness/lockharness/sut/redis/redistest"
)

// A node that refuses connections at first (its container runs, its
// redis-server does not listen yet) is waited for; one that never listens
// is given up on after the wait, with the refusal named.
func TestPingStartingWaitsForAServerComingUp(t *testing.T) {
	redistest.Require(t)
	port, err := local.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	ctx := context.Background()
	if err := pingStarting(ctx, addr, 200*time.Millisecond); err == nil || !strings.Contains(err.Error(), "connections refused for 200ms") {
		t.Fatalf("nothing listening: got %v, want the refusal named", err)
	}
	srv := exec.Command("redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
	started := make(chan struct{})
	timer := time.AfterFunc(300*time.Millisecond, func() { _ = srv.Start(); close(started) })
	t.Cleanup(func() {
		if !timer.Stop() {
			<-started
		}
		if srv.Process != nil {
			_ = srv.Process.Kill()
			_ = srv.Wait()
		}
	})
	if err := pingStarting(ctx, addr, 10*time.Second); err != nil {
		t.Fatalf("a redis-server started 300ms late: %v", err)
	}
}
