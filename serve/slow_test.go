package serve

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockharness/lockharness/reports"
)

// bigRunSize is the history of bigRun: incompressible, so its archive is
// larger than what the socket buffers between a client that never reads
// and the server hold (Linux's defaults: up to 4 MiB sent, 128 KiB
// received). Such a client stalls its download half-way.
const bigRunSize = 12 << 20

// bigRun adds a finished run to store whose archive stalls on a client
// that never reads. It returns the run's /zip/ path.
func bigRun(t *testing.T, store string) string {
	t.Helper()
	dir, err := reports.NewRunDir(store, "big", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, bigRunSize)
	_, _ = rand.NewChaCha8([32]byte{7}).Read(b)
	if err := os.WriteFile(filepath.Join(dir, reports.HistoryFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, reports.IndexFile), []byte("<!doctype html><title>big</title>"), 0o644); err != nil {
		t.Fatal(err)
	}
	return "/zip/big/" + filepath.Base(dir) + ".zip"
}

// newServers is newTestServer, with the handler too.
func newServers(t *testing.T, store string) (*Server, *httptest.Server) {
	t.Helper()
	h := openServer(t, store)
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return h, ts
}

// loopback is a client address of its own: 127.0.0.n (all of 127/8 is
// loopback on Linux), so that the server counts it as another client.
func loopback(n int) *net.TCPAddr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, byte(n>>8), byte(n))}
}

// slowGet starts GET path from the address from, reads the status line
// and the headers and then reads nothing more: a client that stalls. The
// test's cleanup hangs up.
func slowGet(t *testing.T, ts *httptest.Server, from *net.TCPAddr, path string) (*http.Response, net.Conn) {
	t.Helper()
	d := net.Dialer{LocalAddr: from, Timeout: 10 * time.Second}
	c, err := d.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Minute))
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path)
	resp, err := http.ReadResponse(bufio.NewReaderSize(c, 4096), nil)
	if err != nil {
		t.Fatalf("slow client %s: %v", from, err)
	}
	return resp, c
}

// clientFrom is an HTTP client whose connections come from the address
// from.
func clientFrom(t *testing.T, from *net.TCPAddr) *http.Client {
	d := &net.Dialer{LocalAddr: from, Timeout: 10 * time.Second}
	tr := &http.Transport{DialContext: d.DialContext}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// download GETs url with c before ctx is done and reads the whole body.
func download(ctx context.Context, c *http.Client, url string) (int, int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, 0, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, n, err
}

// Issue 22 row 3: four clients start the archive of a big run and never
// read it. They hold their connections, not the build slots: another
// client's download finishes long before the test's (generous) deadline.
// Before the fix the four held all the slots for as long as they stalled,
// and the download waited for ever (five minutes under `harness serve`).
func TestStalledDownloadsHoldNoSlot(t *testing.T) {
	store, older, _ := newStore(t)
	big := bigRun(t, store)
	_, ts := newServers(t, store)
	for i := range maxZips {
		resp, _ := slowGet(t, ts, loopback(10+i), big)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("stalled client %d: %d", i, resp.StatusCode)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	code, n, err := download(ctx, clientFrom(t, loopback(1)), ts.URL+"/zip/token/"+filepath.Base(older)+".zip")
	if err != nil || code != http.StatusOK || n == 0 {
		t.Fatalf("a download behind %d stalled ones: %d, %d bytes, %v", maxZips, code, n, err)
	}
}

// One address has at most maxPerClient downloads at once; the next is
// refused with 429 and a Retry-After, while other addresses are served.
func TestDownloadsPerClient(t *testing.T) {
	store, older, _ := newStore(t)
	big := bigRun(t, store)
	h, ts := newServers(t, store)
	var conns []net.Conn
	for range maxPerClient {
		resp, c := slowGet(t, ts, loopback(20), big)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("download: %d", resp.StatusCode)
		}
		conns = append(conns, c)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	small := ts.URL + "/zip/token/" + filepath.Base(older) + ".zip"
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, small, nil)
	resp, err := clientFrom(t, loopback(20)).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(body), "in progress") {
		t.Errorf("download %d from one address: %d %q, Retry-After %q; want 429", maxPerClient+1, resp.StatusCode, body, resp.Header.Get("Retry-After"))
	}
	if code, _, err := download(ctx, clientFrom(t, loopback(21)), small); code != http.StatusOK || err != nil {
		t.Errorf("download from another address: %d %v", code, err)
	}
	// Once its downloads end, the address may download again.
	for _, c := range conns {
		_ = c.Close()
	}
	waitFor(ctx, t, "the hung-up downloads to end", func() bool { return h.downloads.inFlight() == 0 })
	if code, _, err := download(ctx, clientFrom(t, loopback(20)), small); code != http.StatusOK || err != nil {
		t.Errorf("download after the others ended: %d %v", code, err)
	}
}

// The server admits maxDownloads at once in all, maxPerClient from one
// address, and admits again as they end.
func TestDownloadLimits(t *testing.T) {
	d := downloads{perClient: map[string]int{}}
	for i := range maxPerClient {
		if code, msg := d.admit("a"); code != 0 {
			t.Fatalf("download %d from a: %d %s", i, code, msg)
		}
	}
	if code, _ := d.admit("a"); code != http.StatusTooManyRequests {
		t.Errorf("download %d from a: %d, want 429", maxPerClient+1, code)
	}
	for i := maxPerClient; i < maxDownloads; i++ {
		if code, msg := d.admit(fmt.Sprint(i)); code != 0 {
			t.Fatalf("download %d: %d %s", i, code, msg)
		}
	}
	if code, _ := d.admit("b"); code != http.StatusServiceUnavailable {
		t.Errorf("download %d: %d, want 503", maxDownloads+1, code)
	}
	d.release("a")
	if code, _ := d.admit("b"); code != 0 || d.inFlight() != maxDownloads {
		t.Errorf("after one ended: %d, %d in flight", code, d.inFlight())
	}
	for i := maxPerClient; i < maxDownloads; i++ {
		d.release(fmt.Sprint(i))
	}
	for range maxPerClient - 1 {
		d.release("a")
	}
	d.release("b")
	if d.inFlight() != 0 || len(d.perClient) != 0 {
		t.Errorf("all ended: %d in flight, %d addresses kept", d.inFlight(), len(d.perClient))
	}
}

// A client that stops reading is cut off once it has taken nothing for
// sendIdle: its download ends on the server, and the client gets less
// than the archive's length.
func TestNeverReadingClientIsCutOff(t *testing.T) {
	store, _, _ := newStore(t)
	big := bigRun(t, store)
	h, ts := newServers(t, store)
	h.sendIdle = 200 * time.Millisecond
	resp, c := slowGet(t, ts, loopback(30), big)
	if resp.StatusCode != http.StatusOK || resp.ContentLength <= bigRunSize {
		t.Fatalf("download: %d, length %d", resp.StatusCode, resp.ContentLength)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	waitFor(ctx, t, "the server to cut off the stalled download", func() bool { return h.downloads.inFlight() == 0 })
	_ = c.SetReadDeadline(time.Now().Add(time.Minute))
	n, _ := io.Copy(io.Discard, resp.Body)
	if n >= resp.ContentLength {
		t.Errorf("the stalled client got all %d bytes", n)
	}
}

// waitFor polls cond until it holds, failing the test when ctx is done
// first.
func waitFor(ctx context.Context, t *testing.T, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("gave up waiting for %s: %v", what, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}
