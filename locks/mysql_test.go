package locks_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/sut/mariadb"
	"github.com/lockharness/lockharness/sut/mariadb/mariadbtest"
)

var mysqlLocks = []string{"mysql-for-update", "mysql-fenced", "mysql-get-lock"}

func mariadbServer(t testing.TB, clients int, extra string) *mariadb.Cluster {
	t.Helper()
	return mariadbtest.Up(t, sut.Config{Clients: clients, ExtraConfig: extra})
}

func mysqlNodes(c *mariadb.Cluster, cl int) []sut.ClientNode {
	return c.ClientNodes(cl, sut.ClientOptions{Timeout: 2 * time.Second})
}

// Each MySQL lock excludes: a second client is refused while the first
// holds and gets the lock once it is released; no lease has a deadline;
// the fenced one's token grows with every grant.
func TestMySQLLocksExclude(t *testing.T) {
	c := mariadbServer(t, 2, "")
	for _, name := range mysqlLocks {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			a := newLock(t, name, mysqlNodes(c, 0), 1, locks.Options{})
			b := newLock(t, name, mysqlNodes(c, 1), 2, locks.Options{})
			key := "exclude-" + name
			la, err := a.Acquire(ctx, key, locks.AcquireOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if la.Expires() {
				t.Errorf("lease has a deadline %v; a session lock has none", la.ValidUntil)
			}
			if _, err := b.Acquire(ctx, key, locks.AcquireOptions{}); !errors.Is(err, locks.ErrNotAcquired) {
				t.Fatalf("second acquire: %v, want not acquired", err)
			}
			if _, err := b.Acquire(ctx, key, locks.AcquireOptions{Wait: 200 * time.Millisecond}); err == nil {
				t.Fatal("a waiting acquire got the lock while it was held")
			}
			released := make(chan error, 1)
			go func() {
				time.Sleep(300 * time.Millisecond)
				released <- a.Release(ctx, la)
			}()
			lb, err := b.Acquire(ctx, key, locks.AcquireOptions{Wait: 3 * time.Second})
			if err != nil {
				t.Fatalf("waiting acquire: %v", err)
			}
			if err := <-released; err != nil {
				t.Fatal(err)
			}
			checkFencesAndRelease(t, ctx, b, la, lb, name == "mysql-fenced")
		})
	}
}

