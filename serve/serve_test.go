package serve

import (
	"archive/zip"
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/nemesis"
	"github.com/lockharness/lockharness/reports"
)

const ms = int64(time.Millisecond)

// run makes a small history: clients 0 and 1 take turns on lock-0; with
// overlap, client 1 also acquires while client 0 holds it.
func run(overlap bool) ([]history.Op, checker.Result) {
	var ops []history.Op
	var holds []checker.Hold
	add := func(t int64, p history.Process, typ history.Type, f, key string, v *history.Value) {
		ops = append(ops, history.Op{Index: int64(len(ops)), Time: t, Process: p, Type: typ, F: f, Key: key, Value: v})
	}
	add(500*ms, history.Nemesis, history.Invoke, "start-partition", "", &history.Value{Targets: []string{"c0->n1"}})
	add(510*ms, history.Nemesis, history.OK, "start-partition", "", &history.Value{Targets: []string{"c0->n1"}})
	for i := int64(0); i < 10; i++ {
		t := 100*ms + i*200*ms
		p := history.Process(i % 2)
		add(t, p, history.Invoke, history.FAcquire, "lock-0", nil)
		add(t+2*ms, p, history.OK, history.FAcquire, "lock-0", &history.Value{Token: fmt.Sprint(i), Deadline: t + time.Second.Nanoseconds()})
		add(t+100*ms, p, history.Invoke, history.FRelease, "lock-0", &history.Value{Token: fmt.Sprint(i)})
		add(t+101*ms, p, history.OK, history.FRelease, "lock-0", nil)
		holds = append(holds, checker.Hold{Process: int(p), Key: "lock-0", Start: t + 2*ms, End: t + 100*ms, Deadline: t + time.Second.Nanoseconds(), Acquire: int64(len(ops) - 3)})
	}
	add(2500*ms, history.Nemesis, history.Invoke, history.FFinalHeal, "", nil)
	add(2510*ms, history.Nemesis, history.OK, history.FFinalHeal, "", nil)
	res := checker.Result{
		Verdict:  checker.Valid,
		Checkers: map[string]checker.CheckResult{"lock-promise": {Verdict: checker.Valid}},
		Counts:   map[string]map[string]int{"acquire": {"ok": 10}, "release": {"ok": 10}},
		Holds:    holds,
	}
	if overlap {
		res.Verdict = checker.Invalid
		res.Checkers["lock-promise"] = checker.CheckResult{Verdict: checker.Invalid}
		res.Violations = []checker.Violation{{Checker: "lock-promise", Kind: checker.KindOverlap, Key: "lock-0",
			Processes: []int{0, 1}, Start: 550 * ms, End: 600 * ms, Fatal: true}}
		res.Holds = append(res.Holds, checker.Hold{Process: 1, Key: "lock-0", Start: 550 * ms, End: 650 * ms})
	}
	return ops, res
}

// newStore writes two rendered runs: a valid one, then (newer) an invalid
// one. It returns the store and the directory of each.
func newStore(t *testing.T) (store, older, newer string) {
	t.Helper()
	store = t.TempDir()
	for i, overlap := range []bool{false, true} {
		start := time.Date(2026, 1, 2, 3, 4, 5+i, 0, time.UTC)
		dir, err := reports.NewRunDir(store, "token", start)
		if err != nil {
			t.Fatal(err)
		}
		ops, res := run(overlap)
		meta := reports.RunMeta{Test: "token", Lock: "token", Nemeses: []string{"partition"}, Seed: uint64(100 + i),
			Command: fmt.Sprintf("harness run --lock token --seed %d", 100+i), Start: start, Duration: 2600 * time.Millisecond}
		var hist bytes.Buffer
		for _, op := range ops {
			b, _ := json.Marshal(op)
			hist.Write(append(b, '\n'))
		}
		if err := os.WriteFile(filepath.Join(dir, reports.HistoryFile), hist.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := reports.WriteJSON(dir, reports.MetaFile, meta); err != nil {
			t.Fatal(err)
		}
		out, err := reports.WriteResults(dir, meta, res)
		if err != nil {
			t.Fatal(err)
		}
		rec := reports.Record{RunMeta: meta, FaultKinds: nemesis.FaultKinds()}
		if _, err := reports.Render(context.Background(), dir, rec, history.Events(ops), out.Result); err != nil {
			t.Fatal(err)
		}
		if err := reports.PointLatest(store, dir); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			older = dir
		} else {
			newer = dir
		}
	}
	return store, older, newer
}

