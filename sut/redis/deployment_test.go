package redis_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/sut/redis/redistest"
)

// A running local cluster behind the seam: its layout, its members with
// their capabilities, its links, and an operator's command to a node.
func TestLocalDeployment(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := redistest.Up(t, sut.Config{Nodes: 2, Clients: 2, Faketime: true})
	var d sut.Deployment = c
	if l := d.Layout(); !reflect.DeepEqual(l.Nodes, []string{"n1", "n2"}) || l.Clients != 2 || l.Replicated {
		t.Fatalf("layout %+v", l)
	}
	if d.Capabilities().Has(sut.CanPromote) || !d.Capabilities().Has(sut.CanCutLinks) {
		t.Fatalf("independent nodes have capabilities %v", d.Capabilities())
	}
	if got := len(d.Members()); got != 2 {
		t.Fatalf("%d members, want 2", got)
	}
	n, err := d.Node("n2")
	if err != nil {
		t.Fatal(err)
	}
	for _, cp := range []sut.Capability{sut.CanKill, sut.CanPause, sut.CanSetClock, sut.CanCommand} {
		if !n.Capabilities().Has(cp) {
			t.Errorf("n2 lacks %s", cp)
		}
	}
	cmd, err := sut.As[sut.Commander](n, sut.CanCommand)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cmd.Command(ctx, "SET", "k", "v"); err != nil {
		t.Fatal(err)
	}
	if v, err := cmd.Command(ctx, "GET", "k"); err != nil || v != "v" {
		t.Fatalf("GET k on n2: %q, %v", v, err)
	}
	l, err := d.Network().Link("c1", "n2")
	if err != nil {
		t.Fatal(err)
	}
	if eps := d.Endpoints(1); len(eps) != 2 || eps[1].Addr != l.Addr() || l.From() != "c1" || l.To() != "n2" || l.Name() != "c1->n2" {
		t.Fatalf("endpoints %+v, link %s at %s", eps, l.Name(), l.Addr())
	}
	if err := l.Cut(); err != nil {
		t.Fatal(err)
	}
	if d.Healthy(ctx) == nil {
		t.Fatal("healthy with a cut link")
	}
	if did, err := d.Heal(ctx); err != nil || did != "healed 1 links" {
		t.Fatalf("heal: %q, %v", did, err)
	}
	if err := d.Healthy(ctx); err != nil {
		t.Fatal(err)
	}
}
