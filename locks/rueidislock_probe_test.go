package locks_test

import (
	"context"
	"errors"
	"os"
	"reflect"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"
)

// The library's lost wakeup (docs/real-libraries.md), probed in the
// library alone (no hook): rueidislock's try() starts a failed key's
// monitoring goroutine before it counts the failure, and a goroutine that
// runs first takes the try for a held lock's end: it decrements the
// name's gate and, at zero, removes it from the Locker. A waiter of that
// Locker then waits on a gate no invalidation reaches: it is not woken
// when the lock is released. The probe keeps one WithContext waiter on a
// held key, fails TryWithContext on it until the gate is gone (reading
// the Locker's private gates by reflection), releases, and checks the
// waiter sleeps on. Timing-dependent (a few thousand tries under
// stress-ng --cpu 2), so opt-in: LOCKHARNESS_RUEIDIS_PROBE=1; skipped,
// saying so, if the race did not happen within 60s.
func TestRueidislockLostWakeupProbe(t *testing.T) {
	if os.Getenv("LOCKHARNESS_RUEIDIS_PROBE") == "" {
		t.Skip("timing-dependent probe of the library; set LOCKHARNESS_RUEIDIS_PROBE=1 to run it")
	}
	needRedis(t)
	c := up(t, 1, 1)
	addr := nodesOf(t, c, 0)[0].Addr
	holder, waiter := probeLocker(t, addr), probeLocker(t, addr)
	ctx := context.Background()
	_, release, err := holder.TryWithContext(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithTimeout(ctx, 90*time.Second)
	defer stop()
	woke := make(chan error, 1)
	go func() {
		_, cancel, err := waiter.WithContext(wctx, "k")
		if err == nil {
			cancel()
		}
		woke <- err
	}()
	gate := probeGates(waiter)
	deadline := time.Now().Add(5 * time.Second)
	for gate() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	g0 := gate()
	tries, start := 0, time.Now()
	for gate() == g0 && time.Since(start) < 60*time.Second {
		if _, _, err := waiter.TryWithContext(ctx, "k"); !errors.Is(err, rueidislock.ErrNotLocked) {
			t.Fatalf("try %d: %v", tries, err)
		}
		tries++
	}
	if gate() == g0 {
		release()
		t.Skipf("the race did not happen in %d tries (%v)", tries, time.Since(start))
	}
	t.Logf("the gate was removed after %d failed tries (%v)", tries, time.Since(start))
	release()
	select {
	case err := <-woke:
		t.Errorf("the waiter woke after the release (%v): the gate's removal did not strand it", err)
	case <-time.After(5 * time.Second):
		t.Logf("reproduced: the waiter was not woken in the 5s after the lock was released")
	}
}

func probeLocker(t *testing.T, addr string) rueidislock.Locker {
	t.Helper()
	l, err := rueidislock.NewLocker(rueidislock.LockerOption{
		ClientOption: rueidis.ClientOption{InitAddress: []string{addr}, ForceSingleClient: true},
		KeyValidity:  10 * time.Second, KeyMajority: 1, NoLoopTracking: true, TryNextAfter: 2 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	return l
}

// probeGates returns a function reading the address of l's gate of "k"
// (0 when it has none), under the Locker's own lock.
func probeGates(l rueidislock.Locker) func() uintptr {
	v := reflect.ValueOf(l).Elem()
	private := func(v reflect.Value, name string) reflect.Value {
		f := v.FieldByName(name)
		return reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem()
	}
	mu := (*sync.RWMutex)(unsafe.Pointer(private(v, "mu").UnsafeAddr()))
	gates := private(v, "gates")
	return func() uintptr {
		mu.RLock()
		defer mu.RUnlock()
		if g := gates.MapIndex(reflect.ValueOf("k")); g.IsValid() {
			return g.Pointer()
		}
		return 0
	}
}
