package adapter

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/sut"
)

// Lock is one client's adapter process as a locks.Lock. It is also a
// locks.Closer and a locks.Process; an adapter that answers renew is
// returned as a locks.Renewer too.
type Lock struct {
	spec   Spec
	p      *proc
	log    *boundedLog
	about  About
	opts   locks.Options
	tmpDir string
	follow []*follower // addresses given for nodes that had none
}

// renewingLock is a Lock whose adapter renews.
type renewingLock struct{ *Lock }

var (
	_ locks.Renewer = (*renewingLock)(nil)
	_ locks.Closer  = (*Lock)(nil)
	_ locks.Process = (*Lock)(nil)
)

// open starts the adapter and sends init.
func open(spec Spec, workDir, logPath string, nodes []sut.ClientNode, opts locks.Options) (*Lock, error) {
	addrs, follow, err := nodeAddrs(spec.Name, nodes)
	if err != nil {
		return nil, err
	}
	closeFollow := func() {
		for _, f := range follow {
			f.Close()
		}
	}
	log, err := openLog(logPath)
	if err != nil {
		closeFollow()
		return nil, fmt.Errorf("adapter %s: %w", spec.Name, err)
	}
	p, err := startProc(spec.Name, spec.Command, workDir, spec.Env, log)
	if err != nil {
		closeFollow()
		log.Close()
		return nil, err
	}
	l := &Lock{spec: spec, p: p, log: log, opts: opts, follow: follow}
	req := request{Op: opInit, Version: Version, Nodes: addrs, Lock: &lockParams{
		TTLMS: opts.TTL.Milliseconds(), TimeoutMS: nodeTimeout(nodes).Milliseconds(), KeyPrefix: spec.KeyPrefix,
		Seed: opts.Rand.Uint64() >> 11, Client: opts.Client, // 53 bits: exact in every language's numbers
	}}
	about, err := l.hello(context.Background(), req)
	if err != nil {
		_ = l.Close() // kills what is left of its group
		return nil, err
	}
	l.about = about
	return l, nil
}

// hello sends req (hello or init) and checks the adapter's description.
func (l *Lock) hello(ctx context.Context, req request) (About, error) {
	a, _, err := l.p.call(ctx, req, l.spec.StartTimeout)
	if err != nil {
		return About{}, err
	}
	if a.Status != statusOK {
		return About{}, fmt.Errorf("adapter %s refused %s: %s %s", l.spec.Name, req.Op, a.Status, a.Reason)
	}
	if err := a.Adapter.check(); err != nil {
		return About{}, l.broken(req.Op, err.Error())
	}
	return *a.Adapter, nil
}

// broken records that the adapter's answer to op broke the protocol, and
// kills it.
func (l *Lock) broken(op, problem string) error {
	l.p.mu.Lock()
	n := l.p.lineNo
	l.p.mu.Unlock()
	err := &ProtocolError{Adapter: l.spec.Name, LineNo: 0, Problem: fmt.Sprintf("its answer to %s (line %d): %s", op, n, problem)}
	l.p.breakProtocol(err)
	return err
}

// nodeTimeout is the per-request timeout the adapter's own connections
// should use: the one the harness gives its own clients.
func nodeTimeout(nodes []sut.ClientNode) time.Duration {
	for _, n := range nodes {
		if n.Timeout > 0 {
			return n.Timeout
		}
		if c, ok := n.Client.(*redis.Client); ok && c.Options().ReadTimeout > 0 {
			return c.Options().ReadTimeout
		}
	}
	return 500 * time.Millisecond
}

// About is the adapter's description of itself (its answer to init).
func (l *Lock) About() About { return l.about }

// Acquire asks the adapter to take key, waiting up to o.Wait (its library
// does the waiting; o.Stop is not passed on). The proposed token is one the
// adapter's library uses when it lets the caller choose: the lease of an
// unknown outcome carries it, so the workload's release can name it.
func (l *Lock) Acquire(ctx context.Context, key string, o locks.AcquireOptions) (locks.Lease, error) {
	lease := locks.Lease{Key: key, Token: newToken(l.opts)}
	req := request{Op: opAcquire, Key: key, Token: lease.Token, WaitMS: o.Wait.Milliseconds()}
	a, sent, err := l.p.call(ctx, req, o.Wait+l.spec.RequestTimeout)
	if err != nil {
		return lease, err
	}
	if err := l.outcome(opAcquire, a, locks.ErrNotAcquired); err != nil {
		return lease, err
	}
	return l.grant(opAcquire, lease, a, sent)
}

// Release asks the adapter to give lease up.
func (l *Lock) Release(ctx context.Context, lease locks.Lease) error {
	req := request{Op: opRelease, Key: lease.Key, Token: lease.Token}
	a, _, err := l.p.call(ctx, req, l.spec.RequestTimeout)
	if err != nil {
		return err
	}
	return l.outcome(opRelease, a, locks.ErrNotHeld)
}

