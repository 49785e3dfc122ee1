package workloads_test

import (
	"bytes"
	"context"
	"maps"
	"testing"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/nemesis"
	"github.com/lockharness/lockharness/sut"
	redisbackend "github.com/lockharness/lockharness/sut/redis"
	"github.com/lockharness/lockharness/sut/redis/redistest"
	"github.com/lockharness/lockharness/workloads"
)

// start runs a mutex workload of the token lock on a real node until the
// returned stop function is called; it returns the workload and the
// history recorder.
func start(t *testing.T, cfg workloads.Config) (*workloads.Mutex, *history.Recorder, func()) {
	t.Helper()
	return startLock(t, "token", cfg)
}

// startLock is start with the named lock.
func startLock(t *testing.T, lock string, cfg workloads.Config) (*workloads.Mutex, *history.Recorder, func()) {
	t.Helper()
	info, err := locks.Builtin().Lookup(lock)
	if err != nil {
		t.Fatal(err)
	}
	return startInfo(t, info, cfg)
}

// startInfo is start with the lock info.
func startInfo(t *testing.T, info locks.Info, cfg workloads.Config) (*workloads.Mutex, *history.Recorder, func()) {
	t.Helper()
	ctx := context.Background()
	c := redistest.Up(t, sut.Config{Nodes: 1, Clients: cfg.Clients})
	storage := redisbackend.NewRedisClient(c.StorageAddr(), sut.ClientOptions{})
	t.Cleanup(func() { _ = storage.Close() })
	nodes := make([][]sut.ClientNode, cfg.Clients)
	for i := range nodes {
		nodes[i] = c.ClientNodes(i, sut.ClientOptions{})
		t.Cleanup(func() { sut.CloseClientNodes(nodes[i]) })
	}
	rec := history.NewRecorder(history.NewClock(), &bytes.Buffer{})
	t.Cleanup(func() { _ = rec.Close() })
	m, err := workloads.NewMutex(cfg, workloads.Env{Recorder: rec, Lock: info, Storage: storage,
		Nodes: func(slot int) []sut.ClientNode { return nodes[slot] }})
	if err != nil {
		t.Fatal(err)
	}
	stop, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx, stop) }()
	return m, rec, func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("workload: %v", err)
		}
	}
}

