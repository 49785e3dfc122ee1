package mariadb

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/sut/local"
)

// server is the MariaDB server behind the seam: a process that can be
// killed (SIGKILL; InnoDB recovers from its redo log at the restart, and
// every session and the locks it held are gone), paused, and, under
// libfaketime, have its clock set.
type server struct{ *local.Server }

func (s server) Name() string   { return s.Server.Name }
func (s server) Kind() sut.Kind { return sut.KindLock }
func (s server) Capabilities() sut.Capabilities {
	cs := sut.Capabilities{sut.CanKill, sut.CanPause}
	if s.Faked() {
		cs = append(cs, sut.CanSetClock)
	}
	return cs
}
func (s server) Kill(context.Context) error { return s.Server.Kill() }

// Start restarts a killed server on its data directory and waits until it
// answers (crash recovery included).
func (s server) Start(ctx context.Context) error {
	if s.Running() {
		return nil
	}
	if err := s.Server.Start(ctx, false); err != nil {
		return err
	}
	return s.WaitReady(ctx, readyTimeout)
}
func (s server) Pause(context.Context) error  { return s.Server.Pause() }
func (s server) Resume(context.Context) error { return s.Server.Resume() }

// ConfirmClock polls the server's clock (NOW(6), over a direct
// connection) until it reads what Clock says, within tolerance plus the
// round trip, or timeout passes; it returns the skew observed.
func (s server) ConfirmClock(ctx context.Context, tolerance, timeout time.Duration) (time.Duration, error) {
	if tolerance <= 0 {
		tolerance = 50 * time.Millisecond
	}
	db, err := sql.Open("mysql", adminDSN(s.Addr(), ""))
	if err != nil {
		return 0, err
	}
	defer db.Close()
	deadline := time.Now().Add(timeout)
	var last time.Duration
	var lastErr error
	for {
		obs, rtt, err := serverTime(ctx, db)
		if err == nil {
			want := s.Clock().SkewAt(time.Now().Add(-rtt / 2))
			last, lastErr = obs, nil
			if (obs - want).Abs() <= tolerance+rtt {
				return obs, nil
			}
		} else {
			lastErr = err
		}
		if time.Now().After(deadline) {
			if lastErr != nil {
				return 0, fmt.Errorf("confirm clock of %s: %w", s.Server.Name, lastErr)
			}
			return last, fmt.Errorf("confirm clock of %s: reads %+v from real time, want %v after %v", s.Server.Name, last, s.Clock(), timeout)
		}
		select {
		case <-ctx.Done():
			return last, fmt.Errorf("confirm clock of %s: %w", s.Server.Name, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// serverTime is how far the server's wall clock is ahead of ours, taking
// the midpoint of the round trip as the instant it was read.
func serverTime(ctx context.Context, db *sql.DB) (skew, rtt time.Duration, err error) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	var us float64
	t0 := time.Now()
	err = db.QueryRowContext(ctx, "SELECT UNIX_TIMESTAMP(NOW(6))").Scan(&us)
	t1 := time.Now()
	if err != nil {
		return 0, 0, fmt.Errorf("NOW(6): %w", err)
	}
	rtt = t1.Sub(t0)
	sec, frac := math.Modf(us)
	st := time.Unix(int64(sec), int64(frac*1e9))
	return st.Sub(t0.Add(rtt / 2)), rtt, nil
}

// ServerTime is how far the server's wall clock (NOW(6)) is ahead of
// this process's, and the round trip it took to ask.
func (c *Cluster) ServerTime(ctx context.Context) (skew, rtt time.Duration, err error) {
	return serverTime(ctx, c.Admin())
}

// KillHolder ends, with KILL CONNECTION, the session that holds key's
// lock: a named lock (GET_LOCK, found with IS_USED_LOCK) or the key's row
// in locks.MySQLLockTable held FOR UPDATE (found by waiting for the row
// as a probe and asking InnoDB which running transaction blocks it; the
// probe's session is killed first, so it never holds the row). It returns
// once the session is gone, its transaction rolled back and its locks
// freed; the client learns it only at its next command. It returns the connection
// id and where the session came from; ErrNoHolder when no session holds
// key.
func (c *Cluster) KillHolder(ctx context.Context, key string) (sut.KilledConnection, error) {
	db := c.Admin()
	var id sql.NullInt64
	if err := db.QueryRowContext(ctx, "SELECT IS_USED_LOCK(?)", locks.MySQLLockName(key)).Scan(&id); err != nil {
		return sut.KilledConnection{}, fmt.Errorf("kill holder of %s: IS_USED_LOCK: %w", key, err)
	}
	if !id.Valid {
		var err error
		if id, err = c.rowHolder(ctx, key); err != nil {
			return sut.KilledConnection{}, err
		}
	}
	if !id.Valid {
		return sut.KilledConnection{}, fmt.Errorf("kill holder of %s: %w", key, sut.ErrNoHolder)
	}
	var host sql.NullString
	_ = db.QueryRowContext(ctx, "SELECT HOST FROM information_schema.PROCESSLIST WHERE ID = ?", id.Int64).Scan(&host)
	if _, err := db.ExecContext(ctx, fmt.Sprintf("KILL CONNECTION %d", id.Int64)); err != nil {
		return sut.KilledConnection{}, fmt.Errorf("kill holder of %s: KILL CONNECTION %d: %w", key, id.Int64, err)
	}
	// KILL only marks the session: its thread rolls the transaction back
	// and frees the locks when it next looks, which on a loaded machine
	// came after a NOWAIT probe (error 1205). The kill has taken effect
	// when the session is gone from the process list.
	for {
		var n int
		if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = ?", id.Int64).Scan(&n); err != nil {
			return sut.KilledConnection{}, fmt.Errorf("kill holder of %s: wait for session %d to end: %w", key, id.Int64, err)
		}
		if n == 0 {
			break
		}
		select {
		case <-ctx.Done():
			return sut.KilledConnection{}, fmt.Errorf("kill holder of %s: session %d still there: %w", key, id.Int64, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
	return sut.KilledConnection{ID: id.Int64, From: host.String, Key: key}, nil
}

// rowHolder finds the session whose transaction holds key's row: a probe
// session asks for the row FOR UPDATE and, while it waits, InnoDB names
// the running transaction that blocks it. No holder: the probe gets the
// row at once, and rolls back.
func (c *Cluster) rowHolder(ctx context.Context, key string) (sql.NullInt64, error) {
	db := c.Admin()
	conn, err := db.Conn(ctx)
	if err != nil {
		return sql.NullInt64{}, fmt.Errorf("kill holder of %s: probe: %w", key, err)
	}
	var probe int64
	if err := conn.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&probe); err != nil {
		_ = conn.Close()
		return sql.NullInt64{}, fmt.Errorf("kill holder of %s: probe: %w", key, err)
	}
	got := make(chan error, 1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer conn.Close()
		got <- probeRow(ctx, conn, key)
	}()
	defer wg.Wait()
	return awaitBlocker(ctx, db, key, probe, got)
}

// probeRow asks for key's row FOR UPDATE on conn in a transaction it rolls
// back: it waits while another transaction holds the row, until its kill
// or for 5s (innodb_lock_wait_timeout). It runs on a context that is not
// cancelled, so that only the kill ends its wait.
func probeRow(ctx context.Context, conn *sql.Conn, key string) error {
	// The probe's wait ends with its kill (awaitBlocker), or after 5s.
	_, err := conn.ExecContext(context.WithoutCancel(ctx), "SET SESSION innodb_lock_wait_timeout = 5")
	if err == nil {
		var tx *sql.Tx
		if tx, err = conn.BeginTx(context.WithoutCancel(ctx), nil); err == nil {
			var name string
			err = tx.QueryRowContext(context.WithoutCancel(ctx), "SELECT name FROM "+locks.MySQLLockTable+" WHERE name = ? FOR UPDATE", key).Scan(&name)
			_ = tx.Rollback()
		}
	}
	return err
}

// awaitBlocker asks InnoDB, every 120ms for up to 3s, which running
// transaction blocks session probe, whose probeRow ends on got. It kills
// the probe once it has the blocker's session. The probe ending first
// means nobody held the row: no holder, and no error unless the probe
// failed.
func awaitBlocker(ctx context.Context, db *sql.DB, key string, probe int64, got <-chan error) (sql.NullInt64, error) {
	const q = `SELECT b.trx_mysql_thread_id
FROM information_schema.INNODB_LOCK_WAITS w
JOIN information_schema.INNODB_TRX r ON r.trx_id = w.requesting_trx_id
JOIN information_schema.INNODB_TRX b ON b.trx_id = w.blocking_trx_id
WHERE r.trx_mysql_thread_id = ? AND b.trx_state = 'RUNNING'`
	deadline := time.Now().Add(3 * time.Second)
	for {
		select {
		case err := <-got:
			// The probe finished: nobody held the row (or it failed).
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return sql.NullInt64{}, fmt.Errorf("kill holder of %s: probe: %w", key, err)
			}
			return sql.NullInt64{}, nil
		default:
		}
		var id sql.NullInt64
		err := db.QueryRowContext(ctx, q, probe).Scan(&id)
		if err == nil && id.Valid {
			_, kerr := db.ExecContext(ctx, fmt.Sprintf("KILL CONNECTION %d", probe))
			if kerr != nil {
				return sql.NullInt64{}, fmt.Errorf("kill holder of %s: end the probe: %w", key, kerr)
			}
			return id, nil
		}
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			_, _ = db.ExecContext(ctx, fmt.Sprintf("KILL CONNECTION %d", probe))
			return sql.NullInt64{}, fmt.Errorf("kill holder of %s: ask InnoDB: %w", key, err)
		}
		if time.Now().After(deadline) {
			waits := queryStrings(ctx, db, "SELECT CONCAT_WS(' ', requesting_trx_id, blocking_trx_id) FROM information_schema.INNODB_LOCK_WAITS")
			trxs := queryStrings(ctx, db, "SELECT CONCAT_WS(' ', ID, USER, HOST, COMMAND, IFNULL(INFO,'-')) FROM information_schema.PROCESSLIST")
			_, _ = db.ExecContext(ctx, fmt.Sprintf("KILL CONNECTION %d", probe))
			return sql.NullInt64{}, fmt.Errorf("kill holder of %s: the probe (%d) waited, but InnoDB named no blocker within 3s (waits %q, transactions %q)", key, probe, waits, trxs)
		}
		// InnoDB refreshes what information_schema shows of its locks
		// only when nobody has read it for 100ms: polling faster would
		// see the same stale picture for ever.
		time.Sleep(120 * time.Millisecond)
	}
}

// queryStrings is the one string column of every row q returns, for an
// error message: nothing when the query fails.
func queryStrings(ctx context.Context, db *sql.DB, q string) []string {
	var out []string
	rows, err := db.QueryContext(ctx, q)
	if err == nil {
		for rows.Next() {
			var s string
			_ = rows.Scan(&s)
			out = append(out, s)
		}
		rows.Close()
	}
	return out
}

// binaries are MariaDB's programs.
type binaries struct{ server, install string }

// findBinaries looks for mariadbd and mariadb-install-db on PATH, then in
// /usr/sbin and /usr/bin (Debian's places, often not on a user's PATH).
func findBinaries() (binaries, error) {
	find := func(name string) (string, error) {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
		for _, d := range []string{"/usr/sbin", "/usr/bin"} {
			p := filepath.Join(d, name)
			if st, err := os.Stat(p); err == nil && !st.IsDir() {
				return p, nil
			}
		}
		return "", fmt.Errorf("%w: %s not found on PATH or in /usr/sbin; %s", local.ErrMissingBinary, name, InstallHint)
	}
	var b binaries
	var err error
	if b.server, err = find("mariadbd"); err != nil {
		return b, err
	}
	if b.install, err = find("mariadb-install-db"); err != nil {
		return b, err
	}
	return b, nil
}

// bootstrap are the options the template is built with; the server must
// start with the same InnoDB file sizes.
var bootstrap = []string{
	"--auth-root-authentication-method=normal", "--skip-test-db",
	"--innodb-log-file-size=4M", "--innodb-data-file-path=ibdata1:4M:autoextend",
	"--innodb-buffer-pool-size=8M", "--skip-log-bin",
}

var templateMu sync.Mutex

// template returns the template data directory, building it on first use:
// mariadb-install-db, then one start of the server to create the harness's
// database, user and tables, and a clean shutdown. It lives in the user's
// cache directory under a name that hashes the server's version and the
// bootstrap options, and is built aside and renamed into place, so
// concurrent builds (several test binaries) are safe.
func template(ctx context.Context, b binaries) (string, error) {
	templateMu.Lock()
	defer templateMu.Unlock()
	dir, err := templateDir(b)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(dir, "ready")); err == nil {
		return dir, nil
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", fmt.Errorf("mariadb template: %w", err)
	}
	work, err := os.MkdirTemp(filepath.Dir(dir), "mariadb-build-")
	if err != nil {
		return "", fmt.Errorf("mariadb template: %w", err)
	}
	defer os.RemoveAll(work)
	data := filepath.Join(work, "data")
	if err := buildTemplate(ctx, b, work, data); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(data, "ready"), nil, 0o644); err != nil {
		return "", fmt.Errorf("mariadb template: %w", err)
	}
	if err := os.Rename(data, dir); err != nil {
		if _, serr := os.Stat(filepath.Join(dir, "ready")); serr == nil {
			return dir, nil // another process built it first
		}
		return "", fmt.Errorf("mariadb template: %w", err)
	}
	return dir, nil
}

