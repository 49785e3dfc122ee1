package adapter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/sut"
)

// ConformOptions are what a conformance run needs besides the adapter.
type ConformOptions struct {
	// Nodes returns client slot i's view of a running deployment of the
	// adapter's system (two slots are used), as a run's clients get it.
	Nodes func(slot int) []sut.ClientNode
	// Dir keeps the adapters' logs (adapters/<name>-c<client>.log); empty:
	// a temporary directory, removed.
	Dir string
	// Deploy, when Nodes is nil, starts the system the adapter names in
	// its hello (see CheckCommand); Conform stops it when done.
	Deploy Deployer
	// TTL is the lease asked for (default: the system's, conformSystem).
	TTL time.Duration
}

// Check is one conformance check: Err is nil when it passed.
type Check struct {
	Name string
	Err  error
}

// Report is what a conformance run found.
type Report struct {
	Adapter string
	About   About
	Checks  []Check
	// Fatal is set when nothing could be tested (the adapter did not start
	// or answer init): the checks run before it are kept.
	Fatal error
}

// Failed counts the checks that did not pass.
func (r Report) Failed() int {
	n := 0
	for _, c := range r.Checks {
		if c.Err != nil {
			n++
		}
	}
	return n
}

// OK reports whether every check passed.
func (r Report) OK() bool { return r.Fatal == nil && r.Failed() == 0 }

// Write prints the report, one line per check.
func (r Report) Write(w io.Writer) {
	a := r.About
	if a.Name != "" {
		fmt.Fprintf(w, "adapter %s: %s (%s, %s %s), protocol %d\n", r.Adapter, a.Name, a.Language, a.Library, a.Version, a.Protocol)
	} else {
		fmt.Fprintf(w, "adapter %s\n", r.Adapter)
	}
	for _, c := range r.Checks {
		if c.Err == nil {
			fmt.Fprintf(w, "  ok    %s\n", c.Name)
		} else {
			fmt.Fprintf(w, "  FAIL  %s\n        %v\n", c.Name, c.Err)
		}
	}
	switch {
	case r.Fatal != nil:
		fmt.Fprintf(w, "nothing more could be tested: %v\n", r.Fatal)
	case r.Failed() > 0:
		fmt.Fprintf(w, "%d of %d checks failed\n", r.Failed(), len(r.Checks))
	default:
		fmt.Fprintf(w, "all %d checks passed\n", len(r.Checks))
	}
}

// conformance is one run of the checks: two clients, A and B.
type conformance struct {
	ctx   context.Context
	spec  Spec
	opts  ConformOptions
	rep   *Report
	a, b  locks.Lock
	fresh int
	sys   conformSystem
	stop  func()
}

// Conform runs spec's adapter through the protocol without faults, against
// the deployment opts.Nodes reaches, and reports each check: it answers
// hello and init, grants a free key with a lease that has validity, the
// key is in the server it was given, refuses a held key definitely,
// releases, says "not held" for a lease that is gone, renews, lets a lease
// expire, waits for a release, and closes. A protocol violation (garbage,
// a missing or duplicate id, an answer to nothing, no answer) fails the
// check it happened in, naming the line.
func Conform(ctx context.Context, spec Spec, opts ConformOptions) Report {
	spec = spec.withDefaults()
	rep := Report{Adapter: spec.Name}
	c := &conformance{ctx: ctx, spec: spec, opts: opts, rep: &rep}
	defer c.closeAll()
	if !c.start() {
		return rep
	}
	c.basics()
	if c.sys.session {
		c.sessions()
	} else {
		c.expiry()
	}
	c.blocking()
	c.closing()
	return rep
}

// check runs one named check; err is its failure (nil: passed).
func (c *conformance) check(name string, err error) bool {
	c.rep.Checks = append(c.rep.Checks, Check{Name: name, Err: err})
	return err == nil
}

// start asks hello and starts both clients.
func (c *conformance) start() bool {
	about, err := Hello(c.ctx, c.spec)
	if !c.check("starts and says what it is (hello)", err) {
		c.rep.Fatal = err
		return false
	}
	c.rep.About = about
	spec := specFrom(c.spec, about)
	spec.Name = c.spec.Name
	sys, err := systemFor(spec)
	if err != nil {
		c.rep.Fatal = err
		return false
	}
	c.sys, c.spec = sys, spec
	if c.opts.TTL == 0 {
		c.opts.TTL = sys.ttl
	}
	if c.opts.Nodes == nil {
		if err := c.deploy(); err != nil {
			c.rep.Fatal = err
			return false
		}
	}
	for i, l := range []*locks.Lock{&c.a, &c.b} {
		lk, err := c.client(i)
		if !c.check(fmt.Sprintf("client %d starts and answers init", i), err) {
			c.rep.Fatal = err
			return false
		}
		*l = lk
	}
	return true
}