func newTestServer(t *testing.T, store string) *httptest.Server {
	t.Helper()
	h, err := NewServer(store)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	ts := httptest.NewServer(h) // 127.0.0.1
	t.Cleanup(ts.Close)
	return ts
}

func get(t *testing.T, url string) (int, string, http.Header) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b), resp.Header
}

func TestListsRunsNewestFirst(t *testing.T) {
	store, older, newer := newStore(t)
	ts := newTestServer(t, store)
	code, body, _ := get(t, ts.URL+"/")
	if code != 200 {
		t.Fatalf("GET / = %d", code)
	}
	iNew := strings.Index(body, "/run/token/"+filepath.Base(newer)+"/")
	iOld := strings.Index(body, "/run/token/"+filepath.Base(older)+"/")
	if iNew < 0 || iOld < 0 || iNew > iOld {
		t.Errorf("runs not listed newest first (new at %d, old at %d):\n%s", iNew, iOld, body)
	}
	for _, want := range []string{`class="run invalid"`, `class="run valid"`, "seed", "101", "partition", ".zip"} {
		if !strings.Contains(body, want) {
			t.Errorf("list lacks %q", want)
		}
	}
}

func TestServesReportsAndLatest(t *testing.T) {
	store, _, newer := newStore(t)
	ts := newTestServer(t, store)
	base := "/run/token/" + filepath.Base(newer) + "/"
	for _, p := range []string{base, base + "index.html", "/run/latest/index.html", "/run/latest/timeline.png"} {
		code, body, hdr := get(t, ts.URL+p)
		if code != 200 {
			t.Errorf("GET %s = %d", p, code)
			continue
		}
		if strings.HasSuffix(p, ".png") {
			if hdr.Get("Content-Type") != "image/png" || !strings.HasPrefix(body, "\x89PNG") {
				t.Errorf("GET %s: %s, not a PNG", p, hdr.Get("Content-Type"))
			}
		} else if !strings.Contains(body, `data-verdict="invalid"`) {
			t.Errorf("GET %s is not the newest run's report", p)
		}
	}
	// /latest redirects to the newest run.
	resp, err := http.Get(ts.URL + "/latest")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `data-verdict="invalid"`) {
		t.Errorf("/latest: %d", resp.StatusCode)
	}
}

func TestZipHoldsTheRunDirectory(t *testing.T) {
	store, older, _ := newStore(t)
	if err := os.Symlink("/etc/passwd", filepath.Join(older, "evil")); err != nil {
		t.Fatal(err)
	}
	ts := newTestServer(t, store)
	code, body, hdr := get(t, ts.URL+"/zip/token/"+filepath.Base(older)+".zip")
	if code != 200 || hdr.Get("Content-Type") != "application/zip" {
		t.Fatalf("zip: %d %s", code, hdr.Get("Content-Type"))
	}
	zr, err := zip.NewReader(strings.NewReader(body), int64(len(body)))
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, f := range zr.File {
		names[filepath.Base(f.Name)] = true
	}
	for _, want := range []string{"history.jsonl", "results.json", "run.json", "index.html", "timeline.png", "rate.svg"} {
		if !names[want] {
			t.Errorf("zip lacks %s: %v", want, names)
		}
	}
	if names["evil"] {
		t.Error("zip followed a symlink out of the store")
	}
}

