package zookeeper_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/sut/zookeeper/zktest"
)

// libfaketime reaches the JVM (it reads the wall clock through libc), and
// ZooKeeper times sessions on the monotonic clock, which a wall-clock jump
// leaves alone. Measured, not assumed: with every server's clock 60s
// ahead (confirmed on each server's own log stamps), a znode created
// after the jump carries the leader's jumped time, and a 2s session that
// was open before the jump, kept alive by its pings, is still there, with
// its ephemeral node, 3s later. (Had the leader timed sessions on the
// wall clock, the session would have expired on the spot: 60s of its
// clock passed without a ping.)
func TestClockJumpReachesTheJVMAndSparesSessions(t *testing.T) {
	t.Parallel()
	c := zktest.Up(t, sut.Config{Clients: 1, Faketime: true})
	ctx := context.Background()
	conn := client(t, c, 0)
	sid := sessionOf(t, conn)
	if _, err := conn.Create("/held", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	for _, n := range c.Members() {
		cl, err := sut.As[sut.Clocked](n, sut.CanSetClock)
		if err != nil {
			t.Fatal(err)
		}
		if err := cl.SetClock(60*time.Second, 1); err != nil {
			t.Fatal(err)
		}
		skew, err := cl.ConfirmClock(ctx, 100*time.Millisecond, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s reads %v ahead", n.Name(), skew)
	}
	if _, err := conn.Create("/after", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	_, st, err := conn.Get("/after")
	if err != nil {
		t.Fatal(err)
	}
	if ahead := time.Until(time.UnixMilli(st.Ctime)); ahead < 55*time.Second || ahead > 65*time.Second {
		t.Fatalf("a znode created after the jump is stamped %v from now, want about +60s: the jump did not reach the leader", ahead)
	}
	time.Sleep(3 * time.Second)
	if ok, _, err := conn.Exists("/held"); err != nil || !ok {
		t.Fatalf("the ephemeral node of the session open across the jump: exists %v, %v", ok, err)
	}
	if got := conn.SessionID(); got != sid {
		t.Fatalf("session %#x became %#x across the jump", sid, got)
	}
	// Back to real time (a 60s jump backwards): heal confirms it.
	if did, err := c.Heal(ctx); err != nil {
		t.Fatalf("heal: %q %v", did, err)
	}
	if ok, _, err := conn.Exists("/held"); err != nil || !ok {
		t.Fatalf("after the jump back: exists %v, %v", ok, err)
	}
}

func sessionOf(t *testing.T, conn *zk.Conn) int64 {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for conn.SessionID() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no session after 20s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return conn.SessionID()
}
