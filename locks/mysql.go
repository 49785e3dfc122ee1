package locks

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/lockharness/lockharness/sut"
)

// The schema the MySQL locks expect (package sut/mariadb creates it at
// start): a database, a user without password allowed from loopback, a
// table with one row per lock key (created on first use) and a table whose
// AUTO_INCREMENT column hands out fencing tokens.
const (
	MySQLDatabase   = "lockharness"
	MySQLUser       = "lockharness"
	MySQLLockTable  = "locks"
	MySQLFenceTable = "fences"
)

// MySQLLockName is the name mysql-get-lock passes to GET_LOCK for key.
func MySQLLockName(key string) string { return "lockharness:" + key }

// MySQLDSN is the data source name the MySQL locks dial addr with (their
// own link). It sets no read timeout: every statement is bounded by its
// context instead, so a waiting SELECT … FOR UPDATE is not cut off by a
// per-read timeout. Placeholders are interpolated by the client, so a
// statement is one round trip (no server-side prepare).
func MySQLDSN(addr string, dial time.Duration) string { return mysqlConfig(addr, dial).FormatDSN() }

func mysqlConfig(addr string, dial time.Duration) *mysql.Config {
	cfg := mysql.NewConfig()
	cfg.User, cfg.Net, cfg.Addr, cfg.DBName = MySQLUser, "tcp", addr, MySQLDatabase
	cfg.Timeout = dial
	cfg.InterpolateParams = true
	return cfg
}

var mysqlForUpdateInfo = Info{
	Name:        "mysql-for-update",
	System:      SystemMariaDB,
	Description: "a transaction on one pinned connection holding SELECT … FOR UPDATE on the key's row (NOWAIT, or waiting as long as innodb_lock_wait_timeout allows); release = COMMIT. No lease: the lock lasts as long as the connection",
	MaxNodes:    1,
	NoLease:     true,
	New: func(nodes []sut.ClientNode, opts Options) (Lock, error) {
		return newMySQLLock(nodes, opts, mysqlForUpdate)
	},
}

var mysqlFencedInfo = Info{
	Name:        "mysql-fenced",
	System:      SystemMariaDB,
	Description: "mysql-for-update with a fencing token from an AUTO_INCREMENT column, taken inside the transaction once the row is held, checked by the storage",
	MaxNodes:    1,
	Fenced:      true,
	NoLease:     true,
	New: func(nodes []sut.ClientNode, opts Options) (Lock, error) {
		return newMySQLLock(nodes, opts, mysqlFenced)
	},
}

var mysqlGetLockInfo = Info{
	Name:        "mysql-get-lock",
	System:      SystemMariaDB,
	Description: "GET_LOCK(key, wait) / RELEASE_LOCK(key) on one pinned connection: a named lock that lasts as long as the connection",
	MaxNodes:    1,
	NoLease:     true,
	New: func(nodes []sut.ClientNode, opts Options) (Lock, error) {
		return newMySQLLock(nodes, opts, mysqlGetLock)
	},
}

type mysqlKind int

const (
	mysqlForUpdate mysqlKind = iota
	mysqlFenced
	mysqlGetLock
)

// Server errors that say a statement certainly did not take the lock.
const (
	erLockWaitTimeout = 1205 // innodb_lock_wait_timeout ran out, or NOWAIT found it taken
	erLockDeadlock    = 1213
	erLockNowait      = 3572 // MySQL 8's NOWAIT
)

// mysqlLock is a lock held by a database session, as people build them on
// MySQL and MariaDB: a row held with SELECT … FOR UPDATE inside a
// transaction, or a named lock (GET_LOCK). Neither has a lease: the server
// keeps the lock until the holder commits (or releases) or its connection
// ends. The history records no deadline, and the checkers hold the lock
// to its promise until the release; a connection the server ends first (an
// operator's KILL CONNECTION, wait_timeout, a restart) breaks that promise,
// and the holder learns it only at its next command.
//
// Each hold pins one connection (sql.Conn) from this client's pool for its
// whole life: database/sql never re-runs a statement on another connection
// of a pinned one, and the driver returns driver.ErrBadConn only when it
// sent nothing, which is the one case this lock retries on a fresh
// connection (the pool's connection was already dead). A retried GET_LOCK
// or FOR UPDATE after the first was sent would be a ghost: a lock taken
// for nobody on a connection the client has given up.
//
// Release first pings the hold's connection: a connection the server
// ended (EOF, not a timeout) before the COMMIT or RELEASE_LOCK was sent
// certainly held nothing by then, the definite "not held" the history
// records as a lost lock. Any other failure is unknown.
type mysqlLock struct {
	db      *sql.DB
	kind    mysqlKind
	opts    Options
	timeout time.Duration
	node    string
	conns   *connSet

	mu    sync.Mutex
	rows  map[string]bool // keys whose row is known to exist
	holds map[string]*mysqlHold
}

