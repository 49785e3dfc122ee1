package locks_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/lockharness/lockharness/locks"
)

// The scripts of rueidislock v1.0.79, sent by hand through the lock's
// hooked client as its library would send them.
const (
	rueidisExtendScript = `if redis.call("GET",KEYS[1]) == ARGV[1] then local r = redis.call("PEXPIREAT",KEYS[1],ARGV[2]);redis.call("GET",KEYS[1]);return r end;return 0`
	rueidisDeleteScript = `if redis.call("GET",KEYS[1]) == ARGV[1] then return redis.call("DEL",KEYS[1]) end;return 0`
)

// renewLog records what a lock reports through Options.OnRenew.
type renewLog struct {
	mu      sync.Mutex
	invoked int
	done    []renewDone
}

type renewDone struct {
	lease locks.Lease
	err   error
}

func (r *renewLog) onRenew(string) func(locks.Lease, error) {
	r.mu.Lock()
	r.invoked++
	r.mu.Unlock()
	return func(l locks.Lease, err error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.done = append(r.done, renewDone{l, err})
	}
}

func (r *renewLog) get() (int, []renewDone) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.invoked, append([]renewDone(nil), r.done...)
}

// rueidisScriptCall sends script on key with value and deadline through
// the lock's hooked client and returns the integer it answered.
func rueidisScriptCall(t *testing.T, l locks.Lock, script, key, value string, deadline int64) int64 {
	t.Helper()
	c := locks.RueidisClient(l)
	cmd := c.B().Eval().Script(script).Numkeys(1).Key(key).Arg(value, strconv.FormatInt(deadline, 10)).Build()
	v, err := c.Do(context.Background(), cmd).AsInt64()
	if err != nil {
		t.Fatalf("script on %s: %v", key, err)
	}
	return v
}

// rueidisKeyState is the library's value in key and the deadline (Unix
// ms) the server keeps for it, read by another client.
func rueidisKeyState(t *testing.T, l locks.Lock, key string) (string, int64) {
	t.Helper()
	c := locks.RueidisClient(l)
	ctx := context.Background()
	v, err := c.Do(ctx, c.B().Get().Key(key).Build()).ToString()
	if err != nil {
		t.Fatalf("GET %s: %v", key, err)
	}
	ms, err := c.Do(ctx, c.B().Arbitrary("PEXPIRETIME").Keys(key).Build()).AsInt64()
	if err != nil {
		t.Fatalf("PEXPIRETIME %s: %v", key, err)
	}
	return v, ms
}

// The library checks its key at once (its extension script with the
// deadline the key already has) when an invalidation of it arrives, and
// one often arrives right as the key is granted: the previous holder's
// delete, pushed just before the SET's answer. Such a check moves
// nothing; it is not a renewal. Reported as one, it put a renewal before
// the grant in the history: an orphan lock, found under load. An
// extension that moves the deadline is a renewal, with that deadline.
func TestRueidislockCheckIsNoRenewal(t *testing.T) {
	l, lease, log := heldRueidislock(t, "check")
	ctx := context.Background()
	const key = "rueidislock:0:check"
	value, deadline := rueidisKeyState(t, l, key)
	if v := rueidisScriptCall(t, l, rueidisExtendScript, key, value, deadline); v != 1 {
		t.Fatalf("the check answered %d, want 1", v)
	}
	if n, _ := log.get(); n != 0 {
		t.Fatalf("the check that moved nothing was reported as %d renewal(s)", n)
	}
	moved := deadline + 1000
	if v := rueidisScriptCall(t, l, rueidisExtendScript, key, value, moved); v != 1 {
		t.Fatalf("the extension answered %d, want 1", v)
	}
	n, done := log.get()
	if n != 1 || len(done) != 1 || done[0].err != nil {
		t.Fatalf("an extension that moved the deadline: %d invoked, %+v; want one renewal, ok", n, done)
	}
	if got := done[0].lease; got.Token != lease.Token || !got.ValidUntil.Equal(time.UnixMilli(moved)) {
		t.Errorf("renewal of %+v, want token %s until %v", got, lease.Token, time.UnixMilli(moved))
	}
	if err := l.Release(ctx, lease); err != nil {
		t.Fatalf("release: %v", err)
	}
}

// An extension and a delete of a value no hold of the client has now (a
// late one of a hold already let go, or of a try) found the key not
// theirs: they are about that value, not the lease the key's name has
// now. Attributed by name, they made the current holder's release answer
// "not held" (the library "gave it up on its own") while its delete
// removed the key: a lost lease of ours.
func TestRueidislockAttributesByValue(t *testing.T) {
	l, lease, log := heldRueidislock(t, "value")
	ctx := context.Background()
	const key = "rueidislock:0:value"
	_, deadline := rueidisKeyState(t, l, key)
	stale := rueidis.BinaryString([]byte("a value of a hold let go"))
	if v := rueidisScriptCall(t, l, rueidisExtendScript, key, stale, deadline+5000); v != 0 {
		t.Fatalf("a stale extension answered %d, want 0", v)
	}
	if v := rueidisScriptCall(t, l, rueidisDeleteScript, key, stale, deadline); v != 0 {
		t.Fatalf("a stale delete answered %d, want 0", v)
	}
	if n, done := log.get(); n != 0 {
		t.Errorf("the stale extension was reported as the holder's renewal: %+v", done)
	}
	if err := l.Release(ctx, lease); err != nil {
		t.Fatalf("release after a stale extension and delete: %v, want ok", err)
	}
	if err := l.Release(ctx, lease); !errors.Is(err, locks.ErrNotHeld) {
		t.Errorf("second release: %v, want not held", err)
	}
}

// heldRueidislock is a rueidislock client on a fresh redis-server holding
// name with a 10 s validity, its renewals logged.
func heldRueidislock(t *testing.T, name string) (locks.Lock, locks.Lease, *renewLog) {
	t.Helper()
	needRedis(t)
	t.Parallel()
	c := up(t, 1, 1)
	log := &renewLog{}
	l := newLock(t, "rueidislock", nodesOf(t, c, 0), 1, locks.Options{TTL: 10 * time.Second, OnRenew: log.onRenew})
	lease, err := l.Acquire(context.Background(), name, locks.AcquireOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return l, lease, log
}
