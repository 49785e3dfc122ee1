// Package workloads drives lock clients and records what they do. The mutex
// workload is Jepsen's idea of a partial test: a generator of operations
// (acquire a random key, run a critical section on the protected resource,
// release) plus the history its clients write; the lock under test supplies
// the client, and the checker package judges the history.
package workloads

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/nemesis"
	"github.com/lockharness/lockharness/resource"
	"github.com/lockharness/lockharness/sut"
)

// Config is the mutex workload's configuration.
type Config struct {
	// Clients is the number of concurrent client slots (goroutines). A
	// crashed client's slot goes on under a new process number.
	Clients int
	// Keys is the number of lock keys, "lock-0" … "lock-{Keys-1}".
	Keys int
	// TTL is the lease length handed to the lock.
	TTL time.Duration
	// AcquireTimeout is how long one acquire may wait for a held lock; 0
	// tries once, then backs off a few milliseconds.
	AcquireTimeout time.Duration
	// ClientPause, when non-zero, makes a client stop the world for this
	// long between reading and writing the resource (a GC pause), with
	// probability ClientPauseRate per critical section.
	ClientPause     time.Duration
	ClientPauseRate float64
	// Hold is how long a client works inside its critical section, between
	// reading and writing the resource (default 0: as fast as it can).
	Hold time.Duration
	// OpTimeout bounds each lock and storage operation; running out of it
	// makes the outcome unknown (info). Default 2s.
	OpTimeout time.Duration
	// RenewBeforeWrite makes each client extend its lease (Renewer.Renew)
	// after its work, right before it writes, and skip the write when the
	// lock refuses: the check a careful client makes ("do I still hold
	// it?"), and the way to see whether a lock extends a lease that has
	// already expired (redis-py#4279, redlock-rb#36). The lock must have
	// Renew.
	RenewBeforeWrite bool
	// Seed makes every random choice of the workload replayable.
	Seed uint64
}

// WithDefaults fills in unset fields.
func (c Config) WithDefaults() Config {
	if c.Clients == 0 {
		c.Clients = 5
	}
	if c.Keys == 0 {
		c.Keys = 1
	}
	if c.TTL == 0 {
		c.TTL = time.Second
	}
	if c.ClientPause > 0 && c.ClientPauseRate == 0 {
		c.ClientPauseRate = 0.1
	}
	if c.OpTimeout == 0 {
		c.OpTimeout = 2 * time.Second
	}
	return c
}

// Validate rejects configurations that make no sense.
func (c Config) Validate() error {
	switch {
	case c.Clients < 1:
		return fmt.Errorf("clients must be at least 1, got %d", c.Clients)
	case c.Keys < 1:
		return fmt.Errorf("keys must be at least 1, got %d", c.Keys)
	case c.TTL < 0:
		return fmt.Errorf("ttl must be positive, got %v", c.TTL)
	case c.AcquireTimeout < 0:
		return fmt.Errorf("acquire timeout must not be negative, got %v", c.AcquireTimeout)
	case c.Hold < 0:
		return fmt.Errorf("hold must not be negative, got %v", c.Hold)
	case c.ClientPause < 0:
		return fmt.Errorf("client pause must not be negative, got %v", c.ClientPause)
	case c.ClientPauseRate < 0 || c.ClientPauseRate > 1:
		return fmt.Errorf("client pause rate must be between 0 and 1, got %v", c.ClientPauseRate)
	case c.OpTimeout < 0:
		return fmt.Errorf("op timeout must not be negative, got %v", c.OpTimeout)
	}
	return nil
}

// namedKeys is how many key names a workload makes in advance.
const namedKeys = 4096

// key is the name of key i.
func (m *Mutex) key(i int) string {
	if i < len(m.keys) {
		return m.keys[i]
	}
	return Key(i)
}

// slotKey is the key of slot s's current cycle ("" before its first).
func (m *Mutex) slotKey(s *slot) string {
	if k := s.key.Load(); k > 0 {
		return m.key(int(k - 1))
	}
	return ""
}

// Key is the name of lock key i ("lock-%d", without fmt's reflection: the
// workload names a key every cycle).
func Key(i int) string { return "lock-" + strconv.Itoa(i) }