// mysqlHold is one held lock and its pinned connection. The transaction
// is the connection's own (START TRANSACTION / COMMIT sent as statements),
// not a sql.Tx, whose context would roll it back when the acquire's
// context ends.
type mysqlHold struct {
	conn *sql.Conn
	tx   bool   // FOR UPDATE: a transaction is open
	name string // GET_LOCK
	lost bool   // a Renew found the connection ended (guarded by mysqlLock.mu)
}

// quietDriver silences the driver's own log ("[mysql] … unexpected EOF"
// on stderr whenever a connection the server ended is used): every such
// error is also returned, and recorded in the history. The driver's
// logger is process-wide; it is set once.
var quietDriver sync.Once

func newMySQLLock(nodes []sut.ClientNode, opts Options, kind mysqlKind) (Lock, error) {
	quietDriver.Do(func() { _ = mysql.SetLogger(log.New(io.Discard, "", 0)) })
	if len(nodes) != 1 {
		return nil, fmt.Errorf("mysql lock needs exactly 1 node, got %d", len(nodes))
	}
	n := nodes[0]
	if n.Addr == "" {
		return nil, fmt.Errorf("mysql lock: node %s has no address", n.Name)
	}
	timeout := n.Timeout
	if timeout <= 0 {
		timeout = time.Second
	}
	cfg := mysqlConfig(n.Addr, timeout)
	cs := &connSet{m: map[net.Conn]struct{}{}}
	cfg.DialFunc = cs.dial
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("mysql lock for %s: %w", n.Addr, err)
	}
	db := sql.OpenDB(conn)
	db.SetMaxIdleConns(4)
	return &mysqlLock{db: db, kind: kind, opts: opts.WithDefaults(), timeout: timeout, node: n.Name, conns: cs,
		rows: map[string]bool{}, holds: map[string]*mysqlHold{}}, nil
}

func (l *mysqlLock) nodeErr(op string, err error) error {
	return &NodeError{Node: l.node, Op: op, Err: err}
}

func (l *mysqlLock) rpc(ctx context.Context, extra time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, l.timeout+extra)
}

// Acquire takes key on a connection of its own. FOR UPDATE: with no wait,
// NOWAIT; with a wait, one blocking SELECT that the server gives up after
// innodb_lock_wait_timeout (a definite refusal, however long the caller
// was willing to wait), bounded here by the wait plus a request timeout
// (which ends the connection: unknown). GET_LOCK waits server-side for
// opts.Wait.
func (l *mysqlLock) Acquire(ctx context.Context, key string, o AcquireOptions) (Lease, error) {
	lease := Lease{Key: key, Token: newToken(l.opts.Rand), Session: true}
	if l.kind != mysqlGetLock {
		if err := l.ensureRow(ctx, key); err != nil {
			return lease, err
		}
	}
	var h *mysqlHold
	var err error
	for attempt := 0; ; attempt++ {
		h, err = l.try(ctx, key, o)
		if !errors.Is(err, driver.ErrBadConn) || attempt == 2 {
			break
		}
		// Nothing was sent: the pooled connection was dead already.
	}
	if errors.Is(err, driver.ErrBadConn) {
		return lease, l.nodeErr("acquire", fmt.Errorf("%v: %w", err, ErrNotAcquired))
	}
	if err != nil {
		return lease, err
	}
	if l.kind == mysqlFenced {
		fctx, cancel := l.rpc(ctx, 0)
		res, ferr := h.conn.ExecContext(fctx, "INSERT INTO "+MySQLFenceTable+" () VALUES ()")
		cancel()
		var id int64
		if ferr == nil {
			id, ferr = res.LastInsertId()
		}
		if ferr != nil {
			// Held without a token: give it up; the connection's end
			// rolls the transaction back whatever happened.
			_ = h.conn.Raw(func(any) error { return driver.ErrBadConn })
			_ = h.conn.Close()
			return lease, l.nodeErr("fence", ferr)
		}
		lease.Fence = id
	}
	l.mu.Lock()
	l.holds[lease.Token] = h
	l.mu.Unlock()
	return lease, nil
}

// try makes one attempt on a fresh pinned connection: the held lock, or
// ErrNotAcquired (definite), driver.ErrBadConn (nothing sent), or another
// error (unknown; the connection is closed, so whatever it took is freed).
func (l *mysqlLock) try(ctx context.Context, key string, o AcquireOptions) (*mysqlHold, error) {
	cctx, cancel := l.rpc(ctx, 0)
	conn, err := l.db.Conn(cctx)
	cancel()
	if err != nil {
		return nil, l.nodeErr("connect", fmt.Errorf("%v: %w", err, ErrNotAcquired))
	}
	wait := max(o.Wait, 0)
	if l.kind == mysqlGetLock {
		return l.tryGetLock(ctx, conn, key, wait)
	}
	return l.tryRowLock(ctx, conn, key, wait)
}

