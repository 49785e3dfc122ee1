// Package mariadb is the local-process MariaDB backend behind the seam: one
// MariaDB server (Debian's mariadbd) on a free loopback port with its own
// data directory, every client's link to it a toxiproxy proxy of its own
// (so a partition or latency strikes one client), plus a Redis storage node
// for the protected resource. Its *Cluster is a sut.Deployment whose
// node carries an address only: the MySQL locks (package locks) open their
// own connections through it, as user locks.MySQLUser, to the database
// locks.MySQLDatabase, whose tables (locks.MySQLLockTable, the rows the
// FOR UPDATE locks hold; locks.MySQLFenceTable, the fencing counter) are
// created at start.
//
// Faults: cut and slowed links (the proxies), pause (SIGSTOP) and kill of
// the server, KILL CONNECTION of the session that holds a lock
// (sut.ConnectionKiller), and, with Config.Faketime, clock jumps:
// mariadbd reads the time through libc, so libfaketime reaches it.
// Config.ExtraConfig is added to the server's option file ([mysqld]
// section): "innodb_lock_wait_timeout=1" is how a scenario sets how long a
// FOR UPDATE waits.
//
// Start-up: mariadb-install-db takes seconds, so a template data directory
// is built once (in the user's cache directory, keyed by the server's
// version and the bootstrap options) and copied, sparsely, for every
// server; a start is then the copy and mariadbd's own start.
package mariadb

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/go-sql-driver/mysql"

	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/sut/local"
	redisbackend "github.com/lockharness/lockharness/sut/redis"
)

// InstallHint says how to get MariaDB.
const InstallHint = "install it with `apt-get install -y mariadb-server` (Debian/Ubuntu; `service mariadb stop` afterwards, the harness starts its own), or put mariadbd and mariadb-install-db on PATH or in /usr/sbin"

// readyTimeout bounds a start: recovery after a kill included.
const readyTimeout = 30 * time.Second

// NodeName is the server's name: the deployment has one lock node.
const NodeName = "n1"

// Cluster is a running MariaDB server with its links and storage.
type Cluster struct {
	cfg     sut.Config
	tempDir bool

	// Server is the MariaDB server, n1.
	Server *local.Server
	// Storage is the Redis server holding the protected resource; no
	// fault reaches it.
	Storage *local.Server

	proxies *toxiproxy.ApiServer
	links   *local.LinkSet

	adminMu sync.Mutex
	admin   *sql.DB // root, direct (never through a link)

	downOnce sync.Once
	downErr  error
}

var (
	_ sut.Deployment       = (*Cluster)(nil)
	_ sut.Hinter           = (*Cluster)(nil)
	_ sut.ConnectionKiller = (*Cluster)(nil)
	_ sut.Killer           = server{}
	_ sut.Pauser           = server{}
	_ sut.Clocked          = server{}
)