// Renew asks the adapter to extend lease.
func (r *renewingLock) Renew(ctx context.Context, lease locks.Lease) (locks.Lease, error) {
	req := request{Op: opRenew, Key: lease.Key, Token: lease.Token}
	a, sent, err := r.p.call(ctx, req, r.spec.RequestTimeout)
	if err != nil {
		return lease, err
	}
	if err := r.outcome(opRenew, a, locks.ErrNotHeld); err != nil {
		return lease, err
	}
	return r.grant(opRenew, lease, a, sent)
}

// outcome maps an answer's status: nil for ok, definite (an error
// wrapping fail) for fail, unknown for unknown.
func (l *Lock) outcome(op string, a answer, fail error) error {
	switch a.Status {
	case statusOK:
		return nil
	case statusFail:
		return &AnswerError{Adapter: l.spec.Name, Op: op, Reason: a.Reason, Err: fail}
	}
	return &AnswerError{Adapter: l.spec.Name, Op: op, Reason: a.Reason, Err: ErrUnknown}
}

// grant turns an ok answer's lease into the history's lease (leaseFrom);
// an answer that breaks the protocol ends the adapter.
func (l *Lock) grant(op string, lease locks.Lease, a answer, sent time.Time) (locks.Lease, error) {
	got, problem := leaseFrom(lease, a.Lease, l.about.Fenced, sent)
	if problem != "" {
		return lease, l.broken(op, problem)
	}
	return got, nil
}

// maxValidity bounds a promised validity: the history's bound on every
// time and duration (a larger one would overflow the deadline's
// arithmetic into the past, and make every write of the holder stale).
const maxValidity = history.MaxTime / int64(time.Millisecond)

// leaseFrom is the history's lease for an ok answer's lease m, or what is
// wrong with m: the deadline is anchored at sent, the instant before the
// request left, plus the validity the library promised, never later than
// its promise. Pure, so that it is fuzzed (FuzzAnswer).
func leaseFrom(lease locks.Lease, m *leaseMsg, fenced bool, sent time.Time) (locks.Lease, string) {
	switch {
	case m == nil:
		return lease, `"ok" without a "lease"`
	case m.Token == "":
		return lease, `a lease without a "token"`
	case !m.Session && (m.ValidityMS == nil || *m.ValidityMS <= 0):
		return lease, `a lease without validity: "validity_ms" (> 0) is what the library promises, or "session": true for a lease that lasts as long as the client's session`
	case !m.Session && *m.ValidityMS > maxValidity:
		return lease, fmt.Sprintf(`"validity_ms" %d is more than ten years: give the library's promise in milliseconds, or "session": true`, *m.ValidityMS)
	case m.Fence < 0 || (fenced && m.Fence == 0):
		return lease, fmt.Sprintf(`fence %d: a fenced adapter's lease carries a fence > 0`, m.Fence)
	}
	lease.Token, lease.Fence, lease.Session = m.Token, m.Fence, m.Session
	lease.ValidUntil = time.Time{}
	if !m.Session {
		lease.ValidUntil = sent.Add(time.Duration(*m.ValidityMS) * time.Millisecond)
	}
	return lease, ""
}

// Close asks the adapter to close and ends its process group.
func (l *Lock) Close() error {
	l.p.shutdown(2 * time.Second)
	for _, f := range l.follow {
		f.Close()
	}
	err := l.log.Close()
	if l.tmpDir != "" {
		_ = os.RemoveAll(l.tmpDir)
	}
	return err
}

// Stop suspends the adapter's process group (a client pause); its log
// says when.
func (l *Lock) Stop() error {
	l.log.Note("harness: SIGSTOP (client pause) at " + time.Now().Format(time.StampMicro))
	return l.p.signal(syscall.SIGSTOP)
}

// Continue resumes it.
func (l *Lock) Continue() error {
	err := l.p.signal(syscall.SIGCONT)
	l.log.Note("harness: SIGCONT at " + time.Now().Format(time.StampMicro))
	return err
}

// Kill ends the adapter's process group at once, as a crash.
func (l *Lock) Kill() error {
	l.log.Note("harness: SIGKILL (client crash) at " + time.Now().Format(time.StampMicro))
	l.p.kill(errors.New("killed: the client crashed"))
	return nil
}

// PID is the adapter process's id, also its process group's.
func (l *Lock) PID() int { return l.p.pgid }

// Err is why the adapter can no longer be trusted: it ended on its own or
// broke the protocol.
func (l *Lock) Err() error { return l.p.Err() }

// newToken is a token proposed to the library, from the client's source:
// 32 hex digits, two zero-padded 64-bit numbers.
func newToken(o locks.Options) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], o.Rand.Uint64())
	binary.BigEndian.PutUint64(b[8:], o.Rand.Uint64())
	return hex.EncodeToString(b[:])
}