// templateDir is where the template of the server b runs lives: in the
// user's cache directory (else the temporary one), under a name that
// hashes the server's version, the bootstrap options and the schema.
func templateDir(b binaries) (string, error) {
	ver, err := exec.Command(b.server, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("%s --version: %w", b.server, err)
	}
	sum := sha256.Sum256([]byte(string(ver) + strings.Join(bootstrap, " ") + schemaSQL))
	base, err := os.UserCacheDir()
	if err != nil || base == "" {
		base = os.TempDir()
	}
	return filepath.Join(base, "lockharness", "mariadb-"+hex.EncodeToString(sum[:8])), nil
}

// buildTemplate makes the data directory data (in work) with
// mariadb-install-db, starts a server on it once to create the schema, and
// shuts it down cleanly, so that each start has nothing to recover.
func buildTemplate(ctx context.Context, b binaries, work, data string) error {
	// --no-defaults must come first.
	args := append([]string{"--no-defaults", "--datadir=" + data, "--user=" + currentUser()}, bootstrap...)
	if out, err := exec.CommandContext(ctx, b.install, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("mariadb template: mariadb-install-db: %w: %s", err, lastLines(string(out), 5))
	}
	port, err := local.FreePort()
	if err != nil {
		return err
	}
	s := &local.Server{Name: "template", Port: port, Binary: b.server, Dir: work, Output: true, Config: optionFile(work, port, "")}
	s.Args = []string{"--defaults-file=" + s.ConfigPath()}
	defer s.Kill()
	if err := s.Start(ctx, false); err != nil {
		return err
	}
	admin, err := openAdmin(s.Addr(), "")
	if err != nil {
		return err
	}
	defer admin.Close()
	s.Ready = func(ctx context.Context) error { return admin.PingContext(ctx) }
	if err := s.WaitReady(ctx, readyTimeout); err != nil {
		return fmt.Errorf("mariadb template: %w", err)
	}
	for _, stmt := range strings.Split(schemaSQL, ";") {
		if stmt = strings.TrimSpace(stmt); stmt == "" {
			continue
		}
		if _, err := admin.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("mariadb template: %s: %w", stmt, err)
		}
	}
	// A clean shutdown leaves nothing to recover at each start.
	if _, err := admin.ExecContext(ctx, "SHUTDOWN"); err != nil {
		return fmt.Errorf("mariadb template: SHUTDOWN: %w", err)
	}
	for s.Running() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	for _, f := range []string{"ib_buffer_pool"} {
		_ = os.Remove(filepath.Join(data, f))
	}
	return nil
}

