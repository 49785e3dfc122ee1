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

// Cluster is a running MariaDB server with its links and storage: the
// Group's one server.
type Cluster struct {
	local.Group

	// Server is the MariaDB server, n1.
	Server *local.Server

	adminMu sync.Mutex
	admin   *sql.DB // root, direct (never through a link)
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
	if cfg, err = withDefaults(cfg); err != nil {
		return nil, err
	}
	bins, err := findBinaries()
	if err != nil {
		return nil, err
	}
	redis, err := redisbackend.LookBinary("redis-server")
	if err != nil {
		return nil, err
	}
	c := &Cluster{Group: local.Group{What: "MariaDB deployment", Clients: cfg.Clients, ReadyTimeout: readyTimeout,
		AsNode: func(s *local.Server) sut.Node { return server{Server: s} }}}
	defer func() {
		if err != nil {
			_ = c.Down()
		}
	}()
	c.OnDown(func() {
		if db := c.Admin(); db != nil {
			_ = db.Close()
		}
	})
	if err := c.Open(cfg.Dir, "lockharness-mariadb-"); err != nil {
		return nil, err
	}
	tmpl, err := template(ctx, bins)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(c.Dir, NodeName)
	if err := copyDir(tmpl, filepath.Join(dir, "data")); err != nil {
		return nil, err
	}
	ports, err := c.HoldPorts(2)
	if err != nil {
		return nil, err
	}
	c.Storage = redisbackend.Storage(redis, c.Dir, ports[1])
	if c.Server, err = newServer(bins.server, dir, ports[0], cfg); err != nil {
		return nil, err
	}
	c.Servers = []*local.Server{c.Server}
	for cl := 0; cl < cfg.Clients; cl++ {
		if _, err := c.AddLink(sut.ClientName(cl), NodeName, c.Server.Addr()); err != nil {
			return nil, err
		}
	}
	if err := c.Start(ctx); err != nil {
		return nil, err
	}
	if c.admin, err = openAdmin(c.Server.Addr(), locks.MySQLDatabase); err != nil {
		return nil, err
	}
	return c, nil
}

// withDefaults fills in the nodes (one server) and clients (1) cfg leaves
// unset, and refuses what a MariaDB deployment cannot be.
func withDefaults(cfg sut.Config) (sut.Config, error) {
	if cfg.Nodes == 0 {
		cfg.Nodes = 1
	}
	if cfg.Clients == 0 {
		cfg.Clients = 1
	}
	switch {
	case cfg.Nodes != 1:
		return cfg, fmt.Errorf("the MariaDB deployment is one server, got %d nodes", cfg.Nodes)
	case cfg.Topology == sut.Replicated:
		return cfg, fmt.Errorf("the MariaDB deployment is one server without replicas: leave out the replicated topology")
	case cfg.BasePort != 0:
		return cfg, fmt.Errorf("the MariaDB server takes a free port: leave out the base port")
	}
	return cfg, nil
}

// newServer is mariadbd on port in dir, with cfg's extra options and,
// with cfg.Faketime, under libfaketime; it is ready when it answers a
// query as the locks ask it.
func newServer(bin, dir string, port int, cfg sut.Config) (*local.Server, error) {
	s := &local.Server{Name: NodeName, Port: port, Binary: bin, Dir: dir, Output: true,
		Config: optionFile(dir, port, cfg.ExtraConfig),
	}
	s.Args = []string{"--defaults-file=" + s.ConfigPath()}
	if cfg.Faketime {
		lib, err := local.Libfaketime()
		if err != nil {
			return nil, err
		}
		s.ClockFile = filepath.Join(dir, "faketime.rc")
		s.Env = local.FaketimeEnv(s.ClockFile, lib)
	}
	s.Ready = func(ctx context.Context) error { return ping(ctx, s.Addr()) }
	return s, nil
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

// Capabilities: every link is a proxy; the server ends sessions on demand.
func (c *Cluster) Capabilities() sut.Capabilities {
	return append(c.Group.Capabilities(), sut.CanKillConnections)
}

// Hint says why a capability is missing.
func (c *Cluster) Hint(cp sut.Capability) string {
	switch cp {
	case sut.CanSetClock:
		return "start the server under libfaketime (sut.Config.Faketime; `harness run` does it for --nemesis clock)"
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

// Admin is root's pool of direct connections to the server (never
// through a link), for tests and operators' queries.
func (c *Cluster) Admin() *sql.DB {
	c.adminMu.Lock()
	defer c.adminMu.Unlock()
	return c.admin
}

// Heal undoes every fault (sut.HealAll) and waits until the server
// answers again.
func (c *Cluster) Heal(ctx context.Context) (string, error) { return c.HealAll(ctx, c) }

// Healthy reports what is still broken: a faulted link, the server down
// or paused (sut.CheckHealthy), or a server that does not answer.
func (c *Cluster) Healthy(ctx context.Context) error { return c.CheckHealthy(ctx, c) }