// Env is what the workload runs against.
type Env struct {
	Recorder *history.Recorder
	Lock     locks.Info
	// LockOptions is the base options for every client's lock instance;
	// the workload sets Rand and Failpoint per client.
	LockOptions locks.Options
	// Nodes returns client slot i's view of the lock's nodes. The workload
	// does not close them.
	Nodes func(slot int) []sut.ClientNode
	// Storage is a client of the storage node holding the resource.
	Storage redis.Cmdable
}

// Stats counts completions as they happen, for the progress line.
type Stats struct {
	OK, Fail, Info atomic.Int64
}

// errCrash is how an armed failpoint makes a client die mid-operation.
var errCrash = errors.New("client crashed at failpoint")

// Mutex is a running mutex workload. Its methods PauseHolder, CrashHolder
// and ArmFailpoint let a nemesis fault the clients.
type Mutex struct {
	cfg   Config
	env   Env
	Stats Stats

	nextProcess atomic.Int64
	nextRenewer atomic.Int64 // renewer threads are numbered from RenewerBase
	slots       []*slot
	// touched has bit i set once a client asked for key i: the keys
	// FinalReads reads (a run of a million keys touches a few).
	touched []atomic.Uint64
	// keys are the names of the first keys, made once: a cycle names its
	// key without allocating (a run of a million keys names the rest).
	keys []string

	mu           sync.Mutex
	renewStalled time.Time // watchdog renewals wait until then (StallRenewers)
	failpoints   map[string]failpointAction
	pending      *holderRequest // a nemesis's request for the next holder; guarded by mu
	// posted is whether pending is set, read without mu: a client at its
	// safe point takes mu only when a request may be there for it.
	posted atomic.Bool
}

// holderRequest is a nemesis's request to fault a client inside its
// critical section: the next client to reach the safe point at while
// holding a lock takes it, and says who it is on taken.
type holderRequest struct {
	pause time.Duration
	at    nemesis.PausePoint
	crash bool
	// watch: only say who it is (AwaitHolder), taken when a holder the
	// want admits begins the work of its critical section.
	watch bool
	want  nemesis.Await
	taken chan history.Process // buffered: the taker never blocks
	key   string               // the taker's key, set before taken is sent
}

type failpointAction struct {
	pause time.Duration
	crash bool
}

// slot is one client goroutine's state.
type slot struct {
	id      int
	process atomic.Int64
	key     atomic.Int64 // 1 + the index of its current cycle's key (0: none), for failpoint pauses
	// section is the lease it works under, from its read until its
	// release, for AwaitHolder; nil outside. Guarded by Mutex.mu.
	section *locks.Lease
	// gate, when set (HoldRelease), holds its release back once its write
	// is done. Guarded by Mutex.mu.
	gate *releaseGate
}

// releaseGate holds a holder's release back until let is closed or until
// passes (HoldRelease).
type releaseGate struct {
	let   chan struct{}
	until time.Time
}

// NewMutex prepares a workload; Run starts it.
func NewMutex(cfg Config, env Env) (*Mutex, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if env.Recorder == nil || env.Nodes == nil || env.Storage == nil || env.Lock.New == nil {
		return nil, fmt.Errorf("mutex workload: incomplete environment")
	}
	m := &Mutex{cfg: cfg, env: env, failpoints: map[string]failpointAction{}, touched: make([]atomic.Uint64, (cfg.Keys+63)/64)}
	m.nextProcess.Store(int64(cfg.Clients))
	for i := range min(cfg.Keys, namedKeys) {
		m.keys = append(m.keys, Key(i))
	}
	m.nextRenewer.Store(RenewerBase)
	for i := 0; i < cfg.Clients; i++ {
		s := &slot{id: i}
		s.process.Store(int64(i))
		m.slots = append(m.slots, s)
	}
	return m, nil
}