// schemaSQL is what every server starts with: the harness's database, the
// locks' user (no password, loopback only) and the tables of lock rows and
// fencing tokens.
var schemaSQL = fmt.Sprintf(`
CREATE DATABASE %[1]s;
CREATE USER '%[2]s'@'127.0.0.1';
GRANT ALL ON %[1]s.* TO '%[2]s'@'127.0.0.1';
CREATE TABLE %[1]s.%[3]s (name VARBINARY(191) NOT NULL PRIMARY KEY) ENGINE=InnoDB;
CREATE TABLE %[1]s.%[4]s (id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY) ENGINE=InnoDB;
`, locks.MySQLDatabase, locks.MySQLUser, locks.MySQLLockTable, locks.MySQLFenceTable)

// copyDir copies the template into a server's data directory, keeping
// holes (ibdata1 is mostly empty: 6.6MB of 78MB), which makes a start
// take a tenth of a second rather than most of a second.
func copyDir(from, to string) error {
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return fmt.Errorf("copy mariadb template: %w", err)
	}
	out, err := exec.Command("cp", "-r", "--sparse=always", from, to).CombinedOutput()
	if err != nil {
		return fmt.Errorf("copy mariadb template %s: %w: %s", from, err, out)
	}
	_ = os.Remove(filepath.Join(to, "ready"))
	return nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// Available reports whether MariaDB's programs are installed (an error
// wrapping local.ErrMissingBinary that says how to get them when not).
func Available() error {
	_, err := findBinaries()
	return err
}
