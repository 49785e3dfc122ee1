// Package etcd is the local-process etcd backend behind the seam: a group
// of etcd members (etcd-server's etcd binary) on loopback, every client's
// link to every member and every member's link to every other member a
// toxiproxy proxy of its own, plus a Redis storage node for the protected
// resource. Its *Cluster is a sut.Deployment whose nodes carry
// addresses only: the etcd locks (package locks) dial their own etcd
// client through them.
//
// Member to member links: a member reaches another at the peer URL that
// one advertises, the same for all; each member's peer traffic goes out
// through its own SOCKS proxy (HTTP_PROXY, see peerDialer), which sends it
// through that member's own link, so "n1->n2" is n1's path to n2 alone and
// cutting a member's links partitions it away both ways.
//
// What it cannot do: set a member's clock. etcd is a Go program and reads
// the time through the vDSO, never through libc, so libfaketime does not
// reach it; a clock fault is refused with that reason (and etcd's leases
// run on the monotonic clock anyway).
package etcd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/sut/local"
	redisbackend "github.com/lockharness/lockharness/sut/redis"
)

// InstallHint says how to get etcd.
const InstallHint = "install it with `apt-get install -y etcd-server` (Debian/Ubuntu), or put etcd on PATH"

// Timing of the members. Heartbeat and election timeout are etcd's
// defaults: shorter ones elect spuriously on a loaded two-core machine.
// They also set the shortest lease etcd grants: 1.5 election timeouts,
// rounded up to whole seconds, 2s.
const (
	HeartbeatInterval = 100 * time.Millisecond
	ElectionTimeout   = time.Second
)

// Aftermath is what a restart or a leader change leaves behind in an etcd
// group (sut.System.Aftermath), from the timing above:
//
//   - Serve: a restarted member, or one whose leader is gone, serves only
//     after an election; raft waits a randomised election timeout, between
//     one and two ElectionTimeouts, before it campaigns (measured: 1.2s
//     from a restart to "became leader", docs/real-libraries.md);
//   - LeaseExtension: a member promoted to leader restarts every lease it
//     restored, each for its whole TTL again plus one election timeout
//     (the lessor's Promote(ElectionTimeout)), so a killed holder's key
//     lives a full lease past the election;
//   - MinLease: etcd raises a shorter TTL to 1.5 election timeouts, in
//     whole seconds (leases are granted in seconds): 2s.
func Aftermath() sut.Aftermath {
	minLease := (3*ElectionTimeout/2 + time.Second - 1).Truncate(time.Second)
	return sut.Aftermath{Serve: 2 * ElectionTimeout, LeaseExtension: ElectionTimeout, MinLease: minLease}
}

// readyTimeout bounds a start: a cluster needs a quorum and an election.
const readyTimeout = 30 * time.Second

// Cluster is a running etcd group: its members are the Group's Servers,
// n1…nN.
type Cluster struct {
	local.Group

	clientPort map[string]int // member -> client port
	peerPort   map[string]int // member -> peer port
}

var (
	_ sut.Deployment = (*Cluster)(nil)
	_ sut.Hinter     = (*Cluster)(nil)
	_ sut.Killer     = member{}
	_ sut.Pauser     = member{}
)

