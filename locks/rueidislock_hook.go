package locks

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/rueidis"
)

// The scripts of rueidislock v1.0.79 (lock.go) the hook recognises, by
// their text (EVAL) and SHA-1 (EVALSHA). A library upgrade that changes
// them shows in TestRueidislockReportsItsExtensions.
var (
	rueidisScripts = map[string]rueidisScript{}
	rueidisTexts   = map[string]string{} // by SHA-1
)

type rueidisScript int

const (
	rueidisOther rueidisScript = iota
	rueidisAcquire
	rueidisExtend
	rueidisDelete
)

func init() {
	for text, kind := range map[string]rueidisScript{
		`local r = redis.call("SET",KEYS[1],ARGV[1],"NX","PXAT",ARGV[2]);redis.call("GET",KEYS[1]);return r`:                                             rueidisAcquire,
		`local r = redis.call("SET",KEYS[1],ARGV[1],"NX","PX",ARGV[2]);redis.call("GET",KEYS[1]);return r`:                                               rueidisAcquire,
		`if redis.call("GET",KEYS[1]) == ARGV[1] then local r = redis.call("PEXPIREAT",KEYS[1],ARGV[2]);redis.call("GET",KEYS[1]);return r end;return 0`: rueidisExtend,
		`if redis.call("GET",KEYS[1]) == ARGV[1] then return redis.call("DEL",KEYS[1]) end;return 0`:                                                     rueidisDelete,
	} {
		sum := sha1.Sum([]byte(text))
		rueidisScripts[text] = kind
		rueidisScripts[hex.EncodeToString(sum[:])] = kind
		rueidisTexts[hex.EncodeToString(sum[:])] = text
	}
}

// rueidisHook is the rueidis client rueidislock is given: the real one,
// with every script call of the library watched on its way (see
// rueidisLock). Its state is shared by the library's goroutines.
//
// Every script of the library names its key and its value (ARGV[1]), a
// random string per try, and acts only if the key holds that value; so
// the hook attributes each extension and delete to the hold whose value it
// carries, not to whatever hold the key's name has now. A hold is made
// when the server answers a try's SET NX, before the library hears of it,
// so everything the library does with that value is seen.
type rueidisHook struct {
	rueidis.Client
	opts Options

	mu      sync.Mutex
	dead    bool
	holds   map[string]*rueidisHold // by the library's value
	byToken map[string]*rueidisHold // the same holds once granted, by lease token
	tries   map[string]*rueidisTry  // acquires in flight, by lock name
}

// rueidisHold is one lock the server granted: its lease and what the
// library did with it since.
type rueidisHold struct {
	value  string             // the library's value in the key
	cancel context.CancelFunc // the library's release, once granted

	mu        sync.Mutex
	lease     Lease     // the lease (Token, Key) and its ValidUntil as reported
	server    time.Time // the deadline the server keeps: the last PXAT/PEXPIREAT answered 1
	granted   bool      // the acquire has returned it to its caller
	releasing bool
	extErr    error // the last extension's error
	lost      bool  // an extension found the key not ours
	delSeen   bool  // the library's compare-and-delete ran
	delBefore bool  // … before Release asked for it
	delOK     bool  // … and removed the key
	delErr    error // … or got no answer
}

// rueidisTry is what the server answered an acquire's tries.
type rueidisTry struct {
	lease       Lease        // the lease the acquire returns if granted
	deadline    time.Time    // the PXAT of the last try sent
	heldByOther bool         // the last try's SET NX answered nil
	lastErr     error        // the last try's error, if any
	hold        *rueidisHold // the hold of the try the server granted, if any
}

func (h *rueidisHook) beginTry(lease Lease) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.tries[lease.Key] = &rueidisTry{lease: lease}
}

// endTry ends the acquire of name: a hold its tries made that the library
// did not return (granted, then given up as the try ran out of time) is
// forgotten, the library having deleted it before returning.
func (h *rueidisHook) endTry(name string, granted bool) rueidisTry {
	h.mu.Lock()
	defer h.mu.Unlock()
	t := h.tries[name]
	delete(h.tries, name)
	if t == nil {
		return rueidisTry{}
	}
	if !granted && t.hold != nil && h.holds[t.hold.value] == t.hold {
		delete(h.holds, t.hold.value)
	}
	return *t
}

