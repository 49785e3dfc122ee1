package adapter_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/locks/adapter"
	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/sut/etcd/etcdtest"
)

// python-etcd3 0.12.0 as Debian ships it: a contended Lock.acquire with a
// timeout crashes inside the library (its retry callback has tenacity's
// old signature; Debian ships tenacity 8). The adapter, told to wait as
// the library does (LOCKHARNESS_ETCD3_LIBRARY_WAIT=1), answers the crash
// unknown with the library's error; its default, polling
// acquire(timeout=0), waits and is granted when the holder releases.
func TestEtcd3ContendedAcquireWithTimeoutCrashesInTheLibrary(t *testing.T) {
	requireLib(t, "python-etcd3")
	c := etcdtest.Up(t, sut.Config{Nodes: 1, Clients: 2})
	spec := shipped(t, "python-etcd3")
	open := func(client int64, env ...string) locks.Lock {
		s := spec
		s.Env = env
		nodes := c.ClientNodes(int(client), sut.ClientOptions{Timeout: time.Second})
		t.Cleanup(func() { sut.CloseClientNodes(nodes) })
		l, err := adapter.Factory(s)(nodes, locks.Options{TTL: 2 * time.Second, Dir: t.TempDir(), Client: client, Rand: rand.New(rand.NewPCG(uint64(client), 1))})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = l.(locks.Closer).Close() })
		return l
	}
	ctx := context.Background()
	holder, library, polling := open(0), open(1, "LOCKHARNESS_ETCD3_LIBRARY_WAIT=1"), open(1)
	lease, err := holder.Acquire(ctx, "k", locks.AcquireOptions{})
	if err != nil {
		t.Fatalf("uncontended acquire: %v", err)
	}
	_, err = library.Acquire(ctx, "k", locks.AcquireOptions{Wait: time.Second})
	if !errors.Is(err, adapter.ErrUnknown) || !strings.Contains(err.Error(), "TypeError") || !strings.Contains(err.Error(), "delay_since_first_attempt") {
		t.Fatalf("library wait on a held key: %v, want unknown with the library's TypeError", err)
	}
	t.Logf("as the library ships: %v", err)
	go func() {
		time.Sleep(300 * time.Millisecond)
		_ = holder.Release(ctx, lease)
	}()
	start := time.Now()
	got, err := polling.Acquire(ctx, "k", locks.AcquireOptions{Wait: 3 * time.Second})
	if err != nil {
		t.Fatalf("polling wait: %v", err)
	}
	t.Logf("the adapter's polling wait was granted after %v, validity %v", time.Since(start).Round(time.Millisecond), time.Until(got.ValidUntil).Round(time.Millisecond))
}