// tryGetLock asks for the named lock of key on conn (GET_LOCK), waiting up
// to wait for it.
func (l *mysqlLock) tryGetLock(ctx context.Context, conn *sql.Conn, key string, wait time.Duration) (*mysqlHold, error) {
	qctx, cancel := l.rpc(ctx, wait)
	defer cancel()
	var got sql.NullInt64
	err := conn.QueryRowContext(qctx, "SELECT GET_LOCK(?, ?)", MySQLLockName(key), wait.Seconds()).Scan(&got)
	switch {
	case err != nil:
		_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		_ = conn.Close()
		if errors.Is(err, driver.ErrBadConn) {
			return nil, err
		}
		return nil, l.nodeErr("GET_LOCK", err)
	case got.Valid && got.Int64 == 1:
		return &mysqlHold{conn: conn, name: MySQLLockName(key)}, nil
	case got.Valid && got.Int64 == 0:
		_ = conn.Close()
		return nil, l.nodeErr("GET_LOCK", ErrNotAcquired)
	}
	_ = conn.Close()
	return nil, l.nodeErr("GET_LOCK", fmt.Errorf("returned NULL (an error in the server)"))
}

// tryRowLock takes key's row FOR UPDATE in a transaction on conn, waiting
// up to wait for it (NOWAIT when wait is 0).
func (l *mysqlLock) tryRowLock(ctx context.Context, conn *sql.Conn, key string, wait time.Duration) (*mysqlHold, error) {
	bctx, cancel := l.rpc(ctx, 0)
	_, err := conn.ExecContext(bctx, "START TRANSACTION")
	cancel()
	if err != nil {
		_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		_ = conn.Close()
		if errors.Is(err, driver.ErrBadConn) {
			return nil, err
		}
		// START TRANSACTION takes no lock.
		return nil, l.nodeErr("begin", fmt.Errorf("%v: %w", err, ErrNotAcquired))
	}
	q := "SELECT name FROM " + MySQLLockTable + " WHERE name = ? FOR UPDATE"
	if wait == 0 {
		q += " NOWAIT"
	}
	qctx, cancel := l.rpc(ctx, wait)
	var name string
	err = conn.QueryRowContext(qctx, q, key).Scan(&name)
	cancel()
	if err == nil {
		return &mysqlHold{conn: conn, tx: true}, nil
	}
	var me *mysql.MySQLError
	if errors.As(err, &me) && (me.Number == erLockWaitTimeout || me.Number == erLockDeadlock || me.Number == erLockNowait) {
		// The statement that would have taken the row failed, and the
		// transaction holds nothing else: a definite refusal, whatever
		// the rollback does (a connection that fails it is discarded,
		// and its end rolls back).
		rctx, cancel := l.rpc(ctx, 0)
		if _, rerr := conn.ExecContext(rctx, "ROLLBACK"); rerr != nil {
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		}
		cancel()
		_ = conn.Close()
		return nil, l.nodeErr("SELECT FOR UPDATE", fmt.Errorf("%v: %w", err, ErrNotAcquired))
	}
	// Unknown: the connection is discarded, and its end frees whatever
	// the statement may have taken.
	_ = conn.Raw(func(any) error { return driver.ErrBadConn })
	_ = conn.Close()
	return nil, l.nodeErr("SELECT FOR UPDATE", err)
}

// ensureRow creates key's row the first time this client uses the key. It
// reads first (a consistent read takes no lock, so it never waits behind
// a holder) and inserts only a missing row.
func (l *mysqlLock) ensureRow(ctx context.Context, key string) error {
	l.mu.Lock()
	ok := l.rows[key]
	l.mu.Unlock()
	if ok {
		return nil
	}
	qctx, cancel := l.rpc(ctx, 0)
	defer cancel()
	var n int
	if err := l.db.QueryRowContext(qctx, "SELECT COUNT(*) FROM "+MySQLLockTable+" WHERE name = ?", key).Scan(&n); err != nil {
		return l.nodeErr("find the lock row", fmt.Errorf("%v: %w", err, ErrNotAcquired))
	}
	if n == 0 {
		if _, err := l.db.ExecContext(qctx, "INSERT IGNORE INTO "+MySQLLockTable+" (name) VALUES (?)", key); err != nil {
			return l.nodeErr("create the lock row", fmt.Errorf("%v: %w", err, ErrNotAcquired))
		}
	}
	l.mu.Lock()
	l.rows[key] = true
	l.mu.Unlock()
	return nil
}