// Run runs every client until stop is done, then lets each finish its
// current critical section (the rest of its work, Hold, cut short: see
// criticalSection) and release. Operations themselves run under ctx, so a
// stop at the end of the run does not turn them into unknowns; cancelling
// ctx (Ctrl-C) aborts them.
func (m *Mutex) Run(ctx, stop context.Context) error {
	var wg sync.WaitGroup
	errs := make(chan error, len(m.slots))
	for _, s := range m.slots {
		wg.Add(1)
		go func(s *slot) {
			defer wg.Done()
			if err := m.client(ctx, stop, s); err != nil {
				errs <- err
			}
		}(s)
	}
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	return errors.Join(all...)
}

// newLock builds slot s's lock instance for its current process.
func (m *Mutex) newLock(s *slot, process int64, rng *rand.Rand) (locks.Lock, error) {
	opts := m.env.LockOptions
	opts.TTL = m.cfg.TTL
	opts.Rand = rng
	opts.Client = process
	// Renewals a lock makes on its own (a watchdog) run beside the client:
	// each is recorded by a renewer thread of the lock instance, with the
	// client as its owner (see history.Op), so that a renewal racing the
	// client's release or next acquire, or another watchdog's renewal, pairs
	// unambiguously; the checker credits the renewal to the owner.
	p := history.Process(process)
	owner := p
	threads := &renewerThreads{next: &m.nextRenewer}
	opts.Failpoint = func(ctx context.Context, name string) error { return m.failpoint(ctx, p, s, threads, name) }
	opts.OnRenew = func(key string) func(locks.Lease, error) {
		m.waitRenewStall()
		t := threads.take()
		m.env.Recorder.Record(history.Op{Process: t, Owner: &owner, Type: history.Invoke, F: history.FRenew, Key: key})
		return func(l locks.Lease, err error) {
			defer threads.put(t)
			typ := locks.Outcome(err)
			v := &history.Value{Token: l.Token}
			switch typ {
			case history.OK:
				v = m.leaseValue(l)
			case history.Fail:
				v.NotHeld = errors.Is(err, locks.ErrNotHeld)
			}
			op := history.Op{Process: t, Owner: &owner, Type: typ, F: history.FRenew, Key: key, Value: v}
			if err != nil {
				op.Error = err.Error()
			}
			m.env.Recorder.Record(op)
			m.count(typ)
		}
	}
	l, err := m.env.Lock.New(m.env.Nodes(s.id), opts)
	if err != nil {
		return nil, fmt.Errorf("client %d: new %s lock: %w", process, m.env.Lock.Name, err)
	}
	if _, ok := l.(locks.Renewer); m.cfg.RenewBeforeWrite && !ok {
		closeLock(l)
		return nil, fmt.Errorf("lock %s has no Renew, so its clients cannot renew before they write (RenewBeforeWrite)", m.env.Lock.Name)
	}
	return l, nil
}

// RenewerBase is the first process number of renewer threads. They have a
// range of their own so that the clients' numbers (0 … Clients-1, then one
// per restart after a crash) stay what they would be without a watchdog,
// whatever the timing of the renewals.
const RenewerBase = 1_000_000

// renewerThreads hands out a lock instance's renewer thread numbers: a
// renewal takes a free one (a new one when all are busy, as when a stale
// watchdog and a new one renew at once) and gives it back once its
// completion is recorded, so one watchdog renewing in turn uses one thread.
type renewerThreads struct {
	next *atomic.Int64
	mu   sync.Mutex
	free []history.Process
}

func (r *renewerThreads) take() history.Process {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := len(r.free); n > 0 {
		t := r.free[n-1]
		r.free = r.free[:n-1]
		return t
	}
	return history.Process(r.next.Add(1) - 1)
}

func (r *renewerThreads) put(t history.Process) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.free = append(r.free, t)
}

func closeLock(l locks.Lock) {
	if c, ok := l.(locks.Closer); ok {
		_ = c.Close()
	}
}

// client is one slot's loop.
func (m *Mutex) client(ctx, stop context.Context, s *slot) error {
	rng := rand.New(rand.NewPCG(m.cfg.Seed, uint64(s.id)+1))
	process := s.process.Load()
	lock, err := m.newLock(s, process, rng)
	if err != nil {
		return err
	}
	defer func() { closeLock(lock) }()
	for stop.Err() == nil && ctx.Err() == nil {
		crashed := m.cycle(ctx, stop, s, history.Process(process), lock, rng)
		if err := processErr(lock); err != nil {
			return fmt.Errorf("client %d: %w", process, err)
		}
		if crashed {
			// The process is gone with its lock instance (and any watchdog);
			// the slot goes on as a new process, as a restarted client would.
			process = m.nextProcess.Add(1) - 1
			s.process.Store(process)
			if lock, err = m.newLock(s, process, rng); err != nil {
				return err
			}
		}
	}
	return nil
}

