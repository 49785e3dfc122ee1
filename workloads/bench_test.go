package workloads_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/resource"
	"github.com/lockharness/lockharness/sut"
	redisbackend "github.com/lockharness/lockharness/sut/redis"
	"github.com/lockharness/lockharness/sut/redis/redistest"
	"github.com/lockharness/lockharness/workloads"
)

// benchWindow is how long each side of BenchmarkTokenCycles runs per
// iteration: long enough for a steady rate, short enough for CI.
const benchWindow = 3 * time.Second

// BenchmarkTokenCycles measures the mutex workload against a raw go-redis
// loop on the same node, through the same toxiproxy proxies, in the same
// benchmark run: 10 clients, 1 key and 10 keys (each cycle picks one at
// random, as the workload does), the token lock. A cycle is acquire,
// read, write, release; both sides make the same round trips (SET NX PX,
// GET and the storage's write, the compare-and-delete script) and back
// off the same up to 5 ms after a refused acquire. The workload also
// records every operation to a history file. Each iteration runs a window
// of benchWindow of each, alternating which goes first, so that a machine
// whose load changes treats both alike; the metrics are the medians over
// the iterations of the two rates and of each iteration's ratio (what the
// harness costs a lock), of the CPU a cycle of each costs (what a loaded
// machine's share of the cores buys), and of the raw loop's rate
// straight to the node, without the proxies (what the proxies, which
// every link has so that any link can be faulted, cost). Run with
// -benchtime 10x.
func BenchmarkTokenCycles(b *testing.B) {
	for _, keys := range []int{1, 10} {
		b.Run(fmt.Sprintf("keys=%d", keys), func(b *testing.B) { benchTokenCycles(b, keys) })
	}
}

func benchTokenCycles(b *testing.B, keys int) {
	redistest.Require(b, "redis-server")
	const clients = 10
	c := redistest.Up(b, sut.Config{Nodes: 1, Clients: clients})
	storage := redisbackend.NewRedisClient(c.StorageAddr(), sut.ClientOptions{PoolSize: clients + 2})
	b.Cleanup(func() { _ = storage.Close() })
	nodes := make([][]sut.ClientNode, clients)
	for i := range nodes {
		nodes[i] = c.ClientNodes(i, sut.ClientOptions{})
		b.Cleanup(func() { sut.CloseClientNodes(nodes[i]) })
	}
	n1, err := c.Server("n1")
	if err != nil {
		b.Fatal(err)
	}
	direct := make([][]sut.ClientNode, clients)
	for i := range direct {
		cl := redisbackend.NewRedisClient(n1.Addr(), sut.ClientOptions{})
		b.Cleanup(func() { _ = cl.Close() })
		direct[i] = []sut.ClientNode{{Name: "n1", Client: cl}}
	}
	var wl, raw, dir, ratio, wlCPU, rawCPU []float64
	rate := func(n int64) float64 { return float64(n) / benchWindow.Seconds() }
	for i := range b.N {
		var w, r window
		if i%2 == 0 {
			w = workloadWindow(b, nodes, storage, keys)
			r = measure(func() int64 { return rawWindow(b, nodes, storage, keys) })
		} else {
			r = measure(func() int64 { return rawWindow(b, nodes, storage, keys) })
			w = workloadWindow(b, nodes, storage, keys)
		}
		wl, raw = append(wl, rate(w.cycles)), append(raw, rate(r.cycles))
		if r.cycles > 0 && w.cycles > 0 {
			ratio = append(ratio, float64(w.cycles)/float64(r.cycles))
			wlCPU, rawCPU = append(wlCPU, w.cpuPerCycle()), append(rawCPU, r.cpuPerCycle())
		}
		dir = append(dir, rate(rawWindow(b, direct, storage, keys)))
	}
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(median(wl), "workload-cycles/s")
	b.ReportMetric(median(raw), "raw-cycles/s")
	b.ReportMetric(median(dir), "raw-direct-cycles/s")
	if len(ratio) > 0 {
		b.ReportMetric(median(ratio), "workload/raw")
		b.ReportMetric(median(wlCPU), "workload-cpu-us/cycle")
		b.ReportMetric(median(rawCPU), "raw-cpu-us/cycle")
	}
}

