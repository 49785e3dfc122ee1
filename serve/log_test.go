package serve

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockharness/lockharness/reports"
)

// A run's log (reports.LogFile) is served as text from its run's
// directory; a log that is a link out of the store is not.
func TestServesTheRunLog(t *testing.T) {
	store, older, newer := newStore(t)
	if err := os.WriteFile(filepath.Join(newer, reports.LogFile), []byte("setup     12:00:00.000\n<script>x</script>\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(t.TempDir(), "secret.log")
	if err := os.WriteFile(secret, []byte("TOP-SECRET"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(older, reports.LogFile)); err != nil {
		t.Fatal(err)
	}
	ts := newTestServer(t, store)
	code, body, hdr := get(t, ts.URL+"/run/token/"+filepath.Base(newer)+"/"+reports.LogFile)
	if code != 200 || !strings.HasPrefix(body, "setup") {
		t.Fatalf("GET the log = %d %.80q", code, body)
	}
	if ct := hdr.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("the log is served as %s, want text/plain: it is no page", ct)
	}
	if code, body, _ := get(t, ts.URL+"/run/token/"+filepath.Base(older)+"/"+reports.LogFile); code == 200 || strings.Contains(body, "TOP-SECRET") {
		t.Errorf("a log linked out of the store was served: %d", code)
	}
}