// cycle runs one acquire → critical section → release. It returns true when
// the client crashed (its lock instance is then closed).
//
// An acquire waiting for the lock when stop is done gives up at its next
// retry (a definite fail): the run is over, and nothing would use the lock.
func (m *Mutex) cycle(ctx, stop context.Context, s *slot, p history.Process, lock locks.Lock, rng *rand.Rand) bool {
	rec := m.env.Recorder
	ki := rng.IntN(m.cfg.Keys)
	m.touched[ki/64].Or(1 << (ki % 64))
	key := m.key(ki)
	s.key.Store(int64(ki) + 1)

	rec.Invoke(p, history.FAcquire, key, nil)
	opCtx, cancel := context.WithTimeout(ctx, m.cfg.OpTimeout+m.cfg.AcquireTimeout)
	lease, err := lock.Acquire(opCtx, key, locks.AcquireOptions{Wait: m.cfg.AcquireTimeout, Stop: stop.Done()})
	cancel()
	if errors.Is(err, errCrash) {
		m.complete(p, history.Info, history.FAcquire, key, nil, err)
		m.crash(p, key, lock)
		return true
	}
	t := locks.Outcome(err)
	if t == history.OK {
		m.complete(p, t, history.FAcquire, key, m.leaseValue(lease), nil)
	} else {
		m.complete(p, t, history.FAcquire, key, nil, err)
	}
	switch t {
	case history.Fail:
		backoff(ctx, rng, 5*time.Millisecond)
		return false
	case history.Info:
		// We may hold it without knowing: give it back, recorded like any
		// release, so a lock without expiry is not blocked by our ghost.
		m.release(ctx, p, lock, lease)
		backoff(ctx, rng, 5*time.Millisecond)
		return false
	}

	if m.criticalSection(ctx, stop, s, p, key, lock, &lease, rng) {
		m.crash(p, key, lock)
		return true
	}
	m.release(ctx, p, lock, lease)
	return false
}

// criticalSection reads the counter, maybe pauses, and writes counter+1
// with the lease's fencing token. It returns true when the client crashed.
//
// Its work (Hold) ends early once stop is done: the run is over, and the
// rest of a long hold would only keep the teardown waiting (watchdog-
// partition's 3s hold made its teardown 2.9s, the Redlock scenarios'
// 1.4s holds theirs 1.3 to 1.6s, on a loaded machine). The
// write and the release still happen, under ctx, as they would have; a
// pause (the nemesis's or ClientPause) is never cut, since what a paused
// client does when it wakes is what a run looks at.
func (m *Mutex) criticalSection(ctx, stop context.Context, s *slot, p history.Process, key string, lock locks.Lock, lease *locks.Lease, rng *rand.Rand) bool {
	rec := m.env.Recorder
	rec.Invoke(p, history.FRead, key, nil)
	opCtx, cancel := context.WithTimeout(ctx, m.cfg.OpTimeout)
	v, err := resource.Read(opCtx, m.env.Storage, key)
	cancel()
	if err != nil {
		m.complete(p, locks.Outcome(err), history.FRead, key, nil, err)
		return false
	}
	m.complete(p, history.OK, history.FRead, key, &history.Value{Counter: &v}, nil)

	m.enterSection(s, p, *lease)
	defer m.leaveSection(s)
	work(ctx, stop, m.cfg.Hold) // the work the lock protects

	// The safe point where a nemesis's requests take effect, and where a
	// configured GC pause strikes: between read and write, the worst place.
	pause := time.Duration(0)
	if m.cfg.ClientPause > 0 && rng.Float64() < m.cfg.ClientPauseRate {
		pause = m.cfg.ClientPause
	}
	if req := m.take(p, nemesis.PauseBeforeWrite); req != nil {
		if req.crash {
			return true
		}
		pause += req.pause
	}
	m.pauseClient(ctx, p, key, pause, lock)

	if m.cfg.RenewBeforeWrite && !m.renew(ctx, p, lock, lease) {
		return false // the lock says it is no longer ours: do not write
	}

	next := v + 1
	rec.Invoke(p, history.FWrite, key, &history.Value{Counter: &next, Fence: lease.Fence})
	opCtx, cancel = context.WithTimeout(ctx, m.cfg.OpTimeout)
	accepted, err := resource.Write(opCtx, m.env.Storage, key, next, lease.Fence)
	cancel()
	if err != nil {
		m.complete(p, locks.Outcome(err), history.FWrite, key, nil, err)
		return false
	}
	m.complete(p, history.OK, history.FWrite, key, &history.Value{Counter: &next, Rejected: !accepted}, nil)

	// The second safe point: the write is done, the release has not begun.
	if req := m.take(p, nemesis.PauseAfterWrite); req != nil {
		m.pauseClient(ctx, p, key, req.pause, lock)
	}
	m.waitRelease(ctx, stop, s)
	return false
}

