package docker_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/sut/docker"
	"github.com/lockharness/lockharness/sut/docker/dockertest"
)

// The rules of the native partition, without containers: direct packets to
// and from the cut members' addresses, and the proxied paths the member
// itself dials to them, none of a member it still reaches.
func TestCutRules(t *testing.T) {
	gw := netip.MustParseAddr("10.0.0.1")
	peers := []docker.Peer{
		{Name: "n1", IP: netip.MustParseAddr("10.0.0.10")},
		{Name: "n2", IP: netip.MustParseAddr("10.0.0.11")},
		{Name: "s1", IP: netip.MustParseAddr("10.0.0.100")},
	}
	proxied := []docker.Proxied{
		{From: []string{"n2", "s1"}, To: "n1", Port: 40001},
		{From: []string{"n1", "s1"}, To: "n2", Port: 40002},
	}
	// s1 cut from n1 only: it still dials n2's proxy.
	got := docker.CutRules("s1", []string{"n1"}, peers, gw, proxied)
	want := []string{
		"-s 10.0.0.10 -j DROP", "-d 10.0.0.10 -j DROP",
		"-d 10.0.0.1 -p tcp --dport 40001 -j DROP", "-s 10.0.0.1 -p tcp --sport 40001 -j DROP",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("s1 cut from n1:\n got %q\nwant %q", got, want)
	}
	// n1 cut from n2 and s1: their addresses, and n1's own dialing of n2's
	// proxy; s1 dials nothing of n1's that n1 could filter.
	got = docker.CutRules("n1", []string{"n2", "s1"}, peers, gw, proxied)
	want = []string{
		"-s 10.0.0.11 -j DROP", "-d 10.0.0.11 -j DROP", "-s 10.0.0.100 -j DROP", "-d 10.0.0.100 -j DROP",
		"-d 10.0.0.1 -p tcp --dport 40002 -j DROP", "-s 10.0.0.1 -p tcp --sport 40002 -j DROP",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("n1 cut from n2, s1:\n got %q\nwant %q", got, want)
	}
	if got := docker.CutRules("n2", nil, peers, gw, proxied); len(got) != 0 {
		t.Errorf("nothing cut: %q", got)
	}
	c := docker.Cuts{}
	if !c.Add("n1", "s1") || c.Add("s1", "n1") || c.Add("n1", "n1") {
		t.Error("Cuts.Add: a new pair, its mirror and a member with itself")
	}
	c.Add("n1", "n2")
	if got := c.Of("n1"); !reflect.DeepEqual(got, []string{"n2", "s1"}) {
		t.Errorf("cut from n1: %v", got)
	}
	if got := c.Members(); !reflect.DeepEqual(got, []string{"n1", "n2", "s1"}) {
		t.Errorf("members cut: %v", got)
	}
}

// The native partition on real containers: the master cut off from its
// replicas inside the network. The replicas' links go down (INFO
// replication on the replica, with a 3 s repl-timeout), a write on the
// master does not reach them, and a client on the host still writes to the
// master through its proxy, which a partition of the proxies could not
// leave open. Heal undoes it: the links come up and the write arrives.
func TestNativePartition(t *testing.T) {
	dockertest.Require(t)
	d := up(t, docker.Config{Topology: sut.Replicated, Failover: sut.FailoverManual, Replicas: 2, Sentinels: 0, Clients: 1,
		ExtraConfig: "repl-ping-replica-period 1\nrepl-timeout 3\n"})
	ctx := context.Background()
	if !d.Capabilities().Has(sut.CanPartitionNodes) {
		t.Fatalf("capabilities %v: no native partition with the default image", d.Capabilities())
	}
	c := client0(t, d, "n1")
	if err := c.Set(ctx, "k", "before", 0).Err(); err != nil {
		t.Fatal(err)
	}
	// The write before the cut must be on both replicas before the cut, or
	// a loaded machine cuts the stream ahead of it (CI: n3 held nothing).
	if n, err := c.Wait(ctx, 2, 10*time.Second).Result(); err != nil || n < 2 {
		t.Fatalf("WAIT 2 for the write before the cut: %d replicas, %v", n, err)
	}
	t0 := time.Now()
	if err := d.PartitionNodes(ctx, [][2]string{{"n1", "n2"}, {"n1", "n3"}}); err != nil {
		t.Fatal(err)
	}
	took := time.Since(t0)
	if got := d.PartitionedNodes(); !reflect.DeepEqual(got, []string{"n1", "n2", "n3"}) {
		t.Fatalf("partitioned nodes %v", got)
	}
	if err := c.Set(ctx, "k", "during", 0).Err(); err != nil {
		t.Fatalf("SET on the cut master through the client's proxy: %v; the native partition must leave clients alone", err)
	}
	for _, n := range d.Nodes[1:] {
		if err := eventuallyFor(ctx, 15*time.Second, func() error {
			ri, err := d.Role(ctx, n.Name())
			if err == nil && ri.LinkUp {
				err = errors.New("replication link still up")
			}
			return err
		}); err != nil {
			t.Fatalf("%s: %v", n.Name(), err)
		}
		t.Logf("%s: master_link_status down %v after the cut", n.Name(), time.Since(t0).Round(time.Millisecond))
		if v, err := n.Command(ctx, "GET", "k"); err != nil || v != "before" {
			t.Fatalf("%s holds %q (%v), want the write before the cut only", n.Name(), v, err)
		}
	}
	t.Logf("cut in %v (iptables in 3 containers)", took.Round(time.Millisecond))
	if err := d.Healthy(ctx); err == nil || !strings.Contains(err.Error(), "cut off") {
		t.Fatalf("healthy during the partition: %v", err)
	}
	t1 := time.Now()
	did, err := d.Heal(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("heal: %s, in %v", did, time.Since(t1).Round(time.Millisecond))
	if !strings.Contains(did, "rejoined n1, n2, n3") {
		t.Errorf("heal says %q", did)
	}
	if err := d.Healthy(ctx); err != nil {
		t.Fatalf("after heal: %v", err)
	}
	for _, n := range d.Nodes[1:] {
		if err := eventually(ctx, func() error {
			v, err := n.Command(ctx, "GET", "k")
			if err == nil && v != "during" {
				err = fmt.Errorf("holds %q", v)
			}
			return err
		}); err != nil {
			t.Fatalf("%s after heal: %v", n.Name(), err)
		}
	}
	t.Logf("replicas have the write made during the cut %v after the heal", time.Since(t1).Round(time.Millisecond))
}
