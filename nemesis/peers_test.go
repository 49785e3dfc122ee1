package nemesis

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// In a group of peers (a consensus group) isolating a member cuts its
// links to the other members, both ways, as well as the clients' links to
// it: a minority partition, not just a member the clients cannot reach.
func TestIsolateInAGroupOfPeersCutsThePeerLinks(t *testing.T) {
	topo := Topology{Nodes: []string{"n1", "n2", "n3"}, Clients: 2, Peers: true}
	cut, _ := partitionLinks(rand.New(rand.NewPCG(1, 1)), topo, PatternIsolate)
	names := linkNames(cut)
	var alone string
	for _, n := range topo.Nodes {
		if slices.Contains(names, "c0->"+n) {
			alone = n
		}
	}
	if alone == "" {
		t.Fatalf("isolate cut %v: no client link", names)
	}
	for _, o := range topo.Nodes {
		if o == alone {
			continue
		}
		for _, l := range []string{alone + "->" + o, o + "->" + alone} {
			if !slices.Contains(names, l) {
				t.Errorf("isolating %s leaves %s up (cut %v)", alone, l, names)
			}
		}
	}
	halves, _ := partitionLinks(rand.New(rand.NewPCG(2, 2)), topo, PatternHalves)
	peer := 0
	for _, l := range halves {
		if l.from[0] == 'n' {
			peer++
		}
	}
	if peer == 0 {
		t.Errorf("halves of a group of peers cut no peer link: %v", linkNames(halves))
	}
	independent := Topology{Nodes: []string{"n1", "n2", "n3"}, Clients: 2}
	for _, l := range independent.nodeLinks("n1") {
		if l.from[0] == 'n' {
			t.Errorf("independent nodes have no peer links, got %s", l)
		}
	}
}