// waitRelease leaves slot s's section and, when a nemesis holds its
// release back (HoldRelease), waits until it lets go, its bound passes or
// the run ends. Leaving the section first, under mu, makes HoldRelease's
// answer exact: a holder it admitted has not passed this point yet.
func (m *Mutex) waitRelease(ctx, stop context.Context, s *slot) {
	m.mu.Lock()
	g := s.gate
	s.gate, s.section = nil, nil
	m.mu.Unlock()
	if g == nil {
		return
	}
	t := time.NewTimer(time.Until(g.until))
	defer t.Stop()
	select {
	case <-g.let:
	case <-t.C:
	case <-ctx.Done():
	case <-stop.Done():
	}
}

// HoldRelease makes process p, inside its critical section, wait once its
// write is done and before it releases until let is called, until passes,
// or the run ends: a fault that must come before the holder's release (a
// node's restart, a partition's heal) then does, however a loaded machine
// times them. The wait is the holder's work going on, not a pause: its
// write was made in its lease. False when p is not inside its section
// (its release may have begun). It implements nemesis.ReleaseHolder.
func (m *Mutex) HoldRelease(p history.Process, until time.Time) (let func(), ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range m.slots {
		if s.section == nil || history.Process(s.process.Load()) != p {
			continue
		}
		g := &releaseGate{let: make(chan struct{}), until: until}
		s.gate = g
		return sync.OnceFunc(func() { close(g.let) }), true
	}
	return nil, false
}

// ClientOf is the client slot process p runs in (c<slot>'s links are its
// links), false for a process that is not running now. It implements
// nemesis.ReleaseHolder.
func (m *Mutex) ClientOf(p history.Process) (int, bool) {
	for _, s := range m.slots {
		if history.Process(s.process.Load()) == p {
			return s.id, true
		}
	}
	return 0, false
}

// pauseClient pauses process p inside its critical section; a lock whose
// client is a process of its own (locks.Process) is stopped for the pause,
// as a GC pause stops every thread of the client.
func (m *Mutex) pauseClient(ctx context.Context, p history.Process, key string, d time.Duration, lock locks.Lock) {
	if pr, ok := lock.(locks.Process); ok && d > 0 {
		if err := pr.Stop(); err == nil {
			defer func() { _ = pr.Continue() }()
		}
	}
	m.pause(ctx, p, key, d, "")
}

// processErr is why a lock's client process can no longer be trusted, nil
// for a sound one and for in-process locks.
func processErr(lock locks.Lock) error {
	if pr, ok := lock.(locks.Process); ok {
		return pr.Err()
	}
	return nil
}

// pause records process p stopping the world for d (where: a failpoint's
// name, or empty for the critical section's safe point).
func (m *Mutex) pause(ctx context.Context, p history.Process, key string, d time.Duration, where string) {
	if d <= 0 {
		return
	}
	v := &history.Value{Duration: int64(d), Detail: where}
	m.env.Recorder.Invoke(p, history.FPause, key, v)
	sleep(ctx, d)
	m.complete(p, history.OK, history.FPause, key, v, nil)
}

