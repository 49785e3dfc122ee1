package locks

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// EtcdForgetGrant makes the etcd lock l treat its lease token as if the
// acquire's outcome had been unknown (a lost reply): its Release must then
// find out whether the acquire took the lock.
func EtcdForgetGrant(l Lock, token string) {
	e := l.(*etcdLock)
	e.mu.Lock()
	defer e.mu.Unlock()
	e.holds[token].held = false
}

// EtcdWaitOnly leaves on key what an acquire whose reply was lost leaves
// when the lock was taken: a lease and a waiter's key behind the holder's.
// It returns the lease the caller would release.
func EtcdWaitOnly(ctx context.Context, l Lock, key string) (Lease, error) {
	e := l.(*etcdLock)
	lease := Lease{Key: key, Token: newToken(e.opts.Rand)}
	g, err := e.cli.Grant(ctx, e.ttl)
	if err != nil {
		return lease, err
	}
	h := &etcdHold{id: g.ID, lease: lease, done: make(chan struct{}), confirmed: time.Now(), granted: g.TTL}
	e.mu.Lock()
	e.holds[lease.Token], e.byID[g.ID] = h, h
	e.mu.Unlock()
	if h.sess, err = concurrency.NewSession(e.cli, concurrency.WithLease(g.ID), concurrency.WithContext(e.ctx)); err != nil {
		return lease, err
	}
	h.mutex = concurrency.NewMutex(h.sess, EtcdPrefix(key))
	_, err = e.cli.Put(ctx, fmt.Sprintf("%s/%x", EtcdPrefix(key), g.ID), "", clientv3.WithLease(g.ID))
	return lease, err
}

// EtcdKeys lists the keys under key's lock prefix, oldest first.
func EtcdKeys(ctx context.Context, l Lock, key string) ([]string, error) {
	e := l.(*etcdLock)
	resp, err := e.cli.Get(ctx, EtcdPrefix(key)+"/", clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, kv := range resp.Kvs {
		out = append(out, string(kv.Key))
	}
	return out, nil
}