// window is what one side did in a window: its cycles and the CPU time
// the whole benchmark process spent meanwhile (the clients, go-redis, the
// in-process proxies and, for the workload, its history). On a machine
// other jobs load, the rate follows the share of the cores the process
// gets, while the CPU a cycle costs does not.
type window struct {
	cycles int64
	cpu    time.Duration
}

func (w window) cpuPerCycle() float64 {
	return float64(w.cpu.Microseconds()) / float64(w.cycles)
}

// measure runs one window and takes its CPU time from getrusage.
func measure(f func() int64) window {
	before := processCPU()
	n := f()
	return window{cycles: n, cpu: processCPU() - before}
}

// processCPU is the process's user and system time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// median is the middle of xs (the mean of the two middle ones for an even
// count): on a shared machine one window's rate can halve when a
// neighbour's job starts, and the median of the pairs' ratios is what
// such a burst cannot move far.
func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// workloadWindow runs the mutex workload for benchWindow and returns the
// cycles it completed (granted acquires) and the CPU the run and the
// recorder's last write cost (not the count's read of the history).
func workloadWindow(b *testing.B, nodes [][]sut.ClientNode, storage redis.Cmdable, keys int) window {
	f, err := os.Create(filepath.Join(b.TempDir(), "history.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	rec := history.NewRecorder(history.NewClock(), f)
	info, err := locks.Builtin().Lookup("token")
	if err != nil {
		b.Fatal(err)
	}
	m, err := workloads.NewMutex(workloads.Config{Clients: len(nodes), Keys: keys, TTL: time.Second, Seed: 1},
		workloads.Env{Recorder: rec, Lock: info, Storage: storage, Nodes: func(slot int) []sut.ClientNode { return nodes[slot] }})
	if err != nil {
		b.Fatal(err)
	}
	before := processCPU()
	stop, cancel := context.WithTimeout(context.Background(), benchWindow)
	defer cancel()
	if err := m.Run(context.Background(), stop); err != nil {
		b.Fatal(err)
	}
	if err := rec.Close(); err != nil {
		b.Fatal(err)
	}
	w := window{cpu: processCPU() - before}
	for _, op := range rec.Ops() {
		if op.F == history.FAcquire && op.Type == history.OK {
			w.cycles++
		}
	}
	return w
}

var rawCompareAndDelete = redis.NewScript(`
if redis.call("get", KEYS[1]) == ARGV[1] then
  return redis.call("del", KEYS[1])
else
  return 0
end`)

// rawWindow is the same cycle as bare go-redis calls for benchWindow,
// each on one of keys keys drawn at random.
func rawWindow(b *testing.B, nodes [][]sut.ClientNode, storage redis.Cmdable, keys int) int64 {
	ctx := context.Background()
	deadline := time.Now().Add(benchWindow)
	var cycles atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, len(nodes))
	for i, ns := range nodes {
		wg.Add(1)
		go func(i int, node redis.UniversalClient) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(1, uint64(i)))
			for time.Now().Before(deadline) {
				key := workloads.Key(rng.IntN(keys))
				token := fmt.Sprintf("%016x%016x", rng.Uint64(), rng.Uint64())
				err := node.Do(ctx, "set", key, token, "px", 1000, "nx").Err()
				if errors.Is(err, redis.Nil) {
					time.Sleep(time.Duration(rng.Int64N(int64(5 * time.Millisecond))))
					continue
				}
				if err != nil {
					errs <- err
					return
				}
				v, err := resource.Read(ctx, storage, key)
				if err == nil {
					_, err = resource.Write(ctx, storage, key, v+1, 0)
				}
				if err == nil {
					err = rawCompareAndDelete.Run(ctx, node, []string{key}, token).Err()
				}
				if err != nil {
					errs <- err
					return
				}
				cycles.Add(1)
			}
		}(i, ns[0].Client)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	return cycles.Load()
}
