package serve

import (
	"archive/zip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockharness/lockharness/reports"
)

// A run without index.html is "in progress" while it writes, "incomplete"
// once it has stopped; its zip is refused while in progress (never a 200
// with an archive of files still changing) and whole afterwards.
func TestRunsWithoutReport(t *testing.T) {
	store, older, _ := newStore(t)
	running, err := reports.NewRunDir(store, "token", time.Date(2026, 1, 2, 3, 5, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(running, reports.HistoryFile), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ts := newTestServer(t, store)
	_, page, _ := get(t, ts.URL+"/")
	if !strings.Contains(page, `class="run in progress"`) {
		t.Errorf("list does not show the run in progress:\n%s", page)
	}
	zipURL := ts.URL + "/zip/token/" + filepath.Base(running) + ".zip"
	if code, body, _ := get(t, zipURL); code != 409 || !strings.Contains(body, "in progress") {
		t.Errorf("zip of a run in progress: %d %q", code, body)
	}
	if code, body, _ := get(t, ts.URL+"/run/token/"+filepath.Base(running)+"/"); code != 200 || !strings.Contains(body, "in progress") {
		t.Errorf("page of a run in progress: %d %q", code, body)
	}

	// Killed long ago: incomplete, and downloadable.
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(filepath.Join(running, reports.HistoryFile), old, old); err != nil {
		t.Fatal(err)
	}
	_, page, _ = get(t, ts.URL+"/")
	if !strings.Contains(page, `class="run incomplete"`) {
		t.Errorf("list does not show the killed run as incomplete:\n%s", page)
	}
	code, body, hdr := get(t, zipURL)
	if code != 200 || hdr.Get("Content-Length") == "" {
		t.Fatalf("zip of an incomplete run: %d, length %q", code, hdr.Get("Content-Length"))
	}
	if _, err := zip.NewReader(strings.NewReader(body), int64(len(body))); err != nil {
		t.Errorf("archive of an incomplete run: %v", err)
	}
	// A finished run still reads as its verdict.
	if !strings.Contains(page, `class="run valid"`) || filepath.Base(older) == "" {
		t.Errorf("finished run lost its verdict:\n%s", page)
	}
}

// Every phase of a connection has a timeout, so idle keep-alive
// connections cannot pile up.
func TestHTTPServerTimeouts(t *testing.T) {
	srv := HTTPServer(nil)
	if srv.ReadHeaderTimeout <= 0 || srv.ReadTimeout <= 0 || srv.WriteTimeout <= 0 || srv.IdleTimeout <= 0 || srv.MaxHeaderBytes <= 0 {
		t.Errorf("a phase without a bound: %+v", srv)
	}
}