// grant hands hold r to its caller: from now its extensions that move the
// deadline are renewals of lease. An extension answered while the acquire
// was in flight that moved the server's deadline past the acquire's is the
// lease's deadline (the library's promise, before the grant returned).
func (h *rueidisHook) grant(r *rueidisHold, lease Lease, acquired time.Time, cancel context.CancelFunc) Lease {
	r.mu.Lock()
	if r.server.After(acquired) {
		lease.ValidUntil = r.server
	}
	r.lease, r.cancel, r.granted = lease, cancel, true
	r.mu.Unlock()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.byToken[lease.Token] = r
	return lease
}

// find returns the hold of lease, nil when there is none.
func (h *rueidisHook) find(lease Lease) *rueidisHold {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := h.byToken[lease.Token]
	if r == nil || r.lease.Key != lease.Key {
		return nil
	}
	return r
}

// drop forgets hold r once released.
func (h *rueidisHook) drop(r *rueidisHold) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.holds[r.value] == r {
		delete(h.holds, r.value)
	}
	if h.byToken[r.lease.Token] == r {
		delete(h.byToken, r.lease.Token)
	}
}

// holdOf is the hold whose value is value, nil when none is.
func (h *rueidisHook) holdOf(value string) *rueidisHold {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.holds[value]
}

func (h *rueidisHook) kill() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.dead = true
}

// Do sends cmd, noting what the library's scripts asked and got.
func (h *rueidisHook) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	h.mu.Lock()
	dead := h.dead
	h.mu.Unlock()
	if dead {
		return rueidis.NewErrorResult(fmt.Errorf("client crashed: %w", net.ErrClosed))
	}
	c := rueidisClassify(cmd.Commands())
	switch c.kind {
	case rueidisAcquire:
		resp := h.Client.Do(ctx, cmd)
		h.noteAcquire(c, resp.Error())
		return resp
	case rueidisExtend:
		return h.extend(ctx, cmd, c)
	case rueidisDelete:
		resp := h.Client.Do(ctx, cmd)
		v, err := resp.AsInt64()
		h.noteDelete(c.value, v == 1, err)
		return resp
	}
	return h.Client.Do(ctx, cmd)
}

// rueidisCall is one of the library's script calls as the hook reads it.
type rueidisCall struct {
	kind     rueidisScript
	name     string    // the lock's name
	value    string    // the library's value (ARGV[1])
	deadline time.Time // the PXAT/PEXPIREAT deadline, zero for a PX TTL
}

// rueidisClassify recognises a library script call: EVALSHA sha or EVAL
// script, one key "prefix:i:name", then the value and a deadline in Unix
// milliseconds (PXAT, PEXPIREAT) or a TTL (PX, the fallback: no deadline).
func rueidisClassify(args []string) rueidisCall {
	if len(args) != 6 || (args[0] != "EVALSHA" && args[0] != "EVAL") || args[2] != "1" {
		return rueidisCall{}
	}
	kind := rueidisScripts[args[1]]
	parts := strings.SplitN(args[3], ":", 3)
	if kind == rueidisOther || len(parts) != 3 {
		return rueidisCall{}
	}
	c := rueidisCall{kind: kind, name: parts[2], value: args[4]}
	if ms, err := strconv.ParseInt(args[5], 10, 64); err == nil && ms > 1e12 {
		c.deadline = time.UnixMilli(ms)
	}
	return c
}

// noteAcquire notes a try's answer; one the server granted (SET NX
// answered OK) makes the hold of its value, before the library hears of it.
func (h *rueidisHook) noteAcquire(c rueidisCall, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	t := h.tries[c.name]
	if t == nil {
		return // a try of the library's own after the acquire returned
	}
	t.deadline = c.deadline
	t.heldByOther = rueidis.IsRedisNil(err)
	t.lastErr = nil
	if err != nil && !t.heldByOther {
		t.lastErr = err
	}
	if err == nil {
		if t.hold != nil && h.holds[t.hold.value] == t.hold {
			delete(h.holds, t.hold.value) // an earlier try's grant, given up
		}
		t.hold = &rueidisHold{value: c.value, lease: t.lease, server: c.deadline}
		h.holds[c.value] = t.hold
	}
}

