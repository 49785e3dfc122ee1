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
type rueidisHook struct {
	rueidis.Client
	opts Options

	mu    sync.Mutex
	dead  bool
	holds map[string]*rueidisHold // by lock name: one hold per name at a time
	tries map[string]rueidisTry   // acquires in flight, by lock name
}

// rueidisHold is one granted lock: its lease and what the library did
// with it since.
type rueidisHold struct {
	cancel context.CancelFunc // the library's release

	mu        sync.Mutex
	lease     Lease
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
	deadline    time.Time // the PXAT of the last try sent
	heldByOther bool      // the last try's SET NX answered nil
	lastErr     error     // the last try's error, if any
}

func (h *rueidisHook) beginTry(name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.tries[name] = rueidisTry{}
}

func (h *rueidisHook) endTry(name string) rueidisTry {
	h.mu.Lock()
	defer h.mu.Unlock()
	t := h.tries[name]
	delete(h.tries, name)
	return t
}

func (h *rueidisHook) hold(r *rueidisHold) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.holds[r.lease.Key] = r
}

// find returns the hold of lease, nil when there is none.
func (h *rueidisHook) find(lease Lease) *rueidisHold {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := h.holds[lease.Key]
	if r == nil || r.lease.Token != lease.Token {
		return nil
	}
	return r
}

// drop forgets hold r once released.
func (h *rueidisHook) drop(r *rueidisHold) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.holds[r.lease.Key] == r {
		delete(h.holds, r.lease.Key)
	}
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
	kind, name, deadline := rueidisClassify(cmd.Commands())
	switch kind {
	case rueidisAcquire:
		resp := h.Client.Do(ctx, cmd)
		h.noteAcquire(name, deadline, resp.Error())
		return resp
	case rueidisExtend:
		return h.extend(ctx, cmd, name, deadline)
	case rueidisDelete:
		resp := h.Client.Do(ctx, cmd)
		v, err := resp.AsInt64()
		h.noteDelete(name, v == 1, err)
		return resp
	}
	return h.Client.Do(ctx, cmd)
}

// rueidisClassify recognises a library script call: EVALSHA sha or EVAL
// script, one key "prefix:i:name", then the value and a deadline in Unix
// milliseconds (PXAT, PEXPIREAT) or a TTL (PX, the fallback: no deadline).
func rueidisClassify(args []string) (rueidisScript, string, time.Time) {
	if len(args) != 6 || (args[0] != "EVALSHA" && args[0] != "EVAL") || args[2] != "1" {
		return rueidisOther, "", time.Time{}
	}
	kind := rueidisScripts[args[1]]
	parts := strings.SplitN(args[3], ":", 3)
	if kind == rueidisOther || len(parts) != 3 {
		return rueidisOther, "", time.Time{}
	}
	var deadline time.Time
	if ms, err := strconv.ParseInt(args[5], 10, 64); err == nil && ms > 1e12 {
		deadline = time.UnixMilli(ms)
	}
	return kind, parts[2], deadline
}

func (h *rueidisHook) noteAcquire(name string, deadline time.Time, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	t, ok := h.tries[name]
	if !ok {
		return // a try of the library's own after the acquire returned
	}
	t.deadline = deadline
	t.heldByOther = rueidis.IsRedisNil(err)
	t.lastErr = nil
	if err != nil && !t.heldByOther {
		t.lastErr = err
	}
	h.tries[name] = t
}

func (h *rueidisHook) noteDelete(name string, removed bool, err error) {
	h.mu.Lock()
	r := h.holds[name]
	h.mu.Unlock()
	if r == nil {
		return // a failed try cleaning up
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.delSeen && r.delErr == nil {
		return
	}
	r.delSeen, r.delBefore, r.delOK, r.delErr = true, !r.releasing, removed, err
}

// extend sends one of the library's extensions of name, reported as a
// renewal of its lease (Options.OnRenew) when the lock is held: invoked
// before it is sent, ok with the PEXPIREAT deadline when it answered 1,
// not held when 0 (the key is not ours), unknown otherwise.
func (h *rueidisHook) extend(ctx context.Context, cmd rueidis.Completed, name string, deadline time.Time) rueidis.RedisResult {
	h.mu.Lock()
	r := h.holds[name]
	h.mu.Unlock()
	var report func(Lease, error)
	if r != nil && h.opts.OnRenew != nil {
		report = h.opts.OnRenew(name)
	}
	resp := h.evalExtend(ctx, cmd)
	v, err := resp.AsInt64()
	if r == nil {
		return resp
	}
	r.mu.Lock()
	lease := r.lease
	switch {
	case err == nil && v == 1:
		if !deadline.IsZero() {
			lease.ValidUntil = deadline
		}
		r.lease, r.extErr = lease, nil
	case err == nil:
		r.lost = true
		err = fmt.Errorf("extension found the key no longer this client's: %w", ErrNotHeld)
		r.extErr = err
	default:
		r.extErr = err
	}
	r.mu.Unlock()
	if report != nil {
		if err != nil && !errors.Is(err, ErrNotHeld) {
			err = &NodeError{Node: name, Op: "rueidislock extend", Err: err}
		}
		report(lease, err)
	}
	return resp
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
