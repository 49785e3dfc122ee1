package serve

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Load on the server `harness serve` runs, all at once.
const (
	loadClients   = 200 // each asks for the list, a report, its figure and its history
	loadZips      = 8   // of which this many also download a run's archive, each from an address of its own
	stalledZips   = 6   // clients that start the big run's archive and never read a byte
	halfRequests  = 6   // clients that send half a request and stop
	perLoadClient = 4   // requests of each client, besides its zip
)

// The load test (issue 22, beyond the table): many clients and slow ones
// at once against a served store. Every normal response arrives, whole,
// before the test's deadline; the stalled downloads are cut off by the
// server itself; afterwards the goroutines are back to what they were
// and the heap to about its size, and the memory per request is bounded.
// The bounds are generous: they catch a leak or a request that holds a
// whole file in memory, not a slow machine.
func TestServeUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("200 clients, a dozen slow ones")
	}
	store, older, newer := newStore(t)
	big := bigRun(t, store)
	h := openServer(t, store)
	h.sendIdle = time.Second
	ts := httptest.NewUnstartedServer(h)
	ts.Config = HTTPServer(h)
	ts.Start()
	t.Cleanup(ts.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	peak := sampleHeap(ctx)
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	baseline := runtime.NumGoroutine()

	stalled := make([]net.Conn, stalledZips)
	for i := range stalled {
		stalled[i] = startGet(t, ts, loopback(40+i), big+"\r\n")
	}
	for i := range halfRequests {
		startGet(t, ts, loopback(60+i), "/") // the request's last line never comes
	}
	requests := runClients(ctx, t, ts, []string{"/", "/run/token/" + filepath.Base(newer) + "/",
		"/run/latest/timeline.png", "/run/token/" + filepath.Base(older) + "/history.jsonl"},
		"/zip/token/"+filepath.Base(older)+".zip")

	waitFor(ctx, t, "the stalled downloads to be cut off", func() bool { return h.downloads.inFlight() == 0 })
	for i, c := range stalled {
		checkCutOff(t, i, c)
	}
	closeAll(t, stalled)
	waitGoroutines(ctx, t, baseline)

	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	perRequest := (after.TotalAlloc - before.TotalAlloc) / uint64(requests)
	t.Logf("%d requests: %d KiB allocated per request, heap %d → %d MiB, peak in use %d MiB",
		requests, perRequest>>10, before.HeapAlloc>>20, after.HeapAlloc>>20, peak()>>20)
	if perRequest > 1<<20 {
		t.Errorf("%d KiB allocated per request, want at most 1 MiB", perRequest>>10)
	}
	if after.HeapAlloc > before.HeapAlloc+32<<20 {
		t.Errorf("heap grew from %d to %d MiB and stayed", before.HeapAlloc>>20, after.HeapAlloc>>20)
	}
	if p := peak(); p > 256<<20 {
		t.Errorf("heap in use peaked at %d MiB", p>>20)
	}
}

// startGet connects from the address from and sends the first lines of a
// GET of path (a request whose end never comes unless path ends in
// "\r\n"), then does nothing: it never reads. The test's cleanup hangs
// up.
func startGet(t *testing.T, ts *httptest.Server, from *net.TCPAddr, path string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: from, Timeout: 10 * time.Second}
	c, err := d.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\n", strings.TrimSuffix(path, "\r\n"))
	if strings.HasSuffix(path, "\r\n") {
		fmt.Fprint(c, "\r\n")
	}
	return c
}

// runClients runs loadClients clients at once, each GETting every path
// and loadZips of them also zip, each from an address of its own; every
// response must be a whole 200 before ctx is done. It returns the number
// of requests.
func runClients(ctx context.Context, t *testing.T, ts *httptest.Server, paths []string, zip string) int {
	t.Helper()
	shared := &http.Transport{MaxIdleConnsPerHost: loadClients}
	t.Cleanup(shared.CloseIdleConnections)
	var wg sync.WaitGroup
	var n atomic.Int64
	errs := make(chan error, loadClients*(len(paths)+1))
	for i := range loadClients {
		c := &http.Client{Transport: shared}
		mine := paths
		if i < loadZips {
			c, mine = clientFrom(t, loopback(100+i)), append(append([]string(nil), paths...), zip)
		}
		wg.Go(func() {
			for _, p := range mine {
				n.Add(1)
				code, size, err := download(ctx, c, ts.URL+p)
				if err != nil || code != http.StatusOK || size == 0 {
					errs <- fmt.Errorf("client %d: GET %s: %d, %d bytes, %v", i, p, code, size, err)
				}
			}
			if tr, ok := c.Transport.(*http.Transport); ok {
				tr.CloseIdleConnections()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	return int(n.Load())
}

// checkCutOff reads what the stalled download on c got: a 200 whose body
// ends before its length.
func checkCutOff(t *testing.T, i int, c net.Conn) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(time.Minute))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Errorf("stalled client %d: %v", i, err)
		return
	}
	n, err := io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK || n >= resp.ContentLength || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("stalled client %d: %d, %d of %d bytes (%v); want a 200 cut off", i, resp.StatusCode, n, resp.ContentLength, err)
	}
}

func closeAll(t *testing.T, conns []net.Conn) {
	t.Helper()
	for _, c := range conns {
		_ = c.Close()
	}
}

// waitGoroutines waits, until ctx is done, for the goroutines to be back
// to baseline: the server keeps none for a client that is gone, nor for
// one that sent half a request (cut off by HTTPServer's
// ReadHeaderTimeout). It shows them if they are not.
func waitGoroutines(ctx context.Context, t *testing.T, baseline int) {
	t.Helper()
	for runtime.NumGoroutine() > baseline {
		select {
		case <-ctx.Done():
			var b strings.Builder
			_ = pprof.Lookup("goroutine").WriteTo(&b, 1)
			t.Fatalf("%d goroutines, %d before the load:\n%s", runtime.NumGoroutine(), baseline, b.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// sampleHeap samples the heap in use until ctx is done; the function it
// returns gives the largest sample.
func sampleHeap(ctx context.Context) func() uint64 {
	var peak atomic.Uint64
	go func() {
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	return peak.Load
}