// rawGet sends path exactly as written, with no client-side cleaning.
func rawGet(t *testing.T, addr, path string) (int, string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", path, addr)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestRefusesPathsOutsideTheStore(t *testing.T) {
	store, older, _ := newStore(t)
	run := "token/" + filepath.Base(older)
	secret := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(secret, []byte("TOP-SECRET"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Symlinks that lead out: absolute, relative, a whole directory.
	for name, target := range map[string]string{
		filepath.Join(older, "evil-abs"): "/etc/passwd",
		filepath.Join(older, "evil-rel"): "../../../../../../../../etc/passwd",
		filepath.Join(older, "secret"):   secret,
		filepath.Join(store, "etc"):      "/etc",
		filepath.Join(store, "outside"):  filepath.Dir(secret),
	} {
		if err := os.Symlink(target, name); err != nil {
			t.Fatal(err)
		}
	}
	ts := newTestServer(t, store)
	addr := strings.TrimPrefix(ts.URL, "http://")
	for _, p := range []string{
		"/run/../../../../../../etc/passwd",
		"/run/%2e%2e/%2e%2e/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
		"/run/..%2f..%2f..%2f..%2f..%2fetc%2fpasswd",
		"/run/%2E%2E/%2E%2E/%2E%2E/%2E%2E/etc/passwd",
		"/run//etc/passwd",
		"/run/%2fetc%2fpasswd",
		"/run/" + run + "/../../../../../../etc/passwd",
		"/run/" + run + "/evil-abs",
		"/run/" + run + "/evil-rel",
		"/run/" + run + "/secret",
		"/run/etc/passwd",
		"/run/outside/secret.txt",
		"/run/outside/",
		"/zip/..%2f..%2f..%2fetc/passwd.zip",
		"/zip/%2e%2e/%2e%2e.zip",
		"/zip/etc/ssl.zip",
		"/zip/outside/x.zip",
		"/run/.latest-1",
		"/run/" + run + "/.results.json.tmp",
		"/run/..\\..\\etc\\passwd",
	} {
		code, body := rawGet(t, addr, p)
		if code == 200 || strings.Contains(body, "root:") || strings.Contains(body, "TOP-SECRET") {
			t.Errorf("GET %s = %d, leaked:\n%.200s", p, code, body)
		}
		// A redirect must stay inside the site and still refuse.
		if code >= 300 && code < 400 {
			c2, b2, _ := get(t, ts.URL+p)
			if c2 == 200 && (strings.Contains(b2, "root:") || strings.Contains(b2, "TOP-SECRET")) {
				t.Errorf("GET %s redirected to a leak", p)
			}
		}
	}
	// The listing does not show escaping links as runs.
	_, body, _ := get(t, ts.URL+"/")
	if strings.Contains(body, "/run/etc/") || strings.Contains(body, "/run/outside/") {
		t.Error("the run list shows a link that leads out of the store")
	}
}

func TestNewServerNeedsAStore(t *testing.T) {
	if _, err := NewServer(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("NewServer of a missing store succeeded")
	}
}

// cleanName refuses on its own, whatever the router has cleaned first.
func TestCleanName(t *testing.T) {
	for p, want := range map[string]string{
		"":                    ".",
		"token/run/":          "token/run",
		"latest/index.html":   "latest/index.html",
		"..":                  "",
		"token/../../etc":     "",
		"/etc/passwd":         "",
		"token//run":          "",
		"token/./run":         "",
		".hidden":             "",
		"token/run/.tmp":      "",
		"..\\..\\etc\\passwd": "",
	} {
		got, ok := cleanName(p)
		if (want == "") == ok || got != want {
			t.Errorf("cleanName(%q) = %q, %v; want %q", p, got, ok, want)
		}
	}
	if host, _, err := net.SplitHostPort(DefaultAddr); err != nil || !net.ParseIP(host).IsLoopback() {
		t.Errorf("DefaultAddr %s is not loopback", DefaultAddr)
	}
}
