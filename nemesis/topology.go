package nemesis

import (
	"github.com/lockharness/lockharness/sut"
)

// Topology is the shape of the cluster a schedule is drawn for: node and
// client names, and what links exist between them.
type Topology struct {
	Nodes      []string // lock nodes, "n1"…
	Clients    int      // client slots c0…
	Replicated bool     // one master with replicas
	// Sentinel: sentinels and replicas reach node I through one shared link
	// "sentinels->nI"; without it (manual failover) each replica has its own
	// link to each node, "nJ->nI".
	Sentinel bool
	// Peers: the nodes are a group whose members talk among themselves,
	// each through its own link "nJ->nI" (sut.Layout.Peers).
	Peers bool
}

// TopologyOf is the topology of a deployment's layout (for a local
// cluster not yet started: sut.Config.Layout).
func TopologyOf(l sut.Layout) Topology {
	return Topology{Nodes: append([]string(nil), l.Nodes...), Clients: l.Clients, Replicated: l.Replicated, Sentinel: l.Elected, Peers: l.Peers}
}

func (t Topology) empty() bool { return len(t.Nodes) == 0 }

// nodeToNode reports whether each node has its own link to each other
// node: replicas that the harness moves (manual failover), or the members
// of a group of peers.
func (t Topology) nodeToNode() bool { return (t.Replicated && !t.Sentinel) || t.Peers }

// randomNode picks one node of the topology.
func (t Topology) randomNode(intN func(int) int) string { return t.Nodes[intN(len(t.Nodes))] }

// randomNodeOrMaster picks a node, or in a replicated topology, half the
// time, whichever node is master when the step runs.
func (t Topology) randomNodeOrMaster(intN func(int) int) string {
	n := t.randomNode(intN)
	if t.Replicated && intN(2) == 0 {
		return "master"
	}
	return n
}

func clientName(i int) string { return sut.ClientName(i) }

// link is a directed link by its ends.
type link struct{ from, to string }

func (l link) String() string { return sut.LinkName(l.from, l.to) }

// nodeLinks are every link that ends at node or starts from it.
func (t Topology) nodeLinks(node string) []link {
	var out []link
	for c := 0; c < t.Clients; c++ {
		out = append(out, link{clientName(c), node})
	}
	if t.nodeToNode() {
		for _, o := range t.Nodes {
			if o != node {
				out = append(out, link{node, o}, link{o, node})
			}
		}
	}
	if t.Sentinel {
		out = append(out, link{sut.SentinelsFrom, node})
	}
	return out
}

// cutBetween is every link between a group of nodes and clients on one side
// and one on the other, given for each node and client which side it is on
// (0 or 1; -1 for a node on both sides, a bridge). Sentinels sit with the
// side of the first node.
func (t Topology) cutBetween(side map[string]int) []link {
	apart := func(a, b string) bool {
		sa, sb := side[a], side[b]
		return sa >= 0 && sb >= 0 && sa != sb
	}
	var out []link
	for c := 0; c < t.Clients; c++ {
		for _, n := range t.Nodes {
			if apart(clientName(c), n) {
				out = append(out, link{clientName(c), n})
			}
		}
	}
	if t.nodeToNode() {
		for _, a := range t.Nodes {
			for _, b := range t.Nodes {
				if a != b && apart(a, b) {
					out = append(out, link{a, b})
				}
			}
		}
	}
	if t.Sentinel {
		s := side[t.Nodes[0]]
		if s < 0 {
			s = 0
		}
		for _, n := range t.Nodes {
			if side[n] >= 0 && side[n] != s {
				out = append(out, link{sut.SentinelsFrom, n})
			}
		}
	}
	return out
}

func linkNames(ls []link) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.String()
	}
	return out
}
