package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/lockharness/lockharness/sut"
)

// Partition patterns.
const (
	// PatternIsolate cuts one node off from everyone.
	PatternIsolate = "isolate"
	// PatternHalves splits nodes (and clients) into two halves.
	PatternHalves = "halves"
	// PatternMajoritiesRing gives every node (and the clients next to it) a
	// majority view, each a different one (Jepsen's majorities-ring).
	PatternMajoritiesRing = "majorities-ring"
	// PatternBridge splits nodes in two with one node in both halves.
	PatternBridge = "bridge"
	// PatternClientSplit is the asymmetric split of Kleppmann's Redlock
	// example: client c0 reaches nodes 1..m, client c1 nodes n−m+1..n
	// (m = n/2+1), so they share one node and each sees a majority.
	PatternClientSplit = "client-split"
	// PatternHolder cuts the client of the holder the step struck alone,
	// from every node, while the other clients go on; its release waits
	// for the heal, so it reaches the nodes late, after the next grant
	// (see partition.holder).
	PatternHolder = "holder"
)

// KnownPatterns are every partition pattern's name, for a configuration
// to be checked against.
func KnownPatterns() []string {
	return []string{PatternIsolate, PatternHalves, PatternMajoritiesRing, PatternBridge, PatternClientSplit, PatternHolder}
}

// Patterns lists the partition patterns a topology allows, drawn from
// when none is named. PatternHolder is drawn only when named
// (Config.PartitionPatterns), with two clients or more: it was added
// after seeds had been recorded, and drawing it too would change their
// schedules.
func Patterns(t Topology) []string {
	n := len(t.Nodes)
	out := []string{PatternIsolate}
	if n >= 2 {
		out = append(out, PatternHalves)
	}
	if n >= 3 {
		out = append(out, PatternMajoritiesRing, PatternBridge)
		if t.Clients >= 2 {
			out = append(out, PatternClientSplit)
		}
	}
	return out
}

// partition blackholes links (both directions) by pattern. Its gates are
// the releases a holder pattern holds back until its heal.
type partition struct{ gates gates }

// partitionKinds: how a report draws a partition (native-partition puts
// the same kind in force, drawn alike).
var partitionKinds = []faultKind{
	{Name: "partition", Colour: "#ffbe00", StartedBy: []string{"start-partition"}, EndedBy: []string{"stop-partition"}},
}

func (*partition) Info() Info {
	return Info{Name: "partition", Kinds: partitionKinds, Strikes: []string{"start-partition"}, Needs: sut.Needs{Capabilities: []sut.Capability{sut.CanCutLinks}}, Description: "blackholes links (both directions): isolate a node, halves, majorities ring, bridge, Kleppmann's asymmetric client split, or the holder's client alone"}
}

// Reset lets go the releases a holder partition held back.
func (p *partition) Reset() { p.gates.open() }

func (*partition) Setup(context.Context, *Exec) error { return nil }

func (*partition) Generate(rng *rand.Rand, cfg Config, t Topology) []Step {
	patterns := Patterns(t)
	if len(cfg.PartitionPatterns) > 0 {
		var allowed []string
		for _, x := range cfg.PartitionPatterns {
			if slices.Contains(patterns, x) || (x == PatternHolder && t.Clients >= 2) {
				allowed = append(allowed, x)
			}
		}
		patterns = allowed
	}
	if len(patterns) == 0 {
		patterns = []string{PatternIsolate}
	}
	pat := patterns[rng.IntN(len(patterns))]
	if pat == PatternHolder {
		// The holder is known when the step strikes: its links, and what
		// the stop heals, are found then.
		params := map[string]string{"pattern": pat}
		return []Step{
			{Action: "start", Params: params},
			{At: cfg.Interval, Action: "stop", Params: params},
		}
	}
	cut, groups := partitionLinks(rng, t, pat)
	targets := linkNames(cut)
	params := map[string]string{"pattern": pat, "groups": groups}
	return []Step{
		{Action: "start", Targets: targets, Params: params},
		{At: cfg.Interval, Action: "stop", Targets: targets, Params: map[string]string{"pattern": pat}},
	}
}

