package locks_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockharness/lockharness/locks"
)

// TestEveryLockRecoversFromScriptFlush: for every lock, the node forgets
// its cached scripts (SCRIPT FLUSH, as after a restart or a failover)
// after each operation; the next acquire, renew and release must still
// work (EVALSHA gets NOSCRIPT, then the lock sends EVAL), never report a
// failure or "not held" (nestjs-redis#15, redlock-rb#27).
func TestEveryLockRecoversFromScriptFlush(t *testing.T) {
	needRedis(t)
	for _, name := range locks.Builtin().Names() {
		info, _ := locks.Builtin().Lookup(name)
		if info.NeedsReplicas || info.SystemName() != locks.SystemRedis {
			continue // token-wait: token's scripts, plus WAIT; etcd has no scripts
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			n := 1
			if multiNode(name) {
				n = 3
			}
			c := up(t, n, 1)
			ctx := context.Background()
			flush := func() {
				for _, s := range c.Nodes {
					if err := direct(t, s).ScriptFlush(ctx).Err(); err != nil {
						t.Fatal(err)
					}
				}
			}
			l := newLock(t, name, nodesOf(t, c, 0), 1, locks.Options{TTL: 5 * time.Second})
			for i := 0; i < 2; i++ { // the second round runs on scripts loaded again
				flush()
				lease, err := l.Acquire(ctx, "flushed", locks.AcquireOptions{})
				if err != nil {
					t.Fatalf("acquire after SCRIPT FLUSH: %v", err)
				}
				if r, ok := l.(locks.Renewer); ok {
					flush()
					if lease, err = r.Renew(ctx, lease); err != nil {
						t.Fatalf("renew after SCRIPT FLUSH: %v", err)
					}
				}
				flush()
				if err := l.Release(ctx, lease); err != nil {
					t.Fatalf("release after SCRIPT FLUSH: %v", err)
				}
			}
		})
	}
}
