package locks_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/locks"
)

// TestQuorumNotHeldIsDefiniteForTheWholeLock: over three real nodes, a
// release or renew of redlock and redsync says "not held" (ErrNotHeld, a
// definite fail) only when more than N − quorum nodes answered that the
// token is not there: then it cannot be on a quorum. Nodes that answered
// with an error reply (here WRONGTYPE: the key was replaced by a hash) may
// still hold it, so with them in the count the outcome is unknown, and a
// token lost on a minority does not stop the operation.
func TestQuorumNotHeldIsDefiniteForTheWholeLock(t *testing.T) {
	type node int
	const (
		kept node = iota
		deleted
		wrongType
	)
	cases := []struct {
		nodes [3]node
		want  history.Type
	}{
		{[3]node{kept, kept, kept}, history.OK},
		{[3]node{deleted, kept, kept}, history.OK},
		{[3]node{deleted, deleted, kept}, history.Fail},
		{[3]node{deleted, deleted, deleted}, history.Fail},
		{[3]node{deleted, deleted, wrongType}, history.Fail},
		{[3]node{wrongType, wrongType, kept}, history.Info},
		{[3]node{deleted, wrongType, kept}, history.Info},
		{[3]node{wrongType, wrongType, wrongType}, history.Info},
	}
	for _, name := range []string{"redlock", "redsync"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := up(t, 3, 1)
			ctx := context.Background()
			rcs := nodeClients(t, c)
			l := newLock(t, name, nodesOf(t, c, 0), 1, locks.Options{TTL: 5 * time.Second})
			r := l.(locks.Renewer)
			for i, tc := range cases {
				for _, op := range []string{"release", "renew"} {
					key := fmt.Sprintf("notheld-%d-%s", i, op)
					lease, err := l.Acquire(ctx, key, locks.AcquireOptions{})
					if err != nil {
						t.Fatalf("acquire %s: %v", key, err)
					}
					for n, what := range tc.nodes {
						switch what {
						case deleted:
							err = rcs[n].Del(ctx, key).Err()
						case wrongType:
							err = rcs[n].Del(ctx, key).Err()
							if err == nil {
								err = rcs[n].HSet(ctx, key, "f", "v").Err()
							}
						}
						if err != nil {
							t.Fatal(err)
						}
					}
					if op == "release" {
						err = l.Release(ctx, lease)
					} else {
						_, err = r.Renew(ctx, lease)
					}
					got := locks.Outcome(err)
					if got != tc.want || (got == history.Fail) != errors.Is(err, locks.ErrNotHeld) {
						t.Errorf("%s with nodes %v: %s (%v), want %s", op, tc.nodes, got, err, tc.want)
					}
				}
			}
		})
	}
}
