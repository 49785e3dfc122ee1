package docker

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lockharness/lockharness/sut"
)

// The native partition (sut.NodePartitioner): members cut off from each
// other by iptables in their containers' network namespaces, beneath the
// harness's proxies. It keeps every container on the network at its
// address (docker network disconnect would also cut the clients and the
// harness, and take the published ports away), and the clients on the host
// still reach every node: it is the partition between the nodes that a
// client-side proxy cannot express.
var _ sut.NodePartitioner = (*Deployment)(nil)

// cutChain is the chain of the native partition in a container, apart from
// Isolate's, so that each removes exactly what it added.
const cutChain = "LOCKHARNESS-CUT"

// Peer is a member as the native partition sees it: its name and its
// address on the network.
type Peer struct {
	Name string
	IP   netip.Addr
}

// Proxied is a path between members that goes through one of the
// harness's proxies listening on the network's gateway (the replicas' and
// sentinels' links to a node): From are the members that dial it, To the
// member it leads to, Port the proxy's port on the gateway.
type Proxied struct {
	From []string
	To   string
	Port int
}

// CutRules are the iptables rules (what follows `iptables -A CHAIN`) that
// member self needs so that it exchanges no packet with the members in
// cut: packets to and from their addresses, and its packets to, and the
// replies from, the proxies on gateway that lead to them. The other end of
// a proxied path is cut in the dialing member, where the path can be told
// apart from a client's (at the node it leads to, both come from the
// gateway). Pure, so the rules can be checked without containers.
func CutRules(self string, cut []string, peers []Peer, gateway netip.Addr, proxied []Proxied) []string {
	var rules []string
	cutSet := map[string]bool{}
	for _, c := range cut {
		cutSet[c] = true
	}
	for _, p := range peers {
		if cutSet[p.Name] && p.Name != self {
			rules = append(rules, "-s "+p.IP.String()+" -j DROP", "-d "+p.IP.String()+" -j DROP")
		}
	}
	for _, x := range proxied {
		if cutSet[x.To] && slices.Contains(x.From, self) {
			port := strconv.Itoa(x.Port)
			rules = append(rules,
				"-d "+gateway.String()+" -p tcp --dport "+port+" -j DROP",
				"-s "+gateway.String()+" -p tcp --sport "+port+" -j DROP")
		}
	}
	return rules
}

// cutScript replaces the native partition's chain in a container by rules
// and hooks it into INPUT and OUTPUT (once). The chain is written by one
// iptables-restore (declaring it there flushes it): each iptables process
// reads the whole ruleset, and on a loaded machine a dozen of them put the
// cut a second late.
func cutScript(rules []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "iptables-restore --noflush <<'EOF'\n*filter\n:%s - [0:0]\n", cutChain)
	for _, r := range rules {
		fmt.Fprintf(&b, "-A %s %s\n", cutChain, r)
	}
	fmt.Fprintf(&b, "COMMIT\nEOF\n[ $? = 0 ] && (iptables -C INPUT -j %[1]s 2>/dev/null || iptables -I INPUT -j %[1]s)"+
		" && (iptables -C OUTPUT -j %[1]s 2>/dev/null || iptables -I OUTPUT -j %[1]s)", cutChain)
	return b.String()
}

// uncutScript removes the chain and its hooks: in one iptables-restore,
// or, when that fails (a hook already gone), one piece at a time.
var uncutScript = fmt.Sprintf("iptables-restore --noflush 2>/dev/null <<'EOF' ||\n*filter\n-D INPUT -j %[1]s\n-D OUTPUT -j %[1]s\n-F %[1]s\n-X %[1]s\nCOMMIT\nEOF\n"+
	"{ iptables -D INPUT -j %[1]s 2>/dev/null; iptables -D OUTPUT -j %[1]s 2>/dev/null; "+
	"iptables -F %[1]s 2>/dev/null; iptables -X %[1]s 2>/dev/null; true; }", cutChain)

// Cuts is which members are cut off from which, symmetric, and the pure
// bookkeeping of a native partition: a backend keeps one, adds pairs and
// applies the rules of the members whose cut changed.
type Cuts map[string]map[string]bool

// Add cuts a and b off from each other and reports whether that changed
// anything.
func (c Cuts) Add(a, b string) bool {
	if a == b || c[a][b] {
		return false
	}
	for _, x := range [][2]string{{a, b}, {b, a}} {
		if c[x[0]] == nil {
			c[x[0]] = map[string]bool{}
		}
		c[x[0]][x[1]] = true
	}
	return true
}

// Of lists the members cut off from m, in name order.
func (c Cuts) Of(m string) []string {
	var out []string
	for o := range c[m] {
		out = append(out, o)
	}
	sort.Strings(out)
	return out
}

// Members lists the members cut off from anyone, in name order.
func (c Cuts) Members() []string {
	var out []string
	for m, o := range c {
		if len(o) > 0 {
			out = append(out, m)
		}
	}
	sort.Strings(out)
	return out
}

// NativePartition is the native partition of one deployment: which of its
// members are cut off from which, and how a member's rules change. The
// Docker backend and a target whose containers are named each keep one.
// Its changes go in once begun even when ctx ends (changing the network
// halfway would leave a partition nobody asked for), within execTimeout.
type NativePartition struct {
	// Rules are the iptables rules member needs to be cut off from the
	// members in cut (CutRules, with the deployment's addresses).
	Rules func(member string, cut []string) []string
	// Exec runs a shell script in member's network namespace.
	Exec func(ctx context.Context, member, script string) error

	mu   sync.Mutex
	cuts Cuts
}