// Local is the etcd Backend: Up.
func Local(ctx context.Context, cfg sut.Config) (sut.Deployment, error) {
	c, err := Up(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Up starts cfg.Nodes members (3 when unset) with their links and the
// storage node, waits until every member is healthy (a leader is elected)
// and makes n1 the leader, so that a schedule can name it. On error,
// whatever was started is stopped. cfg.Faketime is not honoured (see the
// package doc): the members lack CanSetClock, and a clock fault is refused
// by sut.Check with the reason. A port taken between choosing it and
// binding it makes Up start over, up to three times.
func Up(ctx context.Context, cfg sut.Config) (*Cluster, error) {
	return local.RetryBusyPorts(ctx, false, func() (*Cluster, error) { return up(ctx, cfg) })
}

func up(ctx context.Context, cfg sut.Config) (_ *Cluster, err error) {
	if cfg, err = withDefaults(cfg); err != nil {
		return nil, err
	}
	bin, err := local.LookBinary("etcd", InstallHint)
	if err != nil {
		return nil, err
	}
	redis, err := redisbackend.LookBinary("redis-server")
	if err != nil {
		return nil, err
	}
	c := &Cluster{Group: local.Group{What: "etcd cluster", Noun: "member", Clients: cfg.Clients, Peers: true,
		ReadyTimeout: readyTimeout, AsNode: func(s *local.Server) sut.Node { return member{s} }, Serving: Health},
		clientPort: map[string]int{}, peerPort: map[string]int{}}
	defer func() {
		if err != nil {
			_ = c.Down()
		}
	}()
	if err := c.Open(cfg.Dir, "lockharness-etcd-"); err != nil {
		return nil, err
	}
	ports, err := c.HoldPorts(2*cfg.Nodes + 1)
	if err != nil {
		return nil, err
	}
	names := make([]string, cfg.Nodes)
	for i := range names {
		names[i] = fmt.Sprintf("n%d", i+1)
		c.clientPort[names[i]] = ports[2*i]
		c.peerPort[names[i]] = ports[2*i+1]
	}
	c.Storage = redisbackend.Storage(redis, c.Dir, ports[2*cfg.Nodes])
	for cl := 0; cl < cfg.Clients; cl++ {
		for _, n := range names {
			if _, err := c.AddLink(sut.ClientName(cl), n, fmt.Sprintf("127.0.0.1:%d", c.clientPort[n])); err != nil {
				return nil, err
			}
		}
	}
	token := fmt.Sprintf("lockharness-%d-%d", os.Getpid(), time.Now().UnixNano())
	for _, n := range names {
		d, err := c.peerDialer(n, names)
		if err != nil {
			return nil, err
		}
		c.Servers = append(c.Servers, c.member(n, bin, token, names, d))
	}
	if err := c.Start(ctx); err != nil {
		return nil, err
	}
	if err := c.lead(ctx, names[0]); err != nil {
		return nil, err
	}
	return c, nil
}

// withDefaults fills in the nodes (3 members) and clients (1) cfg leaves
// unset, and refuses what an etcd group cannot be.
func withDefaults(cfg sut.Config) (sut.Config, error) {
	if cfg.Nodes == 0 {
		cfg.Nodes = 3
	}
	if cfg.Clients == 0 {
		cfg.Clients = 1
	}
	switch {
	case cfg.Nodes < 1:
		return cfg, fmt.Errorf("etcd needs at least 1 member, got %d", cfg.Nodes)
	case cfg.Topology == sut.Replicated:
		return cfg, fmt.Errorf("etcd is a group of peers, not a master with replicas: leave out the replicated topology")
	case cfg.BasePort != 0:
		return cfg, fmt.Errorf("etcd members take free ports: leave out the base port")
	}
	return cfg, nil
}

// peerDialer makes member a's links to the other members and the SOCKS
// proxy that sends its peer traffic through them; Down closes it.
func (c *Cluster) peerDialer(a string, names []string) (*peerDialer, error) {
	route := map[int]string{}
	for _, b := range names {
		if a == b {
			continue
		}
		l, err := c.AddLink(a, b, fmt.Sprintf("127.0.0.1:%d", c.peerPort[b]))
		if err != nil {
			return nil, err
		}
		route[c.peerPort[b]] = l.Addr()
	}
	d, err := newPeerDialer(a, route)
	if err != nil {
		return nil, err
	}
	c.OnDown(d.Close)
	return d, nil
}

// member is the server of member n: etcd with its flags, its peer traffic
// through d.
func (c *Cluster) member(n, bin, token string, names []string, d *peerDialer) *local.Server {
	var initial []string
	for _, o := range names {
		initial = append(initial, fmt.Sprintf("%s=%s", o, c.peerURL(o)))
	}
	dir := filepath.Join(c.Dir, n)
	s := &local.Server{Name: n, Port: c.clientPort[n], Binary: bin, Dir: dir, Output: true,
		Args: []string{
			"--name", n,
			"--data-dir", filepath.Join(dir, "data"),
			"--listen-client-urls", fmt.Sprintf("http://127.0.0.1:%d", c.clientPort[n]),
			"--advertise-client-urls", fmt.Sprintf("http://127.0.0.1:%d", c.clientPort[n]),
			"--listen-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", c.peerPort[n]),
			"--initial-advertise-peer-urls", c.peerURL(n),
			"--initial-cluster", strings.Join(initial, ","),
			"--initial-cluster-state", "new",
			"--initial-cluster-token", token,
			"--heartbeat-interval", fmt.Sprint(HeartbeatInterval.Milliseconds()),
			"--election-timeout", fmt.Sprint(ElectionTimeout.Milliseconds()),
			// A member back from a partition does not depose a working
			// leader with the terms it ran up alone (etcd 3.5's default).
			"--pre-vote",
			"--logger", "zap", "--log-outputs", "stderr",
		},
		// Peer traffic through this member's own SOCKS proxy; nothing
		// inherited may exempt an address from it.
		Env: []string{"HTTP_PROXY=" + d.URL(), "http_proxy=" + d.URL(), "NO_PROXY=", "no_proxy="},
	}
	s.Ready = func(ctx context.Context) error { return memberReady(ctx, s) }
	return s
}

const clockHint = "etcd is a Go program and reads the clock through the vDSO, not libc, so libfaketime cannot set it (its leases run on the monotonic clock)"

// peerURL is the peer URL member n advertises: its real port at 0.0.0.0,
// an address Go's proxy rules do not exempt, so every member reaches it
// through its own SOCKS proxy (see peerDialer), which maps the port.
func (c *Cluster) peerURL(n string) string { return fmt.Sprintf("http://0.0.0.0:%d", c.peerPort[n]) }

// Health asks the member at addr (its client address) whether it is
// healthy: it answers and knows a leader (etcd's /health).
func Health(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/health", nil)
	if err != nil {
		return err
	}
	resp, err := directHTTP.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
	var h struct {
		Health string `json:"health"`
	}
	if err := json.Unmarshal(b, &h); err != nil || h.Health != "true" {
		return fmt.Errorf("etcd at %s not healthy: %s", addr, strings.TrimSpace(string(b)))
	}
	return nil
}

// memberReady is Health, except that a member still unhealthy that hears
// from a member of another group ("request cluster ID mismatch" in its log)
// has crossed ports with a group started beside it (another test's): a
// port of one was taken by the other between being chosen and bound. Such
// a group may never elect; ErrPortBusy starts it again on new ports at
// once, where it used to wait 30s and fail.
func memberReady(ctx context.Context, s *local.Server) error {
	err := Health(ctx, s.Addr())
	if err == nil {
		return nil
	}
	if b, rerr := os.ReadFile(s.LogPath()); rerr == nil && bytes.Contains(b, []byte("cluster ID mismatch")) {
		return fmt.Errorf("%w: member %s on 127.0.0.1:%d hears from a member of another etcd group (request cluster ID mismatch in %s)", local.ErrPortBusy, s.Name, s.Port, s.LogPath())
	}
	return err
}

// directHTTP reaches the members directly, never through a proxy from the
// harness's environment.
var directHTTP = &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}