// waitHolder retries until some client holds a lock (bounded).
func waitHolder(t *testing.T, try func() (history.Process, bool)) history.Process {
	t.Helper()
	for i := 0; i < 500; i++ {
		if p, ok := try(); ok {
			return p
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatal("no client held a lock within a second")
	return 0
}

func TestPauseHolderStrikesWhereAsked(t *testing.T) {
	for _, at := range []nemesis.PausePoint{nemesis.PauseBeforeWrite, nemesis.PauseAfterWrite} {
		t.Run(string(at), func(t *testing.T) {
			m, rec, stop := start(t, workloads.Config{Clients: 2, TTL: time.Second, Hold: 20 * time.Millisecond})
			p := waitHolder(t, func() (history.Process, bool) { return m.PauseHolder(context.Background(), 300*time.Millisecond, at) })
			time.Sleep(700 * time.Millisecond)
			stop()
			ops := rec.Ops()
			var pauseAt = -1
			for i, op := range ops {
				if op.Process == p && op.F == history.FPause && op.Type == history.Invoke {
					pauseAt = i
					break
				}
			}
			if pauseAt < 0 {
				t.Fatalf("process %d never paused", p)
			}
			// The event of p just before its pause says where it struck.
			prev := history.Op{}
			for i := pauseAt - 1; i >= 0; i-- {
				if ops[i].Process == p {
					prev = ops[i]
					break
				}
			}
			want := history.FRead
			if at == nemesis.PauseAfterWrite {
				want = history.FWrite
			}
			if prev.F != want || prev.Type != history.OK {
				t.Fatalf("pause %s came after %s %s, want after %s ok", at, prev.F, prev.Type, want)
			}
		})
	}
}

// A crashed client never releases its lock; its slot goes on as a new
// process.
func TestCrashHolderAbandonsItsLock(t *testing.T) {
	m, rec, stop := start(t, workloads.Config{Clients: 2, TTL: 300 * time.Millisecond, Hold: 20 * time.Millisecond})
	p := waitHolder(t, func() (history.Process, bool) { return m.CrashHolder(context.Background()) })
	time.Sleep(600 * time.Millisecond)
	stop()
	crashed, after := false, false
	maxProcess := history.Process(0)
	for _, op := range rec.Ops() {
		if op.Process > maxProcess {
			maxProcess = op.Process
		}
		if op.Process != p {
			continue
		}
		if crashed {
			after = true
		}
		if op.F == history.FCrash && op.Type == history.Info {
			crashed = true
		}
		if crashed && op.F == history.FRelease {
			t.Fatalf("crashed process %d released: %v", p, op)
		}
	}
	if !crashed {
		t.Fatalf("process %d has no crash event", p)
	}
	if after {
		t.Errorf("process %d did something after it crashed", p)
	}
	if maxProcess < 2 {
		t.Errorf("no new process replaced the crashed one (highest process %d)", maxProcess)
	}
}

// TestWatchdogRenewalsHaveTheirOwnThreads: the reentrant lock's watchdog
// renews while its client works (hold 120ms, TTL 150ms: a renewal every
// 50ms); each renewal is recorded by a renewer thread (a process number from
// RenewerBase) owned by its client, so the checker pairs and credits them
// and the history of a correct run is valid, never unusable.
func TestWatchdogRenewalsHaveTheirOwnThreads(t *testing.T) {
	_, rec, stop := startLock(t, "reentrant", workloads.Config{Clients: 2, TTL: 150 * time.Millisecond, Hold: 120 * time.Millisecond})
	time.Sleep(1500 * time.Millisecond)
	stop()
	ops := rec.Ops()
	renews := 0
	for _, op := range ops {
		if op.F != history.FRenew {
			continue
		}
		renews++
		if op.Owner == nil || op.Process < workloads.RenewerBase || *op.Owner >= workloads.RenewerBase {
			t.Fatalf("a renewal not recorded by an owned renewer thread: %v", op)
		}
		if op.Type != history.Invoke && (op.Value == nil || op.Value.Token == "") {
			t.Errorf("a renewal's completion without the lease's token: %v", op)
		}
	}
	if renews < 10 {
		t.Fatalf("%d renew events in 1.5s of 120ms holds with a 50ms watchdog", renews)
	}
	r, _ := checker.Check(context.Background(), history.Events(ops), checker.Config{})
	if v := r.Checkers[checker.LockPromise]; v.Verdict != checker.Valid {
		t.Fatalf("lock promise %s: %s; %+v", v.Verdict, v.Reason, r.Violations)
	}
	held := 0
	for _, h := range r.Holds {
		if h.Process >= workloads.RenewerBase {
			t.Errorf("a hold credited to a renewer thread: %+v", h)
		}
		if h.Deadline > 0 && h.End > 0 && h.Deadline-h.Start > int64(150*time.Millisecond) {
			held++ // a renewal extended the claim past the first lease
		}
	}
	if held == 0 {
		t.Errorf("no hold was extended by its watchdog: %+v", r.Holds)
	}
}

// With --hold 0 a client holds its lock for an instant: a pause aimed at
// "a holder" waits for the next client to reach its safe point holding one,
// so every pause strikes inside a live claim (the checker's coverage says
// so, from the history alone).
func TestPauseHolderWaitsForAHolder(t *testing.T) {
	m, rec, stop := start(t, workloads.Config{Clients: 2, TTL: time.Second})
	const n = 5
	for i := 0; i < n; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, ok := m.PauseHolder(ctx, 20*time.Millisecond, nemesis.PauseBeforeWrite)
		cancel()
		if !ok {
			t.Fatalf("pause %d found no holder within 5s", i+1)
		}
	}
	stop()
	res, _ := checker.Check(context.Background(), history.Events(rec.Ops()), checker.Config{})
	cov := res.Coverage
	if cov.Pauses.Total != n || cov.Pauses.StruckHolder != n {
		t.Fatalf("pauses %+v, want %d that struck a holder", cov.Pauses, n)
	}
}

// A request nobody takes is withdrawn when its context ends: it does not
// strike a later critical section unasked.
func TestPauseHolderGivesUp(t *testing.T) {
	m, rec, stop := start(t, workloads.Config{Clients: 1, TTL: time.Second})
	stop()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if p, ok := m.PauseHolder(ctx, time.Second, nemesis.PauseBeforeWrite); ok {
		t.Fatalf("process %d took a pause after the workload stopped", p)
	}
	for _, op := range rec.Ops() {
		if op.F == history.FPause {
			t.Fatalf("a pause was recorded: %v", op)
		}
	}
}

// AwaitHolder names a client inside its critical section with at least the
// asked part of its lease to run, without pausing or recording anything; a
// lease that cannot be that long is never awaited, nor a bare quorum of a
// single-node lock.
func TestAwaitHolderWatchesWithoutDisturbing(t *testing.T) {
	m, rec, stop := start(t, workloads.Config{Clients: 2, TTL: time.Second, Hold: 30 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	p, key, ok := m.AwaitHolder(ctx, nemesis.Await{LeaseLeft: 500 * time.Millisecond})
	cancel()
	if !ok || key != workloads.Key(0) {
		t.Fatalf("AwaitHolder = %d, %q, %v; want a holder of %s", p, key, ok, workloads.Key(0))
	}
	// Its lease (1s) can never have 2s left: nobody qualifies.
	ctx, cancel = context.WithTimeout(context.Background(), 300*time.Millisecond)
	if q, _, ok := m.AwaitHolder(ctx, nemesis.Await{LeaseLeft: 2 * time.Second}); ok {
		t.Fatalf("process %d awaited with 2s of a 1s lease left", q)
	}
	cancel()
	ctx, cancel = context.WithTimeout(context.Background(), 300*time.Millisecond)
	if q, _, ok := m.AwaitHolder(ctx, nemesis.Await{BareQuorum: true}); ok {
		t.Fatalf("process %d of a single-node lock awaited on a bare quorum", q)
	}
	cancel()
	stop()
	for _, op := range rec.Ops() {
		if op.F == history.FPause {
			t.Fatalf("awaiting paused a client: %v", op)
		}
	}
	if res, _ := checker.Check(context.Background(), history.Events(rec.Ops()), checker.Config{}); res.Verdict != checker.Valid {
		t.Fatalf("verdict %v after awaiting holders, want valid", res.Verdict)
	}
}

// The final reads read the counter of every key a client asked for, and
// of no other: with a million keys, a run asks for a few, and reading the
// rest would outlast the reads' deadline.
func TestFinalReadsReadTheKeysAsked(t *testing.T) {
	const keys = 100_000
	m, rec, stop := start(t, workloads.Config{Clients: 2, Keys: keys, TTL: time.Second, Hold: time.Millisecond})
	time.Sleep(300 * time.Millisecond)
	stop()
	asked := map[string]bool{}
	for _, op := range rec.Ops() {
		if op.F == history.FAcquire && op.Type == history.Invoke {
			asked[op.Key] = true
		}
	}
	n := len(rec.Ops())
	m.FinalReads(context.Background())
	read := map[string]bool{}
	for _, op := range rec.Ops()[n:] {
		if op.F != history.FRead {
			t.Fatalf("final reads recorded %s", op.F)
		}
		if op.Type == history.Invoke {
			read[op.Key] = true
			continue
		}
		if op.Type != history.OK {
			t.Errorf("final read of %s: %s %s", op.Key, op.Type, op.Error)
		}
	}
	if len(asked) == 0 || len(asked) > keys/10 {
		t.Fatalf("clients asked for %d of %d keys", len(asked), keys)
	}
	if !maps.Equal(asked, read) {
		t.Errorf("final reads read %d keys, the clients asked for %d", len(read), len(asked))
	}
}

// A stop cuts the holder's work (Hold) short, but not its critical
// section: the client still writes and releases, as it would have, and
// the teardown does not wait out a long hold.
func TestStopCutsTheWorkShortNotTheSection(t *testing.T) {
	m, rec, stop := start(t, workloads.Config{Clients: 1, TTL: 30 * time.Second, Hold: 20 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, _, ok := m.AwaitHolder(ctx, nemesis.Await{}); !ok {
		t.Fatal("no client held the lock within 5s")
	}
	began := time.Now()
	stop()
	if d := time.Since(began); d > 5*time.Second {
		t.Fatalf("the stop waited %v for a 20s hold", d)
	}
	done := map[string]history.Type{}
	for _, op := range rec.Ops() {
		if op.Type != history.Invoke {
			done[op.F] = op.Type
		}
	}
	for _, f := range []string{history.FAcquire, history.FRead, history.FWrite, history.FRelease} {
		if done[f] != history.OK {
			t.Errorf("%s: %q, want ok (ops %v)", f, done[f], rec.Ops())
		}
	}
}