// noteDelete notes the library's compare-and-delete of value on the hold
// with that value; a value no hold has is a try's that was not granted.
func (h *rueidisHook) noteDelete(value string, removed bool, err error) {
	r := h.holdOf(value)
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.delSeen && r.delErr == nil {
		return
	}
	r.delSeen, r.delBefore, r.delOK, r.delErr = true, !r.releasing, removed, err
}

// extend sends one of the library's extensions, on the hold with its
// value. One that moves the deadline the server keeps, of a hold granted
// to its caller, is reported as a renewal (Options.OnRenew): invoked
// before it is sent, ok with the PEXPIREAT deadline when it answered 1,
// not held when 0 (the key is not ours), unknown otherwise.
//
// The library also sends the extension script with the deadline the key
// already has, as a check, whenever an invalidation of the key arrives,
// and one often does right as the key is granted (the previous holder's
// delete, pushed just before the SET's answer). Such a check moves
// nothing, and it runs while the grant is on its way to the caller: it is
// no renewal, and reporting it as one put a renewal before the grant in
// the history, an "orphan lock" (seen under load, 2026-11-27). A check
// that finds the key lost is reported once answered, as the loss it is.
func (h *rueidisHook) extend(ctx context.Context, cmd rueidis.Completed, c rueidisCall) rueidis.RedisResult {
	r := h.holdOf(c.value)
	if r == nil {
		return h.evalExtend(ctx, cmd) // no granted try has this value
	}
	r.mu.Lock()
	moves := c.deadline.IsZero() || c.deadline.After(r.server)
	renewal := r.granted && moves
	r.mu.Unlock()
	var report func(Lease, error)
	if renewal && h.opts.OnRenew != nil {
		report = h.opts.OnRenew(c.name)
	}
	resp := h.evalExtend(ctx, cmd)
	v, err := resp.AsInt64()
	lease, lostNow, granted := r.noteExtend(c.deadline, renewal, v, err)
	if err == nil && v != 1 {
		err = fmt.Errorf("extension found the key no longer this client's: %w", ErrNotHeld)
	}
	if report == nil && lostNow && granted && h.opts.OnRenew != nil {
		report = h.opts.OnRenew(c.name)
	}
	if report != nil {
		if err != nil && !errors.Is(err, ErrNotHeld) {
			err = &NodeError{Node: c.name, Op: "rueidislock extend", Err: err}
		}
		report(lease, err)
	}
	return resp
}

// noteExtend notes an extension's answer (v, err) to deadline on r: the
// server's deadline moves when it answered 1, and so does the lease when
// the extension is a renewal. It returns the lease, whether this answer
// found the key lost, and whether r was granted.
func (r *rueidisHold) noteExtend(deadline time.Time, renewal bool, v int64, err error) (Lease, bool, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	lostNow := false
	switch {
	case err == nil && v == 1:
		if deadline.After(r.server) {
			r.server = deadline
		}
		if renewal && !deadline.IsZero() {
			r.lease.ValidUntil = deadline
		}
		r.extErr = nil
	case err == nil:
		lostNow = !r.lost
		r.lost = true
		r.extErr = fmt.Errorf("extension found the key no longer this client's: %w", ErrNotHeld)
	default:
		r.extErr = err
	}
	return r.lease, lostNow, r.granted
}

// evalExtend sends an extension; an EVALSHA the server does not know
// (NOSCRIPT: a new or flushed script cache, nothing was run) is sent again
// at once as EVAL, as the library itself would, so that one extension is
// one renewal in the history.
func (h *rueidisHook) evalExtend(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	args := append([]string(nil), cmd.Commands()...) // rueidis recycles cmd once sent
	resp := h.Client.Do(ctx, cmd)
	if rerr, ok := rueidis.IsRedisErr(resp.Error()); !ok || !rerr.IsNoScript() || args[0] != "EVALSHA" {
		return resp
	}
	eval := h.Client.B().Eval().Script(rueidisTexts[args[1]]).Numkeys(1).Key(args[3]).Arg(args[4:]...).Build()
	return h.Client.Do(ctx, eval)
}

func netDialer(timeout time.Duration) net.Dialer { return net.Dialer{Timeout: timeout} }
