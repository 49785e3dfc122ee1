package adapter_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/lockharness/lockharness/locks/adapter"
	"github.com/lockharness/lockharness/sut"
	redisbackend "github.com/lockharness/lockharness/sut/redis"
	"github.com/lockharness/lockharness/sut/redis/redistest"
)

// TestFollowerFollowsTheMasterDialer gives an adapter's address to a node
// that has none, as a replicated topology's master: a connection to it
// reaches the node the harness's MasterDialer dials; when a failover
// closes the dialer's connections (SetPrimary), the adapter's connection
// closes too, and the next one works again.
func TestFollowerFollowsTheMasterDialer(t *testing.T) {
	redistest.Require(t, "redis-server")
	c := redistest.Up(t, sut.Config{Nodes: 1, Clients: 1})
	link := c.ClientNodes(0, sut.ClientOptions{})[0]
	t.Cleanup(func() { sut.CloseClientNodes([]sut.ClientNode{link}) })
	d := redisbackend.NewMasterDialer(func() (string, error) { return link.Addr, nil }, time.Second)
	master := redisbackend.NewMasterClient(d, sut.ClientOptions{})
	t.Cleanup(func() { _ = master.Close() })

	addr, closeAll, err := adapter.FollowAddr(sut.ClientNode{Name: "master", Client: master})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeAll)
	ping := func(conn net.Conn) error {
		if _, err := conn.Write([]byte("PING\r\n")); err != nil {
			return err
		}
		line, err := bufio.NewReader(conn).ReadString('\n')
		if err == nil && line != "+PONG\r\n" {
			t.Fatalf("PING answered %q", line)
		}
		return err
	}
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := ping(conn); err != nil {
		t.Fatalf("through the follower: %v", err)
	}
	d.CloseAll() // a failover
	_ = conn.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := conn.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("after the failover, the adapter's connection read %v, want EOF", err)
	}
	again, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if err := ping(again); err != nil {
		t.Fatalf("a new connection after the failover: %v", err)
	}
}
