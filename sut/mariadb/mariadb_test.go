package mariadb_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/sut/local"
	"github.com/lockharness/lockharness/sut/mariadb"
	"github.com/lockharness/lockharness/sut/mariadb/mariadbtest"
)

func open(t *testing.T, addr string) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", locks.MySQLDSN(addr, time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// The server comes up with the schema, every client through its own link,
// and a cut link stops that client alone.
func TestUpLinksAndSchema(t *testing.T) {
	c := mariadbtest.Up(t, sut.Config{Clients: 2})
	ctx := context.Background()
	if err := c.Healthy(ctx); err != nil {
		t.Fatal(err)
	}
	a, b := open(t, c.Endpoints(0)[0].Addr), open(t, c.Endpoints(1)[0].Addr)
	for _, db := range []*sql.DB{a, b} {
		var n int
		if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+locks.MySQLLockTable).Scan(&n); err != nil {
			t.Fatal(err)
		}
	}
	l, err := c.Network().Link("c0", mariadb.NodeName)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Cut(); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	a.SetMaxIdleConns(0)
	if err := a.PingContext(cctx); err == nil {
		t.Fatal("c0 reached the server through its cut link")
	}
	if err := b.PingContext(ctx); err != nil {
		t.Fatalf("c1 cut off with c0: %v", err)
	}
	if _, err := c.Heal(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.PingContext(ctx); err != nil {
		t.Fatalf("after heal: %v", err)
	}
}