// partitionLinks draws the links a pattern cuts, and describes the groups.
// Every pattern draws the nodes' order first; halves and bridge then draw
// each client's side, in client order, from the same rng: a seed draws the
// same partition.
func partitionLinks(rng *rand.Rand, t Topology, pat string) ([]link, string) {
	nodes := pick(rng.IntN, t.Nodes, len(t.Nodes)) // a random order
	switch pat {
	case PatternIsolate:
		return t.nodeLinks(nodes[0]), fmt.Sprintf("%s alone", nodes[0])
	case PatternHalves:
		side := halvesSides(nodes)
		drawClientSides(rng, t, side)
		return t.cutBetween(side), describeSides(side, t)
	case PatternBridge:
		side, bridge := bridgeSides(nodes)
		drawClientSides(rng, t, side)
		return t.cutBetween(side), describeSides(side, t) + fmt.Sprintf(", bridge %s", bridge)
	case PatternMajoritiesRing:
		return majoritiesRing(t, nodes)
	case PatternClientSplit:
		return clientSplit(t)
	case PatternHolder:
		return nil, "the holder's client alone (found when the step strikes)"
	}
	return nil, "unknown pattern " + pat
}

// halvesSides puts the first half of nodes (the smaller, when odd) on side
// 0, the rest on side 1.
func halvesSides(nodes []string) map[string]int {
	side := map[string]int{}
	for i, nd := range nodes {
		side[nd] = 0
		if i >= len(nodes)/2 {
			side[nd] = 1
		}
	}
	return side
}

// bridgeSides splits nodes in two around the bridge, the middle one, which
// is on both sides (-1: no link of it is cut).
func bridgeSides(nodes []string) (side map[string]int, bridge string) {
	n := len(nodes)
	side = map[string]int{}
	for i, nd := range nodes {
		switch {
		case i < (n-1)/2:
			side[nd] = 0
		case i == (n-1)/2:
			side[nd] = -1
		default:
			side[nd] = 1
		}
	}
	return side, nodes[(n-1)/2]
}

// drawClientSides puts each client on side 0 or 1, at random.
func drawClientSides(rng *rand.Rand, t Topology, side map[string]int) {
	for c := 0; c < t.Clients; c++ {
		side[clientName(c)] = rng.IntN(2)
	}
}

// majoritiesRing gives node i of nodes a view of itself and the next
// n/2 nodes around the ring (a majority, each a different one); client c
// sees what node c mod n sees. Every link between two that do not see each
// other is cut.
func majoritiesRing(t Topology, nodes []string) ([]link, string) {
	n := len(nodes)
	m := n/2 + 1
	view := map[string]map[string]bool{}
	var desc []string
	for i, nd := range nodes {
		view[nd] = map[string]bool{}
		var vs []string
		for k := 0; k < m; k++ {
			o := nodes[(i+k)%n]
			view[nd][o] = true
			vs = append(vs, o)
		}
		desc = append(desc, nd+" sees "+strings.Join(vs, "+"))
	}
	var cut []link
	for c := 0; c < t.Clients; c++ {
		home := nodes[c%n]
		for _, o := range t.Nodes {
			if !view[home][o] {
				cut = append(cut, link{clientName(c), o})
			}
		}
	}
	if t.nodeToNode() {
		for _, a := range t.Nodes {
			for _, b := range t.Nodes {
				if a != b && !view[a][b] {
					cut = append(cut, link{a, b})
				}
			}
		}
	}
	return cut, strings.Join(desc, "; ")
}

// clientSplit is Kleppmann's example, on the nodes in order (not drawn):
// c0 reaches 1..m, c1 n−m+1..n (m = n/2+1); further clients alternate.
func clientSplit(t Topology) ([]link, string) {
	n := len(t.Nodes)
	m := n/2 + 1
	var cut []link
	for c := 0; c < t.Clients; c++ {
		for i, nd := range t.Nodes {
			reach := i < m
			if c%2 == 1 {
				reach = i >= n-m
			}
			if !reach {
				cut = append(cut, link{clientName(c), nd})
			}
		}
	}
	return cut, fmt.Sprintf("c0 reaches %s, c1 reaches %s", strings.Join(t.Nodes[:m], "+"), strings.Join(t.Nodes[n-m:], "+"))
}

func describeSides(side map[string]int, t Topology) string {
	var a, b []string
	for _, nd := range t.Nodes {
		switch side[nd] {
		case 0:
			a = append(a, nd)
		case 1:
			b = append(b, nd)
		}
	}
	for c := 0; c < t.Clients; c++ {
		if side[clientName(c)] == 0 {
			a = append(a, clientName(c))
		} else {
			b = append(b, clientName(c))
		}
	}
	return strings.Join(a, "+") + " | " + strings.Join(b, "+")
}

