package etcd_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/sut/etcd"
	"github.com/lockharness/lockharness/sut/etcd/etcdtest"
)

// client is an etcd client over client slot cl's own links.
func client(t *testing.T, c *etcd.Cluster, cl int) *clientv3.Client {
	t.Helper()
	var eps []string
	for _, ep := range c.Endpoints(cl) {
		eps = append(eps, ep.Addr)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

// Three members start healthy with n1 leading, a client reaches them
// through its own links, and every link (client and peer) exists.
func TestUpStartsAHealthyGroupLedByN1(t *testing.T) {
	t.Parallel()
	c := etcdtest.Up(t, sut.Config{Clients: 2})
	ctx := context.Background()
	if err := c.Healthy(ctx); err != nil {
		t.Fatal(err)
	}
	if l, err := c.Leader(ctx); err != nil || l != "n1" {
		t.Fatalf("leader %q (%v), want n1", l, err)
	}
	if got := len(c.Network().Links()); got != 2*3+3*2 {
		t.Errorf("%d links, want 6 client links and 6 peer links", got)
	}
	if lay := c.Layout(); !lay.Peers || lay.Replicated || len(lay.Nodes) != 3 {
		t.Errorf("layout %+v", lay)
	}
	cli := client(t, c, 1)
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := cli.Put(pctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	if nodes := c.ClientNodes(0, sut.ClientOptions{}); len(nodes) != 3 || nodes[0].Addr == "" || nodes[0].Client != nil {
		t.Errorf("client nodes %+v", nodes)
	}
}

// Cutting the leader's links, client and peer, both ways, partitions it
// away: the other two elect a leader among themselves, which they can only
// do if the peer traffic really goes through the links. Healing brings
// the group back healthy.
func TestIsolatingTheLeaderElectsAnother(t *testing.T) {
	t.Parallel()
	c := etcdtest.Up(t, sut.Config{Clients: 1})
	ctx := context.Background()
	for _, l := range c.Network().Links() {
		if l.From() == "n1" || l.To() == "n1" {
			if err := l.Cut(); err != nil {
				t.Fatal(err)
			}
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		l, err := majorityLeader(ctx, c)
		if err == nil && l != "n1" {
			t.Logf("n2 and n3 elected %s", l)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no new leader among n2, n3 after 20s: %q %v", l, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The majority serves a client that reaches it.
	cli := client(t, c, 0)
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := cli.Put(pctx, "k", "v"); err != nil {
		t.Fatalf("put with n1 cut off: %v", err)
	}
	if did, err := c.Heal(ctx); err != nil || !strings.Contains(did, "healed") {
		t.Fatalf("heal: %q %v", did, err)
	}
	if err := c.Healthy(ctx); err != nil {
		t.Fatal(err)
	}
}

// majorityLeader is the leader n2 and n3 agree on, asked directly.
func majorityLeader(ctx context.Context, c *etcd.Cluster) (string, error) {
	var leaders []uint64
	ids := map[uint64]string{}
	for _, s := range c.Servers {
		cli, err := clientv3.New(clientv3.Config{Endpoints: []string{s.Addr()}, DialTimeout: time.Second, Logger: zap.NewNop()})
		if err != nil {
			return "", err
		}
		sctx, cancel := context.WithTimeout(ctx, time.Second)
		st, err := cli.Status(sctx, s.Addr())
		cancel()
		_ = cli.Close()
		if err != nil {
			return "", err
		}
		ids[st.Header.MemberId] = s.Name
		if s.Name != "n1" {
			leaders = append(leaders, st.Leader)
		}
	}
	if leaders[0] == 0 || leaders[0] != leaders[1] {
		return "", errors.New("n2 and n3 do not agree on a leader")
	}
	return ids[leaders[0]], nil
}

// Killing and pausing a member, then healing, leaves the group healthy;
// a clock fault is refused with the reason.
func TestKillPauseHealAndNoClock(t *testing.T) {
	t.Parallel()
	c := etcdtest.Up(t, sut.Config{Clients: 1})
	ctx := context.Background()
	n2, _ := c.Node("n2")
	k, err := sut.As[sut.Killer](n2, sut.CanKill)
	if err != nil {
		t.Fatal(err)
	}
	if err := k.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	n3, _ := c.Node("n3")
	p, err := sut.As[sut.Pauser](n3, sut.CanPause)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Healthy(ctx); err == nil {
		t.Fatal("healthy with n2 dead and n3 paused")
	}
	did, err := c.Heal(ctx)
	if err != nil || !strings.Contains(did, "resumed n3") || !strings.Contains(did, "restarted n2") {
		t.Fatalf("heal: %q %v", did, err)
	}
	if err := c.Healthy(ctx); err != nil {
		t.Fatal(err)
	}
	err = sut.Check(c, "the clock nemesis", sut.Needs{Capabilities: []sut.Capability{sut.CanSetClock}})
	if !errors.Is(err, sut.ErrUnsupported) || !strings.Contains(err.Error(), "vDSO") {
		t.Fatalf("clock check: %v", err)
	}
}
