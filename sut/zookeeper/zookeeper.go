// Package zookeeper is the local-process ZooKeeper backend behind the seam:
// an ensemble of ZooKeeper 3.8 servers (Debian's zookeeper package, run as
// QuorumPeerMain on a JVM) on loopback, every client's link to every
// server and every server's link to every other server a toxiproxy proxy
// of its own, plus a Redis storage node for the protected resource. Its
// *Cluster is a sut.Deployment whose nodes carry addresses only: the
// ZooKeeper locks (package locks) dial their own client through them.
//
// Server to server links: every server's zoo.cfg names every server at
// its real ports (server.N=host:quorum:election), and every server runs
// with the connect shim preloaded (local.BuildConnectShim), which sends
// each connect() it makes to another server's quorum or election port to
// its own proxy to that server. So "n1->n2" is n1's path to n2 alone (one
// proxy for the quorum port, one for the election port, cut and healed
// together), and cutting a member's links partitions it away both ways.
// Routing by zoo.cfg alone (each server's lines for the others naming its
// proxies) did not: a server that receives an election connection from a
// lower id drops it and connects back to the address the other announced
// in its first message, its real election port. Such a connection
// bypassed the links, and (measured) a cut-off n1 went on exchanging votes
// with the others through it, which kept n2 and n3 voting for it for 30s,
// electing nobody, in 2 runs of 5 under load. The JVM ignores
// socksProxyHost for ZooKeeper's quorum sockets, so the etcd backend's
// SOCKS routing cannot help; a preloaded connect() reaches every socket.
// The shim also refuses a connection to a port nobody listens on, as the
// direct connection would be refused, where the proxy would accept it and
// then close it: a follower that reached its new leader a few milliseconds
// before the leader listened took that for a failed leader, and an
// election of 200ms became one of 11s.
//
// Server ids: n1 is server.3, n2 server.2, n3 server.1. ZooKeeper's fast
// leader election picks the highest (zxid, id), so on a fresh ensemble n1,
// with the highest id, leads and a schedule can name it, as with etcd.
//
// Clocks: the JVM reads the wall clock through libc's clock_gettime, so
// libfaketime reaches it (TestLibfaketimeReachesTheJVM); with
// Config.Faketime every server runs under it with the monotonic clock left
// real, as a wall-clock step (NTP, an operator) leaves CLOCK_MONOTONIC.
// ZooKeeper times sessions on the monotonic clock (Time.currentElapsedTime,
// System.nanoTime), which is what zk-clock-jump shows.
package zookeeper

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/sut/local"
	redisbackend "github.com/lockharness/lockharness/sut/redis"
)

// InstallHint says how to get ZooKeeper.
const InstallHint = "install it with `apt-get install -y zookeeper` (Debian/Ubuntu; it brings a JRE)"

// Jars ZooKeeper runs from: Debian's zookeeper.jar names its dependencies
// in its manifest's Class-Path; slf4j-simple makes it log to stderr (the
// server's log file), with the time, which ConfirmClock reads.
var (
	zookeeperJar = "/usr/share/java/zookeeper.jar"
	loggerJar    = "/usr/share/java/slf4j-simple.jar"
	classPath    = zookeeperJar + ":" + loggerJar
)

// Timing of the ensemble. A tick of 200ms lets a client ask for sessions
// as short as 400ms (two ticks); a follower gives up a silent leader after
// SyncLimit ticks (4s) and the leader its followers alike: with 2s a
// loaded two-core machine (load average 40 beside stress-ng) was seen to
// change leaders in the middle of a run, and a new leader gives every
// session a fresh timeout. InitLimit is generous: a JVM that is still
// compiling syncs slowly.
const (
	TickTime  = 200 * time.Millisecond
	InitLimit = 50 // ticks: 10s
	SyncLimit = 20 // ticks: 4s
	// MaxSessionTimeout is the longest session a client may ask for; the
	// server grants what is asked between 2 ticks and this.
	MaxSessionTimeout = 60 * time.Second
	// MaxNotificationInterval is the longest a looking server waits
	// before it re-sends its votes (the default backs off to 60s while a
	// peer is unreachable, which keeps a healed server out for up to a
	// minute); CnxTimeout is how long it tries to connect to a peer
	// (default 5s). See zooCfg.
	MaxNotificationInterval = 2 * time.Second
	CnxTimeout              = time.Second
)