// client starts the adapter of client slot i.
func (c *conformance) client(i int) (locks.Lock, error) {
	opts := locks.Options{TTL: c.opts.TTL, Dir: c.opts.Dir, Client: int64(i), Rand: rand.New(rand.NewPCG(uint64(i), 7))}
	return Factory(c.spec)(c.opts.Nodes(i), opts)
}

// key is a key no check used before.
func (c *conformance) key() string {
	c.fresh++
	return fmt.Sprintf("conformance-%d-%d", time.Now().UnixNano(), c.fresh)
}

// basics: grant, refusal, release, not held, renew.
func (c *conformance) basics() {
	k := c.key()
	now := time.Now()
	la, err := c.acquire(c.a, k, 0)
	if !c.check("a free key is granted, with a lease that has validity", c.leaseErr(la, err, now)) {
		return
	}
	c.check("the lock is in the server init named", c.stored(k))
	_, err = c.acquire(c.b, k, 0)
	c.check("a held key is refused to another client (fail, not unknown)", want(err, locks.ErrNotAcquired, "fail (not acquired)"))
	c.check("the holder's release is ok", c.sound(c.a, c.a.Release(c.ctx, la)))
	c.check("a second release of the same lease is not held (fail)", want(c.a.Release(c.ctx, la), locks.ErrNotHeld, "fail (not held)"))
	now = time.Now()
	lb, err := c.acquire(c.b, k, 0)
	if !c.check("the freed key is granted to the other client", c.leaseErr(lb, err, now)) {
		return
	}
	if r, ok := c.b.(locks.Renewer); ok {
		now = time.Now()
		lr, err := r.Renew(c.ctx, lb)
		c.check("the holder's renew is ok, with validity", c.leaseErr(lr, c.sound(c.b, err), now))
	}
	c.check("the other client's release of it is refused (fail, not held)", want(c.a.Release(c.ctx, locks.Lease{Key: k, Token: la.Token}), locks.ErrNotHeld, "fail (not held)"))
	c.check("the holder's release is ok", c.sound(c.b, c.b.Release(c.ctx, lb)))
}

// expiry: a lease nobody releases ends at its validity.
func (c *conformance) expiry() {
	k := c.key()
	now := time.Now()
	la, err := c.acquire(c.a, k, 0)
	if !c.check("a lease to be left to expire is granted", c.leaseErr(la, err, now)) {
		return
	}
	sleep(c.ctx, time.Until(la.ValidUntil)+200*time.Millisecond)
	now = time.Now()
	lb, err := c.acquire(c.b, k, c.sys.expiryGrace)
	c.check("after its validity the key is granted to another client"+c.sys.graceWords(), c.leaseErr(lb, err, now))
	c.check("the expired holder's release is not held (fail)", want(c.a.Release(c.ctx, la), locks.ErrNotHeld, "fail (not held)"))
	if err == nil {
		c.check("the new holder's release is ok", c.sound(c.b, c.b.Release(c.ctx, lb)))
	}
}

// blocking: an acquire that may wait gets the key when its holder
// releases.
func (c *conformance) blocking() {
	k := c.key()
	la, err := c.acquire(c.a, k, 0)
	if err != nil {
		c.check("a key to wait for is granted", err)
		return
	}
	released := make(chan error, 1)
	go func() {
		sleep(c.ctx, 200*time.Millisecond)
		released <- c.a.Release(c.ctx, la)
	}()
	now := time.Now()
	lb, err := c.acquire(c.b, k, 3*time.Second)
	rerr := <-released
	c.check("an acquire that may wait is granted when the holder releases", c.leaseErr(lb, errors.Join(err, c.sound(c.a, rerr)), now))
	if err == nil {
		c.check("the waiter's release is ok", c.sound(c.b, c.b.Release(c.ctx, lb)))
	}
}