// Hint says why a capability is missing.
func (c *Cluster) Hint(cp sut.Capability) string {
	switch cp {
	case sut.CanSetClock:
		return clockHint
	case sut.CanCommand:
		return "the operator commands the nemeses send are Redis's; etcd takes none"
	case sut.CanSetPersistence:
		return "etcd always persists through its write-ahead log; there is nothing to switch"
	case sut.CanPromote, sut.CanElect:
		return "etcd elects its own leader; partition, pause or kill the leader (n1 at the start) instead"
	}
	return ""
}

// Heal undoes every fault (sut.HealAll), then waits until every member
// is healthy again: a restarted or reconnected member has caught up with
// a leader.
func (c *Cluster) Heal(ctx context.Context) (string, error) { return c.HealAll(ctx, c) }

// Healthy reports what is still broken: a faulted link, a member down or
// paused (sut.CheckHealthy), or a member without a leader.
func (c *Cluster) Healthy(ctx context.Context) error { return c.CheckHealthy(ctx, c) }

// member is an etcd server behind the seam: a process that can be killed,
// restarted (on its data directory: it rejoins with what it wrote) and
// paused. Its clock cannot be set (see the package doc).
type member struct{ *local.Server }

func (m member) Name() string   { return m.Server.Name }
func (m member) Kind() sut.Kind { return sut.KindLock }
func (m member) Capabilities() sut.Capabilities {
	return sut.Capabilities{sut.CanKill, sut.CanPause}
}
func (m member) Kill(context.Context) error { return m.Server.Kill() }

// Start restarts a killed member and waits until it is healthy, which
// needs a quorum: a member restarted while most others are down waits
// until they return (and its start times out).
func (m member) Start(ctx context.Context) error {
	if m.Running() {
		return nil
	}
	if err := m.Server.Start(ctx, false); err != nil {
		return err
	}
	return m.WaitReady(ctx, readyTimeout)
}
func (m member) Pause(context.Context) error  { return m.Server.Pause() }
func (m member) Resume(context.Context) error { return m.Server.Resume() }