// Mutual exclusion under contention: ten clients on one key, each
// counting how many are inside at once.
func TestMySQLLocksMutualExclusion(t *testing.T) {
	const clients = 10
	c := mariadbServer(t, clients, "")
	for _, name := range mysqlLocks {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			var mu sync.Mutex
			inside, most, grants := 0, 0, 0
			errs := make(chan error, clients)
			var wg sync.WaitGroup
			for i := 0; i < clients; i++ {
				l := newLock(t, name, mysqlNodes(c, i), uint64(i), locks.Options{})
				wg.Add(1)
				go func() {
					defer wg.Done()
					for j := 0; j < 20; j++ {
						lease, err := l.Acquire(ctx, "contended-"+name, locks.AcquireOptions{Wait: 5 * time.Second})
						if errors.Is(err, locks.ErrNotAcquired) {
							continue
						}
						if err != nil {
							errs <- err
							return
						}
						mu.Lock()
						inside++
						grants++
						most = max(most, inside)
						mu.Unlock()
						time.Sleep(time.Millisecond)
						mu.Lock()
						inside--
						mu.Unlock()
						if err := l.Release(ctx, lease); err != nil {
							errs <- err
							return
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			if most != 1 {
				t.Fatalf("%d clients inside at once", most)
			}
			if grants < clients {
				t.Fatalf("only %d grants", grants)
			}
			t.Logf("%d grants, one holder at a time", grants)
		})
	}
}

// A holder whose session the server kills loses the lock at once and
// learns it at its release: "not held". Another client gets the lock
// meanwhile.
func TestMySQLLocksLostAfterKill(t *testing.T) {
	c := mariadbServer(t, 2, "")
	for _, name := range mysqlLocks {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			a := newLock(t, name, mysqlNodes(c, 0), 1, locks.Options{})
			b := newLock(t, name, mysqlNodes(c, 1), 2, locks.Options{})
			key := "kill-" + name
			la, err := a.Acquire(ctx, key, locks.AcquireOptions{})
			if err != nil {
				t.Fatal(err)
			}
			k, err := c.KillHolder(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			lb, err := b.Acquire(ctx, key, locks.AcquireOptions{Wait: 2 * time.Second})
			if err != nil {
				t.Fatalf("after the holder's kill (%+v): %v", k, err)
			}
			if err := a.Release(ctx, la); !errors.Is(err, locks.ErrNotHeld) {
				t.Fatalf("the killed holder's release: %v, want not held", err)
			} else {
				t.Logf("killed holder's release: %v", err)
			}
			if err := b.Release(ctx, lb); err != nil {
				t.Fatal(err)
			}
			// The killed client goes on with a fresh connection.
			la, err = a.Acquire(ctx, key, locks.AcquireOptions{})
			if err != nil {
				t.Fatalf("the killed client's next acquire: %v", err)
			}
			if err := a.Release(ctx, la); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A crash (Close without releasing) ends the client's connections, and
// the server frees its locks: a session lock never deadlocks on a dead
// client, unlike naive SETNX.
func TestMySQLLocksFreedByCrash(t *testing.T) {
	c := mariadbServer(t, 2, "")
	for _, name := range mysqlLocks {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			info, err := locks.Builtin().Lookup(name)
			if err != nil {
				t.Fatal(err)
			}
			a, err := info.New(mysqlNodes(c, 0), locks.Options{})
			if err != nil {
				t.Fatal(err)
			}
			b := newLock(t, name, mysqlNodes(c, 1), 2, locks.Options{})
			key := "crash-" + name
			if _, err := a.Acquire(ctx, key, locks.AcquireOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := a.(locks.Closer).Close(); err != nil {
				t.Fatal(err)
			}
			lb, err := b.Acquire(ctx, key, locks.AcquireOptions{Wait: 2 * time.Second})
			if err != nil {
				t.Fatalf("after the holder's crash: %v", err)
			}
			if err := b.Release(ctx, lb); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// innodb_lock_wait_timeout, the server's knob, ends a FOR UPDATE wait
// before the client's own: a definite refusal after about a second,
// although the client would have waited five.
func TestMySQLForUpdateLockWaitTimeout(t *testing.T) {
	c := mariadbServer(t, 2, "innodb_lock_wait_timeout=1")
	ctx := context.Background()
	a := newLock(t, "mysql-for-update", mysqlNodes(c, 0), 1, locks.Options{})
	b := newLock(t, "mysql-for-update", mysqlNodes(c, 1), 2, locks.Options{})
	la, err := a.Acquire(ctx, "wait", locks.AcquireOptions{})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = b.Acquire(ctx, "wait", locks.AcquireOptions{Wait: 5 * time.Second})
	waited := time.Since(start)
	if !errors.Is(err, locks.ErrNotAcquired) {
		t.Fatalf("waiter: %v, want not acquired", err)
	}
	if waited < 900*time.Millisecond || waited > 4*time.Second {
		t.Fatalf("waiter gave up after %v, want innodb_lock_wait_timeout's 1s", waited)
	}
	t.Logf("gave up after %v: %v", waited, err)
	if err := a.Release(ctx, la); err != nil {
		t.Fatal(err)
	}
}

// Renew is a ping: ok while the connection lives, "not held" once the
// server has ended it, and the release then says "not held" too.
func TestMySQLRenewSeesTheKill(t *testing.T) {
	c := mariadbServer(t, 1, "")
	ctx := context.Background()
	l := newLock(t, "mysql-for-update", mysqlNodes(c, 0), 1, locks.Options{}).(locks.Renewer)
	lease, err := l.Acquire(ctx, "renew", locks.AcquireOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Renew(ctx, lease); err != nil {
		t.Fatalf("renew of a live hold: %v", err)
	}
	if _, err := c.KillHolder(ctx, "renew"); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Renew(ctx, lease); !errors.Is(err, locks.ErrNotHeld) {
		t.Fatalf("renew after the kill: %v, want not held", err)
	}
	if err := l.Release(ctx, lease); !errors.Is(err, locks.ErrNotHeld) {
		t.Fatalf("release after the kill: %v, want not held", err)
	}
}