// pauseRenewer records a renewer thread of owner's lock instance (from
// threads) stopping for d at failpoint where: the watchdog stops, its
// client goes on. Recorded as the client's own pause, it would overlap the
// client's next pause and make the history unusable, and it would say the
// client stood still when it did not.
func (m *Mutex) pauseRenewer(ctx context.Context, owner history.Process, threads *renewerThreads, key string, d time.Duration, where string) {
	if d <= 0 {
		return
	}
	t := threads.take()
	defer threads.put(t)
	v := &history.Value{Duration: int64(d), Detail: where}
	m.env.Recorder.Record(history.Op{Process: t, Owner: &owner, Type: history.Invoke, F: history.FPause, Key: key, Value: v})
	sleep(ctx, d)
	m.env.Recorder.Record(history.Op{Process: t, Owner: &owner, Type: history.OK, F: history.FPause, Key: key, Value: v})
	m.count(history.OK)
}

// take hands process p, at safe point at of its critical section, the
// nemesis's pending request for a holder if it is meant for that point (a
// crash is taken before the write).
func (m *Mutex) take(p history.Process, at nemesis.PausePoint) *holderRequest {
	if !m.posted.Load() {
		return nil // a request posted meanwhile is for the next safe point
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	req := m.pending
	if req == nil || req.watch || (req.crash && at != nemesis.PauseBeforeWrite) || (!req.crash && req.at != at) {
		return nil
	}
	m.setPending(nil)
	req.taken <- p
	return req
}

// enterSection marks slot s (process p) as working under lease, and
// answers a pending AwaitHolder that the lease satisfies.
func (m *Mutex) enterSection(s *slot, p history.Process, lease locks.Lease) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s.section = &lease
	req := m.pending
	if req == nil || !req.watch || !admits(req.want, lease, time.Now()) {
		return
	}
	m.setPending(nil)
	req.key = lease.Key
	req.taken <- p
}

func (m *Mutex) leaveSection(s *slot) {
	m.mu.Lock()
	s.section, s.gate = nil, nil
	m.mu.Unlock()
}

// admits says whether a holder of lease, at now, is the holder want asks
// for.
func admits(want nemesis.Await, lease locks.Lease, now time.Time) bool {
	if lease.Expires() && lease.ValidUntil.Sub(now) < want.LeaseLeft {
		return false
	}
	for _, n := range want.Granted {
		if !slices.Contains(lease.Nodes, n) {
			return false
		}
	}
	return !want.BareQuorum || (lease.Quorum > 0 && len(lease.Nodes) == lease.Quorum)
}

// strike posts req for the next client that reaches its safe point while
// holding a lock, and waits until one takes it or ctx is done; then the
// request is withdrawn and strike reports false.
func (m *Mutex) strike(ctx context.Context, req *holderRequest) (history.Process, bool) {
	m.mu.Lock()
	m.post(req)
	m.mu.Unlock()
	return m.await(ctx, req)
}

// setPending makes req (nil: none) the pending request; m.mu is held.
func (m *Mutex) setPending(req *holderRequest) {
	m.pending = req
	m.posted.Store(req != nil)
}

// post makes req the pending request; m.mu is held.
func (m *Mutex) post(req *holderRequest) {
	req.taken = make(chan history.Process, 1)
	m.setPending(req)
}