// Local is the MariaDB Backend: Up.
func Local(ctx context.Context, cfg sut.Config) (sut.Deployment, error) {
	c, err := Up(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Up starts the server (from a copy of the template data directory), its
// links and the storage node, and waits until the server answers. On
// error, whatever was started is stopped. A port taken between choosing it
// and binding it makes Up start over, up to three times.
func Up(ctx context.Context, cfg sut.Config) (*Cluster, error) {
	return local.RetryBusyPorts(ctx, false, func() (*Cluster, error) { return up(ctx, cfg) })
}

// quietDriver silences the MySQL driver's own log: a readiness probe of a
// server that is still starting, or a session the harness kills, makes it
// print "[mysql] … unexpected EOF" on stderr, and the error is returned
// anyway. Its logger is process-wide; it is set once.
var quietDriver sync.Once

func up(ctx context.Context, cfg sut.Config) (_ *Cluster, err error) {
	quietDriver.Do(func() { _ = mysql.SetLogger(log.New(io.Discard, "", 0)) })
	if cfg.Nodes == 0 {
		cfg.Nodes = 1
	}
	if cfg.Clients == 0 {
		cfg.Clients = 1
	}
	switch {
	case cfg.Nodes != 1:
		return nil, fmt.Errorf("the MariaDB deployment is one server, got %d nodes", cfg.Nodes)
	case cfg.Topology == sut.Replicated:
		return nil, fmt.Errorf("the MariaDB deployment is one server without replicas: leave out the replicated topology")
	case cfg.BasePort != 0:
		return nil, fmt.Errorf("the MariaDB server takes a free port: leave out the base port")
	}
	bins, err := findBinaries()
	if err != nil {
		return nil, err
	}
	redis, err := redisbackend.LookBinary("redis-server")
	if err != nil {
		return nil, err
	}
	c := &Cluster{cfg: cfg, links: local.NewLinkSet("MariaDB deployment")}
	defer func() {
		if err != nil {
			_ = c.Down()
		}
	}()
	if c.cfg.Dir, c.tempDir, err = local.WorkDir(cfg.Dir, "lockharness-mariadb-"); err != nil {
		return nil, err
	}
	tmpl, err := template(ctx, bins)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(c.cfg.Dir, NodeName)
	if err := copyDir(tmpl, filepath.Join(dir, "data")); err != nil {
		return nil, err
	}

	ports, held, err := local.FreePorts(2)
	if err != nil {
		return nil, err
	}
	port, sp := ports[0], ports[1]
	c.Storage = redisbackend.Storage(redis, c.cfg.Dir, sp)
	c.Server = &local.Server{Name: NodeName, Port: port, Binary: bins.server, Dir: dir, Output: true,
		Config: optionFile(dir, port, cfg.ExtraConfig),
	}
	c.Server.Args = []string{"--defaults-file=" + c.Server.ConfigPath()}
	if cfg.Faketime {
		lib, err := local.Libfaketime()
		if err != nil {
			return nil, err
		}
		c.Server.ClockFile = filepath.Join(dir, "faketime.rc")
		c.Server.Env = faketimeEnv(lib, c.Server.ClockFile)
	}
	c.Server.Ready = func(ctx context.Context) error { return ping(ctx, c.Server.Addr()) }

	c.proxies = local.NewProxyServer()
	for cl := 0; cl < cfg.Clients; cl++ {
		l, err := local.NewLink(c.proxies, sut.ClientName(cl), NodeName, "127.0.0.1:0", c.Server.Addr())
		if err != nil {
			return nil, err
		}
		c.links.Add(l)
	}
	for _, l := range held {
		_ = l.Close()
	}
	if err := c.Storage.Start(ctx, false); err != nil {
		return nil, err
	}
	if err := c.Server.Start(ctx, false); err != nil {
		return nil, err
	}
	if err := local.WaitAllReady(ctx, []*local.Server{c.Storage, c.Server}, readyTimeout); err != nil {
		return nil, err
	}
	if c.admin, err = openAdmin(c.Server.Addr(), locks.MySQLDatabase); err != nil {
		return nil, err
	}
	return c, nil
}

// optionFile is the server's option file: loopback TCP on port, its own
// socket, pid file and error log, a small buffer pool and no binary log,
// for a fast start and a small footprint; extra lines (Config.ExtraConfig)
// last, so they win.
func optionFile(dir string, port int, extra string) string {
	lines := []string{
		"[mysqld]",
		"datadir=" + filepath.Join(dir, "data"),
		"port=" + strconv.Itoa(port),
		"bind-address=127.0.0.1",
		"skip-networking=0",
		"socket=" + filepath.Join(dir, "mysqld.sock"),
		"pid-file=" + filepath.Join(dir, "mysqld.pid"),
		"log-error=" + filepath.Join(dir, NodeName+".log"),
		"user=" + currentUser(),
		"skip-name-resolve",
		"skip-log-bin",
		"performance-schema=0",
		"innodb-buffer-pool-size=8M",
		"innodb-log-file-size=4M",
		"innodb-data-file-path=ibdata1:4M:autoextend",
		"innodb-use-native-aio=0",
		"innodb-flush-log-at-trx-commit=2",
		"max-connections=500",
		"loose-innodb-buffer-pool-load-at-startup=0",
		"loose-innodb-buffer-pool-dump-at-shutdown=0",
	}
	if extra = strings.TrimSpace(extra); extra != "" {
		lines = append(lines, extra)
	}
	return strings.Join(lines, "\n") + "\n"
}

// faketimeEnv runs mariadbd under libfaketime, reading its offset from
// clockFile on every clock call (FAKETIME_NO_CACHE). Monotonic time is
// left real. mariadbd does not link jemalloc, so it needs no malloc shim
// (Redis does: see cluster's faketime.go).
func faketimeEnv(lib, clockFile string) []string {
	return []string{
		"LD_PRELOAD=" + lib,
		"FAKETIME_TIMESTAMP_FILE=" + clockFile,
		"FAKETIME_NO_CACHE=1",
		"FAKETIME_DONT_FAKE_MONOTONIC=1",
	}
}

func currentUser() string {
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	if os.Getuid() == 0 {
		return "root"
	}
	return strconv.Itoa(os.Getuid())
}

// adminDSN is root's, directly to the server: the operator's connection,
// in database db ("" for none).
func adminDSN(addr, db string) string {
	cfg := mysql.NewConfig()
	cfg.User, cfg.Net, cfg.Addr, cfg.DBName = "root", "tcp", addr, db
	cfg.Timeout, cfg.ReadTimeout, cfg.WriteTimeout = time.Second, 5*time.Second, 5*time.Second
	return cfg.FormatDSN()
}

func openAdmin(addr, dbName string) (*sql.DB, error) {
	db, err := sql.Open("mysql", adminDSN(addr, dbName))
	if err != nil {
		return nil, fmt.Errorf("mariadb admin connection: %w", err)
	}
	db.SetMaxIdleConns(2)
	return db, nil
}

// ping opens a connection as the locks do and runs a query: the server
// is up and the schema is there.
func ping(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	db, err := sql.Open("mysql", locks.MySQLDSN(addr, time.Second))
	if err != nil {
		return err
	}
	defer db.Close()
	var n int
	return db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+locks.MySQLLockTable).Scan(&n)
}

// Layout is one node and the client slots.
func (c *Cluster) Layout() sut.Layout {
	return sut.Layout{Nodes: []string{NodeName}, Clients: c.cfg.Clients}
}

// Capabilities: every link is a proxy; the server ends sessions on demand.
func (c *Cluster) Capabilities() sut.Capabilities {
	return sut.Capabilities{sut.CanCutLinks, sut.CanSlowLinks, sut.CanDropReplies, sut.CanKillConnections}
}

// Hint says why a capability is missing.
func (c *Cluster) Hint(cp sut.Capability) string {
	switch cp {
	case sut.CanSetClock:
		return "start the server under libfaketime (cluster Config.Faketime; `harness run` does it for --nemesis clock)"
	case sut.CanCommand:
		return "the operator commands the nemeses send are Redis's; MariaDB takes SQL (its KILL CONNECTION is the kill-connection nemesis)"
	case sut.CanSetPersistence:
		return "InnoDB always persists through its redo log; there is nothing to switch"
	case sut.CanPromote, sut.CanElect:
		return "the MariaDB deployment is one server without replicas"
	case sut.CanPartitionNodes:
		return "one server: there are no nodes to cut off from each other; cut a client's link (nemesis partition)"
	}
	return ""
}

// Node returns the server by name.
func (c *Cluster) Node(name string) (sut.Node, error) {
	if name == NodeName {
		return server{Server: c.Server}, nil
	}
	return nil, fmt.Errorf("no node %q in this MariaDB deployment (it has %s)", name, NodeName)
}

// Members is the server.
func (c *Cluster) Members() []sut.Node { return []sut.Node{server{Server: c.Server}} }

// Network is the clients' links.
func (c *Cluster) Network() sut.Network { return c.links }

// Endpoints is the server as client slot cl reaches it.
func (c *Cluster) Endpoints(cl int) []sut.Endpoint {
	return c.links.Endpoints(cl, NodeName)
}

// ClientNodes is the server as client slot cl reaches it: an address for
// the connections the lock opens, and the per-request timeout.
func (c *Cluster) ClientNodes(cl int, o sut.ClientOptions) []sut.ClientNode {
	return sut.AddressNodes(c.Endpoints(cl), o)
}

// StorageAddr is the Redis storage node's address (direct, never faulted).
func (c *Cluster) StorageAddr() string { return c.Storage.Addr() }

// Admin is root's pool of direct connections to the server (never
// through a link), for tests and operators' queries.
func (c *Cluster) Admin() *sql.DB {
	c.adminMu.Lock()
	defer c.adminMu.Unlock()
	return c.admin
}

// Heal undoes every fault (sut.HealAll) and waits until the server
// answers again.
func (c *Cluster) Heal(ctx context.Context) (string, error) {
	did, err := sut.HealAll(ctx, c)
	if err != nil {
		return did, err
	}
	return did, c.Server.WaitReady(ctx, readyTimeout)
}

// Healthy reports what is still broken: a faulted link, the server down
// or paused (sut.CheckHealthy), or a server that does not answer.
func (c *Cluster) Healthy(ctx context.Context) error {
	if err := sut.CheckHealthy(ctx, c); err != nil {
		return err
	}
	return ping(ctx, c.Server.Addr())
}

// Down stops every proxy and kills both servers, then removes the
// temporary directory. It is safe to call more than once.
func (c *Cluster) Down() error {
	c.downOnce.Do(func() {
		if db := c.Admin(); db != nil {
			_ = db.Close()
		}
		c.downErr = local.StopAll(c.proxies, []*local.Server{c.Server, c.Storage}, c.cfg.Dir, c.tempDir)
	})
	return c.downErr
}