// KillHolder finds the session holding a row FOR UPDATE (no waiter) or a
// named lock, and ends it: the holder's next command fails and the row is
// free for another at once.
func TestKillHolder(t *testing.T) {
	c := mariadbtest.Up(t, sut.Config{Clients: 2})
	ctx := context.Background()
	db := open(t, c.Endpoints(0)[0].Addr)
	if _, err := db.ExecContext(ctx, "INSERT INTO "+locks.MySQLLockTable+" VALUES ('k')"); err != nil {
		t.Fatal(err)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var name string
	if _, err := conn.ExecContext(ctx, "START TRANSACTION"); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRowContext(ctx, "SELECT name FROM "+locks.MySQLLockTable+" WHERE name='k' FOR UPDATE").Scan(&name); err != nil {
		t.Fatal(err)
	}
	k, err := c.KillHolder(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("killed %+v", k)
	other := open(t, c.Endpoints(1)[0].Addr)
	tx, err := other.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.QueryRowContext(ctx, "SELECT name FROM "+locks.MySQLLockTable+" WHERE name='k' FOR UPDATE NOWAIT").Scan(&name); err != nil {
		t.Fatalf("the row is not free after the holder's kill: %v", err)
	}
	_ = tx.Rollback()
	if _, err := conn.ExecContext(ctx, "COMMIT"); err == nil {
		t.Fatal("the killed holder's COMMIT succeeded")
	} else {
		t.Logf("the killed holder's COMMIT: %v", err)
	}
	if _, err := c.KillHolder(ctx, "k"); !errors.Is(err, sut.ErrNoHolder) {
		t.Fatalf("KillHolder of a free row: %v, want ErrNoHolder", err)
	}
	// A named lock.
	nc, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	var got int
	if err := nc.QueryRowContext(ctx, "SELECT GET_LOCK(?, 0)", locks.MySQLLockName("n")).Scan(&got); err != nil || got != 1 {
		t.Fatalf("GET_LOCK: %d %v", got, err)
	}
	if _, err := c.KillHolder(ctx, "n"); err != nil {
		t.Fatal(err)
	}
	if err := nc.PingContext(ctx); err == nil {
		t.Fatal("the killed session still answers")
	}
}

// Pause, kill and restart through the seam: a paused server answers
// nothing; a killed one comes back (crash recovery) with its tables.
func TestPauseKillRestart(t *testing.T) {
	c := mariadbtest.Up(t, sut.Config{})
	ctx := context.Background()
	n, err := c.Node(mariadb.NodeName)
	if err != nil {
		t.Fatal(err)
	}
	p, err := sut.As[sut.Pauser](n, sut.CanPause)
	if err != nil {
		t.Fatal(err)
	}
	db := open(t, c.Endpoints(0)[0].Addr)
	db.SetMaxIdleConns(0)
	if err := p.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	pctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if err := db.PingContext(pctx); err == nil {
		t.Fatal("a paused server answered")
	}
	if err := p.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	if err := db.PingContext(ctx); err != nil {
		t.Fatalf("after resume: %v", err)
	}
	if _, err := db.ExecContext(ctx, "INSERT INTO "+locks.MySQLLockTable+" VALUES ('kept')"); err != nil {
		t.Fatal(err)
	}
	k, err := sut.As[sut.Killer](n, sut.CanKill)
	if err != nil {
		t.Fatal(err)
	}
	if err := k.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	if k.Running() {
		t.Fatal("running after kill")
	}
	start := time.Now()
	if err := k.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("restart after SIGKILL (crash recovery): %v", time.Since(start))
	var cnt int
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+locks.MySQLLockTable+" WHERE name='kept'").Scan(&cnt); err != nil || cnt != 1 {
		t.Fatalf("after restart: %d rows, %v", cnt, err)
	}
	if err := c.Healthy(ctx); err != nil {
		t.Fatal(err)
	}
}

// mariadbd reads the time through libc, so libfaketime sets its clock:
// a jump of an hour shows in NOW(), and back again.
func TestClockJump(t *testing.T) {
	if _, err := local.Libfaketime(); err != nil {
		t.Skip(err)
	}
	c := mariadbtest.Up(t, sut.Config{Faketime: true})
	ctx := context.Background()
	n, err := c.Node(mariadb.NodeName)
	if err != nil {
		t.Fatal(err)
	}
	clk, err := sut.As[sut.Clocked](n, sut.CanSetClock)
	if err != nil {
		t.Fatal(err)
	}
	for _, skew := range []time.Duration{time.Hour, -time.Hour, 0} {
		if err := clk.SetClock(skew, 1); err != nil {
			t.Fatal(err)
		}
		obs, err := clk.ConfirmClock(ctx, 100*time.Millisecond, 3*time.Second)
		if err != nil {
			t.Fatalf("skew %v: %v", skew, err)
		}
		got, _, err := c.ServerTime(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if (got - skew).Abs() > time.Second {
			t.Fatalf("skew %v: NOW() is %v off", skew, got)
		}
		t.Logf("skew %v: confirmed %v", skew, obs)
	}
}

// With no template cached, Up builds one (mariadb-install-db, the schema,
// a clean shutdown) in the user's cache directory, leaving nothing of the
// build beside it, and the next Up uses it as it is.
func TestTemplateBuiltWhenNoneIsCached(t *testing.T) {
	mariadbtest.Require(t)
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	ctx := context.Background()
	built := func() string {
		t.Helper()
		dirs, err := filepath.Glob(filepath.Join(cache, "lockharness", "mariadb-*"))
		if err != nil || len(dirs) != 1 {
			t.Fatalf("the cache holds %v (%v), want one template and nothing of its build", dirs, err)
		}
		if _, err := os.Stat(filepath.Join(dirs[0], "ready")); err != nil {
			t.Fatalf("the template is not marked ready: %v", err)
		}
		if _, err := os.Stat(filepath.Join(dirs[0], "ib_buffer_pool")); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("the template keeps ib_buffer_pool: %v", err)
		}
		return dirs[0]
	}
	var readyAt time.Time
	for round := 0; round < 2; round++ {
		c := mariadbtest.Up(t, sut.Config{Clients: 1})
		if err := c.Healthy(ctx); err != nil {
			t.Fatal(err)
		}
		var n int
		if err := open(t, c.Endpoints(0)[0].Addr).QueryRowContext(ctx, "SELECT COUNT(*) FROM "+locks.MySQLLockTable).Scan(&n); err != nil {
			t.Fatalf("round %d: the schema: %v", round, err)
		}
		st, err := os.Stat(filepath.Join(built(), "ready"))
		if err != nil {
			t.Fatal(err)
		}
		if round == 1 && !st.ModTime().Equal(readyAt) {
			t.Fatalf("the second Up built the template again (ready at %v, then %v)", readyAt, st.ModTime())
		}
		readyAt = st.ModTime()
		if err := c.Down(); err != nil {
			t.Fatal(err)
		}
	}
}