// await waits for a client to take the posted req, or withdraws it when
// ctx is done.
func (m *Mutex) await(ctx context.Context, req *holderRequest) (history.Process, bool) {
	select {
	case p := <-req.taken:
		return p, true
	case <-ctx.Done():
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.pending == req {
		m.setPending(nil)
		return 0, false
	}
	return <-req.taken, true // taken just as ctx ended
}

// renew extends the lease as the client itself (not a watchdog) and
// records it; it reports whether the lock extended it.
func (m *Mutex) renew(ctx context.Context, p history.Process, lock locks.Lock, lease *locks.Lease) bool {
	r, ok := lock.(locks.Renewer)
	if !ok {
		return true // newLock refuses such a lock
	}
	rec := m.env.Recorder
	rec.Invoke(p, history.FRenew, lease.Key, &history.Value{Token: lease.Token})
	opCtx, cancel := context.WithTimeout(ctx, m.cfg.OpTimeout)
	renewed, err := r.Renew(opCtx, *lease)
	cancel()
	t := locks.Outcome(err)
	switch t {
	case history.OK:
		*lease = renewed
		m.complete(p, t, history.FRenew, lease.Key, m.leaseValue(renewed), nil)
		return true
	case history.Fail:
		m.complete(p, t, history.FRenew, lease.Key, &history.Value{Token: lease.Token, NotHeld: errors.Is(err, locks.ErrNotHeld)}, err)
	default:
		m.complete(p, t, history.FRenew, lease.Key, nil, err)
	}
	return false
}

func (m *Mutex) release(ctx context.Context, p history.Process, lock locks.Lock, lease locks.Lease) {
	rec := m.env.Recorder
	rec.Invoke(p, history.FRelease, lease.Key, &history.Value{Token: lease.Token})
	opCtx, cancel := context.WithTimeout(ctx, m.cfg.OpTimeout)
	err := lock.Release(opCtx, lease)
	cancel()
	var v *history.Value
	if t := locks.Outcome(err); t == history.Fail && errors.Is(err, locks.ErrNotHeld) {
		v = &history.Value{NotHeld: true}
	}
	m.complete(p, locks.Outcome(err), history.FRelease, lease.Key, v, err)
}

// crash kills process p's lock instance (its watchdog dies with it, as in
// a real crash) and then records that p died, holding key if it did.
func (m *Mutex) crash(p history.Process, key string, lock locks.Lock) {
	if pr, ok := lock.(locks.Process); ok {
		_ = pr.Kill() // a client process dies as it is, holding what it holds
	}
	closeLock(lock)
	m.env.Recorder.Invoke(p, history.FCrash, key, nil)
	m.complete(p, history.Info, history.FCrash, key, nil, errors.New("client crashed"))
}

func (m *Mutex) complete(p history.Process, t history.Type, f, key string, v *history.Value, err error) {
	m.env.Recorder.Complete(p, t, f, key, v, err)
	m.count(t)
}

// count adds a completion to the progress counters.
func (m *Mutex) count(t history.Type) {
	switch t {
	case history.OK:
		m.Stats.OK.Add(1)
	case history.Fail:
		m.Stats.Fail.Add(1)
	default:
		m.Stats.Info.Add(1)
	}
}

// leaseValue is the history form of a lease: the deadline in run-clock ns.
func (m *Mutex) leaseValue(l locks.Lease) *history.Value {
	v := &history.Value{Token: l.Token, Fence: l.Fence, Nodes: l.Nodes, Quorum: l.Quorum, Session: l.Session}
	if l.Expires() {
		v.Deadline = m.env.Recorder.Clock().At(l.ValidUntil)
		if v.Deadline <= 0 {
			v.Deadline = 1 // expired at once; 0 would mean "never"
		}
	}
	return v
}

// FinalReadKeys is how many keys FinalReads reads: those a client asked
// for so far.
func (m *Mutex) FinalReadKeys() int {
	n := 0
	for i := range m.touched {
		n += bits.OnesCount64(m.touched[i].Load())
	}
	return n
}

// FinalReads records, after the run, one read of the counter of every key
// a client asked for, by a fresh process, so the checker can compare the
// final count with the accepted writes. A key nobody asked for has no
// write to compare with, and with --keys 1000000 reading each would
// outlast the reads' deadline and fill the history with unknown reads.
func (m *Mutex) FinalReads(ctx context.Context) {
	p := history.Process(m.nextProcess.Add(1) - 1)
	for i := 0; i < m.cfg.Keys; i++ {
		if m.touched[i/64].Load()&(1<<(i%64)) == 0 {
			continue
		}
		key := Key(i)
		m.env.Recorder.Invoke(p, history.FRead, key, nil)
		opCtx, cancel := context.WithTimeout(ctx, m.cfg.OpTimeout)
		v, err := resource.Read(opCtx, m.env.Storage, key)
		cancel()
		if err != nil {
			m.complete(p, locks.Outcome(err), history.FRead, key, nil, err)
			continue
		}
		m.complete(p, history.OK, history.FRead, key, &history.Value{Counter: &v}, nil)
	}
}

// failpoint is every lock instance's failpoint hook: an armed failpoint
// fires once, in the first client that reaches it. A pause there pauses
// the thread that reached it: the client p, or, when the lock's watchdog
// reached it (locks.OnRenewer), a renewer thread of p's (see
// pauseRenewer).
func (m *Mutex) failpoint(ctx context.Context, p history.Process, s *slot, threads *renewerThreads, name string) error {
	m.mu.Lock()
	a, ok := m.failpoints[name]
	if ok {
		delete(m.failpoints, name)
	}
	m.mu.Unlock()
	if !ok {
		return nil
	}
	if a.crash {
		return errCrash
	}
	if locks.OnRenewer(ctx) {
		m.pauseRenewer(ctx, p, threads, m.slotKey(s), a.pause, "failpoint "+name)
		return nil
	}
	m.pause(ctx, p, m.slotKey(s), a.pause, "failpoint "+name)
	return nil
}

// ArmFailpoint makes the next client that reaches the lock failpoint name
// pause for d, or crash when crash is true.
func (m *Mutex) ArmFailpoint(name string, d time.Duration, crash bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.failpoints[name] = failpointAction{pause: d, crash: crash}
}

// StallRenewers holds back every watchdog renewal (Options.OnRenew) for d
// from now: a renewal due meanwhile is sent when the stall ends. The
// clients are not affected. It implements nemesis.RenewerStaller.
func (m *Mutex) StallRenewers(d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.renewStalled = time.Now().Add(d)
}

// waitRenewStall blocks a watchdog's renewal until the stall, if any, ends.
// It runs before the renewal's invoke is recorded: the renewer thread was
// starved, it had not asked yet.
func (m *Mutex) waitRenewStall() {
	m.mu.Lock()
	until := m.renewStalled
	m.mu.Unlock()
	if d := time.Until(until); d > 0 {
		time.Sleep(d)
	}
}

// PauseHolder makes the next client that reaches the safe point at of
// its critical section (between read and write, or between write and
// release) while holding a lock stop the world for d, even when nobody
// holds one at this instant. It waits until ctx is done for such a client
// and returns it, or false when none came.
func (m *Mutex) PauseHolder(ctx context.Context, d time.Duration, at nemesis.PausePoint) (history.Process, bool) {
	return m.strike(ctx, &holderRequest{pause: d, at: at})
}

// CrashHolder makes the next client that reaches its safe point before the
// write while holding a lock die there without releasing; its slot goes on
// as a new process. It waits like PauseHolder.
func (m *Mutex) CrashHolder(ctx context.Context) (history.Process, bool) {
	return m.strike(ctx, &holderRequest{crash: true})
}

// AwaitHolder returns, without disturbing anyone, a client inside its
// critical section (its read done, its release not yet begun) whose lease
// want admits, or waits for the next one until ctx is done (false). A
// fault timed by it strikes inside a hold on a loaded machine too, where
// grants come later than a schedule assumes.
func (m *Mutex) AwaitHolder(ctx context.Context, want nemesis.Await) (history.Process, string, bool) {
	m.mu.Lock()
	now := time.Now()
	for _, s := range m.slots {
		if s.section != nil && admits(want, *s.section, now) {
			p, key := history.Process(s.process.Load()), s.section.Key
			m.mu.Unlock()
			return p, key, true
		}
	}
	req := &holderRequest{watch: true, want: want}
	m.post(req)
	m.mu.Unlock()
	p, ok := m.await(ctx, req)
	if !ok {
		return 0, "", false
	}
	return p, req.key, true
}

func backoff(ctx context.Context, rng *rand.Rand, max time.Duration) {
	sleep(ctx, time.Duration(rng.Int64N(int64(max))))
}

func sleep(ctx context.Context, d time.Duration) { work(ctx, ctx, d) }

// work waits d, or until ctx or stop is done.
func work(ctx, stop context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-stop.Done():
	case <-t.C:
	}
}

var (
	_ nemesis.RenewerStaller = (*Mutex)(nil)
	_ nemesis.ReleaseHolder  = (*Mutex)(nil)
)