func (p *partition) Do(ctx context.Context, e *Exec, s Step) error {
	d, err := e.deployment()
	if err != nil {
		return err
	}
	net := d.Network()
	switch s.Action {
	case "start":
		if s.Params["pattern"] == PatternHolder && len(s.Targets) == 0 {
			return p.cutHolder(ctx, e, net, s)
		}
		targets := s.Targets
		detail := s.Params["pattern"]
		if len(targets) == 0 {
			pat := s.Params["pattern"]
			if pat == "" {
				pat = PatternIsolate
			}
			cut, groups := partitionLinks(e.rng, e.topo, pat)
			targets, detail = linkNames(cut), pat+": "+groups
		} else if g := s.Params["groups"]; g != "" {
			detail += ": " + g
		}
		links, err := resolveLinks(net, targets)
		if err != nil {
			return err
		}
		return e.record("start-partition", event{fault: "partition"}, targets, func() (string, error) {
			var errs []error
			for _, l := range links {
				if !l.IsCut() {
					errs = append(errs, l.Cut())
				}
			}
			return detail, errors.Join(errs...)
		})
	case "stop":
		targets := s.Targets
		if len(targets) == 0 {
			for _, l := range net.Links() {
				if l.IsCut() {
					targets = append(targets, l.Name())
				}
			}
		}
		links, err := resolveLinks(net, targets)
		if err != nil {
			return err
		}
		return e.record("stop-partition", event{ends: []string{"partition"}}, targets, func() (string, error) {
			var errs []error
			for _, l := range links {
				errs = append(errs, l.Uncut(ctx))
			}
			// The links are whole again: a release held back by a holder
			// partition goes out now, through them.
			p.gates.open()
			return s.Params["pattern"], errors.Join(errs...)
		})
	}
	return fmt.Errorf("unknown action %q (want start or stop)", s.Action)
}

// resolveLinks finds links by name ("c0->n1").
func resolveLinks(net sut.Network, names []string) ([]sut.Link, error) {
	out := make([]sut.Link, 0, len(names))
	for _, n := range names {
		from, to, ok := sut.SplitLinkName(n)
		if !ok {
			return nil, fmt.Errorf("bad link name %q (want from->to)", n)
		}
		l, err := net.Link(from, to)
		if err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, nil
}

// cutHolder cuts the client of the holder step s struck from every node
// (pattern holder), while the other clients go on, and holds that
// holder's release back until the partition's stop heals the links.
//
// Why the hold: toxiproxy drops what a cut link carries (the timeout
// toxic), so a release sent into the cut never arrives, and the client,
// timing out, goes on to acquire and give back through the cut link; at
// the heal its next command is whichever one its retries had reached, a
// race the schedule cannot order. Held back, the release goes out once
// through the healed link: late, after the next grant, as a DEL sent
// into a partition reaches the node when TCP delivers it after the heal.
// The holder's write was made in its lease; only its release is late.
func (p *partition) cutHolder(ctx context.Context, e *Exec, net sut.Network, s Step) error {
	rh, err := e.releaseHolder("the partition pattern holder")
	if err != nil {
		return err
	}
	holder, err := e.strikeHolder(ctx, s)
	if err != nil {
		return err
	}
	slot, ok := rh.ClientOf(holder)
	if !ok {
		return fmt.Errorf("%w: process %v is not running", ErrNotDone, holder)
	}
	var targets []string
	for _, nd := range e.topo.Nodes {
		targets = append(targets, sut.LinkName(clientName(slot), nd))
	}
	links, err := resolveLinks(net, targets)
	if err != nil {
		return err
	}
	return e.record("start-partition", event{fault: "partition"}, targets, func() (string, error) {
		// Hold the release first: a holder that reached it before the
		// links were cut would send it into the cut.
		let, ok := rh.HoldRelease(holder, time.Now().Add(holdReleaseBound))
		if !ok {
			return "", fmt.Errorf("%w: process %v left its critical section before the cut", ErrNotDone, holder)
		}
		p.gates.add(let)
		var errs []error
		for _, l := range links {
			if !l.IsCut() {
				errs = append(errs, cutIdle(l))
			}
		}
		return fmt.Sprintf("%s: process %v's client %s alone, its release held until the heal", PatternHolder, holder, clientName(slot)), errors.Join(errs...)
	})
}

// holdReleaseBound bounds how long a holder partition holds a release
// back when its stop never comes; the run's end and the final heal let
// it go first.
const holdReleaseBound = time.Minute

// cutIdle cuts l so that a connection idle through the cut works after the
// heal (sut/local's Link.CutIdle), where the link can; Cut elsewhere.
func cutIdle(l sut.Link) error {
	if c, ok := l.(interface{ CutIdle() error }); ok {
		return c.CutIdle()
	}
	return l.Cut()
}