// Aftermath is what a restart or a leader change leaves behind in an
// ensemble (sut.System.Aftermath), from the timing above:
//
//   - Serve: a server that lost its leader, or was restarted, serves after
//     a leader election: a round of votes, in which it gives up on an
//     unreachable peer after CnxTimeout and re-sends its votes at most
//     MaxNotificationInterval later;
//   - LeaseExtension: a new leader re-arms every session it restores with
//     its whole timeout, counted from its election, and expires sessions
//     in buckets of one tick, so a killed holder's ephemeral node lives a
//     session timeout and up to a tick past the election;
//   - MinLease: the shortest session the servers grant, two ticks
//     (minSessionTimeout).
func Aftermath() sut.Aftermath {
	return sut.Aftermath{Serve: CnxTimeout + MaxNotificationInterval, LeaseExtension: TickTime, MinLease: 2 * TickTime}
}

// readyTimeout bounds a start: JVMs starting on a loaded machine, then an
// election.
const readyTimeout = 60 * time.Second

// Cluster is a running ZooKeeper ensemble: its servers are the Group's
// Servers, n1…nN.
type Cluster struct {
	local.Group

	clientPort   map[string]int // server -> client port
	quorumPort   map[string]int
	electionPort map[string]int
}

var (
	_ sut.Deployment = (*Cluster)(nil)
	_ sut.Hinter     = (*Cluster)(nil)
	_ sut.Killer     = member{}
	_ sut.Pauser     = member{}
	_ sut.Clocked    = member{}
)