// closing: close is answered and the process ends by itself.
func (c *conformance) closing() {
	for i, l := range []locks.Lock{c.a, c.b} {
		lk := asLock(l)
		clean := lk.p.closeAndWait(2 * time.Second)
		var err error
		if !clean {
			err = fmt.Errorf("the process did not exit within 2s of close (it was killed); exit after answering close")
		}
		c.check(fmt.Sprintf("client %d answers close and exits", i), errors.Join(lk.Err(), err))
	}
}

func (c *conformance) closeAll() {
	for _, l := range []locks.Lock{c.a, c.b} {
		if l != nil {
			_ = l.(locks.Closer).Close()
		}
	}
	if c.stop != nil {
		c.stop()
	}
}

func asLock(l locks.Lock) *Lock {
	if r, ok := l.(*renewingLock); ok {
		return r.Lock
	}
	return l.(*Lock)
}

// acquire takes k with a bounded context.
func (c *conformance) acquire(l locks.Lock, k string, wait time.Duration) (locks.Lease, error) {
	ctx, cancel := context.WithTimeout(c.ctx, wait+5*time.Second)
	defer cancel()
	lease, err := l.Acquire(ctx, k, locks.AcquireOptions{Wait: wait})
	return lease, c.sound(l, err)
}

// sound adds the adapter's protocol fault, if any, to err.
func (c *conformance) sound(l locks.Lock, err error) error {
	if ferr := asLock(l).Err(); ferr != nil && !errors.Is(err, ferr) {
		return errors.Join(err, ferr)
	}
	return err
}

// leaseErr checks a grant made after now: its validity within the TTL.
func (c *conformance) leaseErr(l locks.Lease, err error, now time.Time) error {
	if err != nil {
		return err
	}
	if l.Session {
		return nil
	}
	left := l.ValidUntil.Sub(now)
	if left <= 0 || left > c.opts.TTL+time.Second {
		return fmt.Errorf("validity %v for a TTL of %v", left.Round(time.Millisecond), c.opts.TTL)
	}
	return nil
}

// stored checks that the client's server holds something: the adapter
// dials the addresses init gave it.
func (c *conformance) stored(k string) error {
	switch c.spec.System {
	case locks.SystemZooKeeper:
		return zkStored(c.ctx, c.opts.Nodes(0), k)
	case locks.SystemEtcd:
		return etcdStored(c.ctx, c.opts.Nodes(0), k)
	}
	n := c.opts.Nodes(0)[0]
	if n.Client == nil {
		return nil
	}
	size, err := n.Client.DBSize(c.ctx).Result()
	if err != nil {
		return fmt.Errorf("asking the server: %w", err)
	}
	if size == 0 {
		return fmt.Errorf("the server at %s holds no key while the lock on %s is held: the adapter must dial the addresses init gives it (they are the client's own links)", n.Addr, k)
	}
	return nil
}

// want checks that err is the definite answer target.
func want(err, target error, what string) error {
	if errors.Is(err, target) {
		return nil
	}
	if err == nil {
		return fmt.Errorf("got ok, want %s", what)
	}
	return fmt.Errorf("want %s, got: %w", what, err)
}

func sleep(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// CheckCommand is `harness adapter check`: it runs Conform on the adapter
// that cmdline starts (or the shipped adapter of that name) against a
// deployment of its own of the system the adapter names in its hello
// (Redis, etcd or a ZooKeeper ensemble of three, as a run starts them:
// real servers, every client through its own links), keeps the adapters'
// logs in dir, and stops everything. A Report with Fatal set means nothing
// could be tested.
func CheckCommand(ctx context.Context, cmdline, dir string) Report {
	spec, err := specForCheck(ctx, cmdline)
	if err != nil {
		return Report{Adapter: cmdline, Fatal: err}
	}
	return Conform(ctx, spec, ConformOptions{Dir: dir})
}

// specForCheck is the spec of a shipped adapter called cmdline, or of
// cmdline as a command.
func specForCheck(ctx context.Context, cmdline string) (Spec, error) {
	if !strings.ContainsAny(cmdline, " \t/") {
		specs, err := Shipped(ctx)
		if err != nil {
			return Spec{}, err
		}
		for _, s := range specs {
			if s.Name == cmdline {
				if s.Unavailable != "" {
					return Spec{}, fmt.Errorf("shipped adapter %s cannot run here: %s", s.Name, s.Unavailable)
				}
				return s, nil
			}
		}
	}
	argv, err := SplitCommand(cmdline)
	if err != nil {
		return Spec{}, err
	}
	return Spec{Name: cmdline, Command: argv}, nil
}