// Partition cuts each pair off from each other, on top of what is cut
// already, and rewrites the rules of the members whose cut changed.
func (p *NativePartition) Partition(ctx context.Context, pairs [][2]string) error {
	p.mu.Lock()
	if p.cuts == nil {
		p.cuts = Cuts{}
	}
	scripts := map[string]string{}
	for _, pr := range pairs {
		if p.cuts.Add(pr[0], pr[1]) {
			scripts[pr[0]], scripts[pr[1]] = "", ""
		}
	}
	for m := range scripts {
		scripts[m] = cutScript(p.Rules(m, p.cuts.Of(m)))
	}
	p.mu.Unlock()
	_, err := p.execAll(ctx, scripts, "native partition")
	return err
}

// Heal removes every cut; a member whose rules could not be removed stays
// cut, for the next heal.
func (p *NativePartition) Heal(ctx context.Context) error {
	p.mu.Lock()
	scripts := map[string]string{}
	for _, m := range p.cuts.Members() {
		scripts[m] = uncutScript
	}
	p.mu.Unlock()
	failed, err := p.execAll(ctx, scripts, "heal native partition")
	p.mu.Lock()
	for m, peers := range p.cuts {
		if !failed[m] {
			for o := range peers {
				delete(p.cuts[o], m)
			}
			delete(p.cuts, m)
		}
	}
	p.mu.Unlock()
	return err
}

// Members are the members cut off from some other member now.
func (p *NativePartition) Members() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cuts.Members()
}

// execTimeout bounds the iptables changes of one partition or heal (from
// the host: 15 ms a member; by docker exec 0.1–1 s on a loaded machine).
const execTimeout = 20 * time.Second

// execAll runs each member's script, in parallel, and returns the members
// where it failed.
func (p *NativePartition) execAll(ctx context.Context, scripts map[string]string, what string) (map[string]bool, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), execTimeout)
	defer cancel()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	failed := map[string]bool{}
	for m, s := range scripts {
		wg.Add(1)
		go func(m, s string) {
			defer wg.Done()
			if err := p.Exec(ctx, m, s); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("%s: %w", what, err))
				failed[m] = true
				mu.Unlock()
			}
		}(m, s)
	}
	wg.Wait()
	return failed, errors.Join(errs...)
}

// PartitionNodes cuts each pair of members (lock nodes, sentinels) off
// from each other with iptables in their containers' network namespaces,
// on top of what is cut already. It needs a harness running as root with
// nsenter and iptables, or an image with iptables (the containers get
// CAP_NET_ADMIN then). A member that is paused cannot take the rules; a
// container that is docker-killed and started again loses them (the
// supervised lock nodes never are: their container stays).
func (d *Deployment) PartitionNodes(ctx context.Context, pairs [][2]string) error {
	if !d.canCut() {
		return &sut.UnsupportedError{Capability: sut.CanPartitionNodes, Hint: d.Hint(sut.CanPartitionNodes)}
	}
	for _, p := range pairs {
		for _, m := range p {
			if n, err := d.Container(m); err != nil || n.role == RoleStorage {
				return fmt.Errorf("native partition: no member %q (lock nodes and sentinels)", m)
			}
		}
	}
	return d.native.Partition(ctx, pairs)
}

// HealNodes removes every cut of the native partition.
func (d *Deployment) HealNodes(ctx context.Context) error { return d.native.Heal(ctx) }

// PartitionedNodes are the members cut off from some other member now.
func (d *Deployment) PartitionedNodes() []string { return d.native.Members() }

// newNativePartition is the deployment's native partition: rules with its
// members' addresses and the proxies they dial on the gateway, run in
// their namespaces.
func (d *Deployment) newNativePartition() *NativePartition {
	return &NativePartition{
		Rules: func(m string, cut []string) []string {
			return CutRules(m, cut, d.peers(), d.gateway, d.proxied())
		},
		Exec: func(ctx context.Context, m, script string) error {
			n, err := d.Container(m)
			if err != nil {
				return err
			}
			return n.netExec(ctx, script)
		},
	}
}

// CanPartitionNodes says whether a deployment of image im, started by this
// process, has the native partition (nil), or why not: iptables runs in
// the containers' namespaces from the host (nsenter, as root), or inside
// an image that has it.
func CanPartitionNodes(im Image) error {
	if HostNetns() {
		return nil
	}
	if err := im.Require(NeedIptables); err != nil {
		return fmt.Errorf("%w; or run the harness as root with nsenter and iptables on the host", err)
	}
	return nil
}

// canCut reports whether iptables can run in the containers' network
// namespaces: from the host (nsenter), or inside an image that has it.
func (d *Deployment) canCut() bool { return d.hostNetns || d.cfg.NetAdmin }

// peers are the members' addresses.
func (d *Deployment) peers() []Peer {
	var out []Peer
	for _, n := range append(append([]*Node(nil), d.Nodes...), d.Sentinels...) {
		out = append(out, Peer{Name: n.name, IP: n.IP})
	}
	return out
}

// proxied are the links members dial through the gateway: "sentinels->nI"
// (every member but nI dials it: the replicas and the sentinels) and, with
// manual failover, "nJ->nI".
func (d *Deployment) proxied() []Proxied {
	var out []Proxied
	for _, l := range d.links {
		from, to := l.From(), l.To()
		var dialers []string
		switch {
		case from == SentinelsFrom:
			for _, n := range append(append([]*Node(nil), d.Nodes...), d.Sentinels...) {
				if n.name != to {
					dialers = append(dialers, n.name)
				}
			}
		case strings.HasPrefix(from, "n"):
			dialers = []string{from}
		default:
			continue // a client's link, on the host
		}
		_, port, _ := strings.Cut(l.Addr(), ":")
		p, err := strconv.Atoi(port)
		if err != nil {
			continue
		}
		out = append(out, Proxied{From: dialers, To: to, Port: p})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Port < out[j].Port })
	return out
}