// Local is the ZooKeeper Backend: Up.
func Local(ctx context.Context, cfg sut.Config) (sut.Deployment, error) {
	c, err := Up(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Up starts cfg.Nodes servers (3 when unset) with their links and the
// storage node, waits until every server serves (follows or leads) and
// makes n1 the leader. With cfg.Faketime every server runs under
// libfaketime and can have its clock set. On error, whatever was started
// is stopped. A port taken between choosing it and binding it makes Up
// start over, up to three times.
func Up(ctx context.Context, cfg sut.Config) (*Cluster, error) {
	return local.RetryBusyPorts(ctx, false, func() (*Cluster, error) { return up(ctx, cfg) })
}

func up(ctx context.Context, cfg sut.Config) (_ *Cluster, err error) {
	if cfg, err = withDefaults(cfg); err != nil {
		return nil, err
	}
	java, redis, ftLib, err := binaries(cfg.Faketime)
	if err != nil {
		return nil, err
	}
	c := &Cluster{Group: local.Group{What: "zookeeper ensemble", Noun: "server", Clients: cfg.Clients, Peers: true,
		ReadyTimeout: readyTimeout, AsNode: func(s *local.Server) sut.Node { return member{s} }, Serving: serving},
		clientPort: map[string]int{}, quorumPort: map[string]int{}, electionPort: map[string]int{}}
	defer func() {
		if err != nil {
			_ = c.Down()
		}
	}()
	if err := c.Open(cfg.Dir, "lockharness-zookeeper-"); err != nil {
		return nil, err
	}
	ports, err := c.HoldPorts(3*cfg.Nodes + 1)
	if err != nil {
		return nil, err
	}
	names := make([]string, cfg.Nodes)
	for i := range names {
		names[i] = fmt.Sprintf("n%d", i+1)
		c.clientPort[names[i]] = ports[3*i]
		c.quorumPort[names[i]] = ports[3*i+1]
		c.electionPort[names[i]] = ports[3*i+2]
	}
	c.Storage = redisbackend.Storage(redis, c.Dir, ports[3*cfg.Nodes])
	shim, err := local.BuildConnectShim(c.Dir)
	if err != nil {
		return nil, err
	}
	peer, err := c.addLinks(names)
	if err != nil {
		return nil, err
	}
	archive, classList, build := classArchive(java, c.Dir)
	if build {
		defer func() {
			if build { // not handed to buildClassArchive
				releaseClassArchive()
			}
		}()
	}
	for i := range names {
		s, err := c.server(i, names, peer, java, shim, ftLib)
		if err != nil {
			return nil, err
		}
		switch {
		case archive != "":
			s.Args = append([]string{"-XX:SharedArchiveFile=" + archive}, s.Args...)
		case build && i == 0:
			s.Args = append([]string{"-XX:DumpLoadedClassList=" + classList}, s.Args...)
		}
		c.Servers = append(c.Servers, s)
	}
	if werr := c.Start(ctx); werr != nil {
		// A server that cannot bind its election port says only that it
		// leaves the election, in the last lines of its log.
		if strings.Contains(werr.Error(), "participate in leader election") {
			return nil, fmt.Errorf("%w: %v", local.ErrPortBusy, werr)
		}
		return nil, werr
	}
	if err := c.lead(ctx, names[0]); err != nil {
		return nil, err
	}
	if build {
		build = false
		_ = buildClassArchive(ctx, java, classList) // without it, the next start is as this one
	}
	return c, nil
}

// withDefaults fills in the nodes (3 servers) and clients (1) cfg leaves
// unset, and refuses what a ensemble cannot be.
func withDefaults(cfg sut.Config) (sut.Config, error) {
	if cfg.Nodes == 0 {
		cfg.Nodes = 3
	}
	if cfg.Clients == 0 {
		cfg.Clients = 1
	}
	switch {
	case cfg.Nodes < 1:
		return cfg, fmt.Errorf("zookeeper needs at least 1 server, got %d", cfg.Nodes)
	case cfg.Topology == sut.Replicated:
		return cfg, fmt.Errorf("zookeeper is an ensemble of peers, not a master with replicas: leave out the replicated topology")
	case cfg.BasePort != 0:
		return cfg, fmt.Errorf("zookeeper servers take free ports: leave out the base port")
	}
	return cfg, nil
}

// binaries finds java, ZooKeeper's jars, redis-server (the storage node)
// and, with faketime, libfaketime (ftLib), saying how to install what is
// missing.
func binaries(faketime bool) (java, redis, ftLib string, err error) {
	// The message says how to install the Redis binaries, then ZooKeeper,
	// as it always has.
	java, err = redisbackend.LookBinary("java")
	if err != nil {
		return "", "", "", fmt.Errorf("%w; %s", err, InstallHint)
	}
	for _, j := range []string{zookeeperJar, loggerJar} {
		if _, err := os.Stat(j); err != nil {
			return "", "", "", fmt.Errorf("%w: %s: %v; %s", local.ErrMissingBinary, j, err, InstallHint)
		}
	}
	if redis, err = redisbackend.LookBinary("redis-server"); err != nil {
		return "", "", "", err
	}
	if faketime {
		if ftLib, err = local.Libfaketime(); err != nil {
			return "", "", "", err
		}
	}
	return java, redis, ftLib, nil
}

// addLinks makes every client's link to every server, and every server's
// link to every other (a peerLink: its quorum and election proxies).
func (c *Cluster) addLinks(names []string) (map[string]*peerLink, error) {
	for cl := 0; cl < c.Clients; cl++ {
		for _, n := range names {
			if _, err := c.AddLink(sut.ClientName(cl), n, fmt.Sprintf("127.0.0.1:%d", c.clientPort[n])); err != nil {
				return nil, err
			}
		}
	}
	peer := map[string]*peerLink{}
	for _, a := range names {
		for _, b := range names {
			if a == b {
				continue
			}
			q, err := local.NewLink(c.Proxies, a, b, "127.0.0.1:0", fmt.Sprintf("127.0.0.1:%d", c.quorumPort[b]))
			if err != nil {
				return nil, err
			}
			// The election link's proxy needs a name of its own; it is
			// never listed: peerLink faults both.
			e, err := local.NewLink(c.Proxies, a, b+"-election", "127.0.0.1:0", fmt.Sprintf("127.0.0.1:%d", c.electionPort[b]))
			if err != nil {
				return nil, err
			}
			pl := &peerLink{quorum: q, election: e}
			peer[pl.Name()] = pl
			c.Links.Add(pl)
		}
	}
	return peer, nil
}

// server is the i-th server, n = names[i], a JVM (java): its data
// directory with its myid, its zoo.cfg, the JVM's arguments, and its
// environment: the connect shim routing n's connections to the other
// servers through n's links (see the package doc) and, with ftLib,
// libfaketime.
func (c *Cluster) server(i int, names []string, peer map[string]*peerLink, java, shim, ftLib string) (*local.Server, error) {
	n := names[i]
	dir := filepath.Join(c.Dir, n)
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o755); err != nil {
		return nil, fmt.Errorf("make %s: %w", dir, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "data", "myid"), []byte(fmt.Sprintln(serverID(i, len(names)))), 0o644); err != nil {
		return nil, fmt.Errorf("write myid of %s: %w", n, err)
	}
	var lines []string
	for j, o := range names {
		lines = append(lines, fmt.Sprintf("server.%d=127.0.0.1:%d:%d", serverID(j, len(names)), c.quorumPort[o], c.electionPort[o]))
	}
	s := &local.Server{Name: n, Port: c.clientPort[n], Binary: java, Dir: dir, Output: true,
		Config: zooCfg(dir, c.clientPort[n], lines),
	}
	s.Args = javaArgs(s.ConfigPath())
	route := map[string]string{}
	for _, o := range names {
		if pl := peer[sut.LinkName(n, o)]; pl != nil {
			route[fmt.Sprintf("127.0.0.1:%d", c.quorumPort[o])] = pl.quorum.Addr()
			route[fmt.Sprintf("127.0.0.1:%d", c.electionPort[o])] = pl.election.Addr()
		}
	}
	routeEnv, err := local.ConnectMapEnv(route)
	if err != nil {
		return nil, err
	}
	preload := shim
	if ftLib != "" {
		s.ClockFile = filepath.Join(dir, "faketime")
		s.Env = faketimeEnv(s.ClockFile)
		preload += ":" + ftLib
	}
	s.Env = append(s.Env, "LD_PRELOAD="+preload, routeEnv)
	s.Ready = func(ctx context.Context) error {
		_, err := Mode(ctx, s.Addr())
		return err
	}
	return s, nil
}

// serverID is the ZooKeeper id (myid, server.N) of the i-th server of n:
// n1 has the highest, so that it wins a fresh election.
func serverID(i, n int) int { return n - i }

// zooCfg is a server's zoo.cfg. The admin server (Jetty, on 8080) is off;
// the four-letter words the harness uses are on.
func zooCfg(dir string, clientPort int, servers []string) string {
	lines := []string{
		fmt.Sprintf("tickTime=%d", TickTime.Milliseconds()),
		fmt.Sprintf("initLimit=%d", InitLimit),
		fmt.Sprintf("syncLimit=%d", SyncLimit),
		"dataDir=" + filepath.Join(dir, "data"),
		fmt.Sprintf("clientPort=%d", clientPort),
		"clientPortAddress=127.0.0.1",
		fmt.Sprintf("minSessionTimeout=%d", 2*TickTime.Milliseconds()),
		fmt.Sprintf("maxSessionTimeout=%d", MaxSessionTimeout.Milliseconds()),
		"maxClientCnxns=0",
		"admin.enableServer=false",
		"4lw.commands.whitelist=srvr,ruok,mntr,stat,cons",
		// A server restarted while the others run rejoins them; the old
		// transaction logs are small, nothing needs purging.
		"autopurge.purgeInterval=0",
		// A looking server re-sends its votes at most
		// MaxNotificationInterval apart, and gives up a connection
		// attempt to a peer after CnxTimeout. Unknown keys become
		// zookeeper.* system properties.
		fmt.Sprintf("fastleader.maxNotificationInterval=%d", MaxNotificationInterval.Milliseconds()),
		fmt.Sprintf("cnxTimeout=%d", CnxTimeout.Milliseconds()),
	}
	return strings.Join(append(lines, servers...), "\n") + "\n"
}

// javaArgs start a server fast on a small machine: class data sharing,
// the client compiler only, the serial collector, a small heap. The log
// shows each line's wall-clock time, which is what ConfirmClock reads.
func javaArgs(cfgPath string) []string {
	return []string{
		"-Xshare:auto", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
		"-Xms32m", "-Xmx192m", "-XX:-UsePerfData",
		"-Dzookeeper.admin.enableServer=false",
		"-Dzookeeper.jmx.log4j.disable=true",
		"-Dorg.slf4j.simpleLogger.showDateTime=true",
		"-Dorg.slf4j.simpleLogger.dateTimeFormat=" + logTimeFormatJava,
		"-cp", classPath,
		"org.apache.zookeeper.server.quorum.QuorumPeerMain", cfgPath,
	}
}

// The time stamp on each log line: Java's pattern and Go's layout.
const (
	logTimeFormatJava = "yyyy-MM-dd'T'HH:mm:ss.SSSXXX"
	logTimeLayout     = "2006-01-02T15:04:05.000Z07:00"
)

// faketimeEnv runs a JVM under libfaketime (preloaded after the connect
// shim) reading its offset from clockFile, as the Redis nodes do: the file is reread on every clock read
// (FAKETIME_NO_CACHE), so a change shows at once, and CLOCK_MONOTONIC is
// left real (FAKETIME_DONT_FAKE_MONOTONIC), as a real wall-clock step
// leaves it; libfaketime's README says a JVM hangs without it. Unlike
// Redis the JVM needs no malloc shim (it allocates with glibc). Measured
// here: libfaketime 0.9.10 turns on its "monotonic fix" for this glibc on
// its own, and with it every timed wait of the JVM (the monitor deflation
// thread, ZooKeeper's session tracker, …) returns at once: an idle server
// spins at 50–70% of a core and an ensemble takes a minute to elect;
// FAKETIME_FORCE_MONOTONIC_FIX=0 turns it off (idle: 0 ticks in 3s).
func faketimeEnv(clockFile string) []string {
	return []string{
		"FAKETIME_TIMESTAMP_FILE=" + clockFile,
		"FAKETIME_NO_CACHE=1",
		"FAKETIME_DONT_FAKE_MONOTONIC=1",
		"FAKETIME_FORCE_MONOTONIC_FIX=0",
	}
}

// Hint says why a capability is missing.
func (c *Cluster) Hint(cp sut.Capability) string {
	switch cp {
	case sut.CanSetClock:
		return "start the servers under libfaketime (sut.Config.Faketime; `harness run` does it for --nemesis clock)"
	case sut.CanCommand:
		return "the operator commands the nemeses send are Redis's; ZooKeeper takes none"
	case sut.CanSetPersistence:
		return "ZooKeeper always logs every transaction to disk before it acknowledges it; there is nothing to switch"
	case sut.CanPromote, sut.CanElect:
		return "ZooKeeper elects its own leader; partition, pause or kill the leader (n1 at the start) instead"
	}
	return ""
}

// Heal undoes every fault (sut.HealAll), then waits until every server
// serves again: a restarted or reconnected server has rejoined a leader.
func (c *Cluster) Heal(ctx context.Context) (string, error) { return c.HealAll(ctx, c) }

// Healthy reports what is still broken: a faulted link, a server down or
// paused (sut.CheckHealthy), or a server that neither leads nor
// follows.
func (c *Cluster) Healthy(ctx context.Context) error { return c.CheckHealthy(ctx, c) }