// Release pings the hold's connection, then commits (FOR UPDATE) or
// releases the named lock. A connection the server had ended before
// anything was sent held nothing: ErrNotHeld.
func (l *mysqlLock) Release(ctx context.Context, lease Lease) error {
	l.mu.Lock()
	h := l.holds[lease.Token]
	delete(l.holds, lease.Token)
	l.mu.Unlock()
	if h == nil {
		return l.nodeErr("release", fmt.Errorf("no hold with token %s on this client", lease.Token))
	}
	defer h.conn.Close()
	l.mu.Lock()
	lost := h.lost
	l.mu.Unlock()
	if lost {
		_ = h.conn.Raw(func(any) error { return driver.ErrBadConn })
		return l.nodeErr("release", fmt.Errorf("a renew had found the connection ended: %w", ErrNotHeld))
	}
	pctx, cancel := l.rpc(ctx, 0)
	err := h.conn.PingContext(pctx)
	ended := err != nil && connEnded(err, pctx)
	cancel()
	if err != nil {
		_ = h.conn.Raw(func(any) error { return driver.ErrBadConn })
		if ended {
			return l.nodeErr("release", fmt.Errorf("the server had ended the connection (%v): %w", err, ErrNotHeld))
		}
		return l.nodeErr("release", err)
	}
	rctx, cancel := l.rpc(ctx, 0)
	defer cancel()
	if h.tx {
		if _, err := h.conn.ExecContext(rctx, "COMMIT"); err != nil {
			_ = h.conn.Raw(func(any) error { return driver.ErrBadConn })
			return l.nodeErr("COMMIT", err)
		}
		return nil
	}
	var got sql.NullInt64
	if err := h.conn.QueryRowContext(rctx, "SELECT RELEASE_LOCK(?)", h.name).Scan(&got); err != nil {
		return l.nodeErr("RELEASE_LOCK", err)
	}
	if !got.Valid || got.Int64 != 1 {
		_ = h.conn.Raw(func(any) error { return driver.ErrBadConn })
		// 0: another session holds it; NULL: nobody does.
		return l.nodeErr("RELEASE_LOCK", fmt.Errorf("returned %v: %w", got, ErrNotHeld))
	}
	return nil
}

// Renew asks whether the hold's connection still lives (a ping): the
// careful client's "do I still hold it?" before it writes. A session lock
// has nothing to extend, so the lease comes back as it was; a connection
// the server has ended answers ErrNotHeld, and the hold is dropped. It
// narrows the window, it does not close it: the server may end the
// session right after the answer.
func (l *mysqlLock) Renew(ctx context.Context, lease Lease) (Lease, error) {
	l.mu.Lock()
	h := l.holds[lease.Token]
	l.mu.Unlock()
	if h == nil {
		return lease, l.nodeErr("renew", fmt.Errorf("no hold with token %s on this client", lease.Token))
	}
	pctx, cancel := l.rpc(ctx, 0)
	err := h.conn.PingContext(pctx)
	ended := err != nil && connEnded(err, pctx)
	cancel()
	if ended {
		l.mu.Lock()
		h.lost = true
		l.mu.Unlock()
		return lease, l.nodeErr("renew", fmt.Errorf("the server had ended the connection (%v): %w", err, ErrNotHeld))
	}
	if err != nil {
		return lease, l.nodeErr("renew", err)
	}
	return lease, nil
}

// connEnded reports whether err says the connection was closed under us
// (the server ended the session: EOF, reset) rather than timed out: the
// driver reports both as an invalid connection, but a timeout is our own
// context's.
func connEnded(err error, ctx context.Context) bool {
	if ctx.Err() != nil {
		return false
	}
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number == 1927 || me.Number == 1053 // killed; server shutdown
	}
	return errors.Is(err, driver.ErrBadConn) || errors.Is(err, mysql.ErrInvalidConn)
}

// Close drops every connection at once without releasing, as a crash
// does: the server sees them end and rolls back, freeing every lock.
func (l *mysqlLock) Close() error {
	l.conns.closeAll()
	return l.db.Close()
}

// connSet is the connections one client dialled, so a crash can end them.
type connSet struct {
	mu sync.Mutex
	m  map[net.Conn]struct{}
}

func (s *connSet) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	tc := &trackedConn{Conn: c, s: s}
	s.mu.Lock()
	s.m[tc] = struct{}{}
	s.mu.Unlock()
	return tc, nil
}

func (s *connSet) closeAll() {
	s.mu.Lock()
	cs := make([]net.Conn, 0, len(s.m))
	for c := range s.m {
		cs = append(cs, c)
	}
	s.mu.Unlock()
	for _, c := range cs {
		_ = c.Close()
	}
}

type trackedConn struct {
	net.Conn
	s *connSet
}

func (c *trackedConn) Close() error {
	c.s.mu.Lock()
	delete(c.s.m, c)
	c.s.mu.Unlock()
	return c.Conn.Close()
}
