package serve

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/nemesis"
	"github.com/lockharness/lockharness/reports"
)

// viewRun adds to store a run checked for real, in which porcupine
// refutes lock-0 (two clients acquire it, each while the other holds it),
// and renders it: its report links porcupine's view of lock-0. It returns
// the run's directory.
func viewRun(t *testing.T, store string) string {
	t.Helper()
	start := time.Date(2026, 1, 3, 0, 0, 0, 0, time.UTC)
	dir, err := reports.NewRunDir(store, "views", start)
	if err != nil {
		t.Fatal(err)
	}
	var ops []history.Op
	add := func(t int64, p history.Process, typ history.Type, f string, v *history.Value) {
		ops = append(ops, history.Op{Index: int64(len(ops)), Time: t * ms, Process: p, Type: typ, F: f, Key: "lock-0", Value: v})
	}
	for i, p := range []history.Process{0, 1} {
		at := int64(100 + 100*i)
		add(at, p, history.Invoke, history.FAcquire, nil)
		add(at+2, p, history.OK, history.FAcquire, &history.Value{Token: fmt.Sprint(i), Deadline: 10_000 * ms})
	}
	for i, p := range []history.Process{0, 1} {
		at := int64(400 + 100*i)
		add(at, p, history.Invoke, history.FRelease, &history.Value{Token: fmt.Sprint(i)})
		add(at+1, p, history.OK, history.FRelease, nil)
	}
	res, err := checker.Check(context.Background(), history.Events(ops), checker.Config{Views: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := res.View("lock-0"); !ok {
		t.Fatalf("porcupine drew no view of lock-0: %v", res.Verdict)
	}
	meta := reports.RunMeta{Test: "views", Lock: "token", Seed: 1, Command: "harness run --lock token --seed 1", Start: start, Duration: time.Second}
	out, err := reports.WriteResults(dir, meta, res)
	if err != nil {
		t.Fatal(err)
	}
	rec := reports.Record{RunMeta: meta, FaultKinds: nemesis.FaultKinds()}
	if _, err := reports.Render(context.Background(), dir, rec, history.Events(ops), out.Result); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "porcupine-lock-0.html")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// hostile is a page with inline script in every form a browser runs.
const hostile = `<!doctype html><html><head><title>hostile</title>
<script>window.pwned = 1; document.title = "pwned"</script></head>
<body><img src="x" onerror="document.title='pwned'"><a href="javascript:document.title='pwned'">x</a>
<svg onload="document.title='pwned'"></svg></body></html>`

// hostileStore is a store with a real report, a real porcupine view and
// hostile files where a browser might run them: an index.html (served as
// a report), a page named like a view, a stray .html, an SVG with script.
// It returns the store and the URL paths of the run with the view and of
// the hostile run.
func hostileStore(t *testing.T) (store, viewDir, evilDir string) {
	t.Helper()
	store, _, _ = newStore(t)
	dir := viewRun(t, store)
	evil, err := reports.NewRunDir(store, "evil", time.Date(2026, 1, 4, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{
		reports.IndexFile:      hostile,
		"porcupine-evil.html":  hostile,
		"evil.html":            hostile,
		"evil.svg":             `<svg xmlns="http://www.w3.org/2000/svg"><script>document.title="pwned"</script></svg>`,
		reports.HistoryFile:    "{}\n",
		"notes.xml":            `<html xmlns="http://www.w3.org/1999/xhtml"><script>document.title="pwned"</script></html>`,
		"porcupine-other.html": strings.Replace(hostile, "<title>", "<title>Porcupine", 1),
	} {
		if err := os.WriteFile(filepath.Join(evil, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The real view doctored: code where its data goes (sent in the data
	// block, which does not run), and a script that would end the block.
	view, err := os.ReadFile(filepath.Join(dir, "porcupine-lock-0.html"))
	if err != nil {
		t.Fatal(err)
	}
	for name, doctored := range map[string]string{
		"porcupine-code.html":   strings.Replace(string(view), "const data = {", `const data = document.title="pwned" && {`, 1),
		"porcupine-script.html": strings.Replace(string(view), `{"Partitions"`, `{"</script><script>document.title='pwned'</script>":1,"Partitions"`, 1),
	} {
		if doctored == string(view) {
			t.Fatalf("%s: nothing doctored", name)
		}
		if err := os.WriteFile(filepath.Join(evil, name), []byte(doctored), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return store, "/run/views/" + filepath.Base(dir) + "/", "/run/evil/" + filepath.Base(evil) + "/"
}

// policy parses a Content-Security-Policy into its directives.
func policy(t *testing.T, csp string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, d := range strings.Split(csp, ";") {
		f := strings.Fields(d)
		if len(f) == 0 {
			continue
		}
		if _, dup := out[f[0]]; dup {
			t.Errorf("directive %s twice in %q", f[0], csp)
		}
		out[f[0]] = f[1:]
	}
	return out
}

var (
	scriptRE  = regexp.MustCompile(`(?is)<script([^>]*)>(.*?)</script\s*>`)
	handlerRE = regexp.MustCompile(`(?i)<[^>]*\son[a-z]+\s*=`)
)

// inlineScripts are the bodies of the scripts a browser would run in
// page: those without a type, or of a JavaScript type.
func inlineScripts(page string) []string {
	var out []string
	for _, m := range scriptRE.FindAllStringSubmatch(page, -1) {
		attrs := strings.ToLower(m[1])
		if strings.Contains(attrs, "type=") && !strings.Contains(attrs, "javascript") && !strings.Contains(attrs, `type="module"`) {
			continue
		}
		out = append(out, m[2])
	}
	return out
}

// allowed says whether the script-src sources allow an inline script
// with this body.
func allowed(sources []string, body string) bool {
	sum := sha256.Sum256([]byte(body))
	return slices.Contains(sources, "'sha256-"+base64.StdEncoding.EncodeToString(sum[:])+"'")
}

// Every page carries a policy under which no inline script runs, not even
// from a hostile file in the store; porcupine's view runs its own script,
// allowed by the one hash the policy names, and nothing else.
func TestPoliciesRunOnlyTheViewsScript(t *testing.T) {
	store, viewDir, evilDir := hostileStore(t)
	h, ts := newServers(t, store)
	for _, p := range []string{"/", "/matrix/", viewDir, viewDir + "index.html", evilDir, evilDir + "porcupine-evil.html",
		evilDir + "porcupine-other.html", evilDir + "porcupine-script.html", "/run/evil/", "/zip/evil/missing.zip"} {
		code, body, hdr := get(t, ts.URL+p)
		pol := policy(t, hdr.Get("Content-Security-Policy"))
		if hdr.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: X-Content-Type-Options %q", p, hdr.Get("X-Content-Type-Options"))
		}
		if !slices.Equal(pol["script-src"], []string{"'none'"}) || !slices.Equal(pol["default-src"], []string{"'none'"}) {
			t.Errorf("%s (%d): policy %q lets script run", p, code, hdr.Get("Content-Security-Policy"))
		}
		for _, s := range inlineScripts(body) {
			if allowed(pol["script-src"], s) {
				t.Errorf("%s: inline script allowed: %.80q", p, s)
			}
		}
	}
	// A doctored view is sent as a view: its code is in the data block,
	// and the one script that runs is porcupine's.
	checkView(t, h, ts.URL+evilDir+"porcupine-code.html", false)
	// The report itself needs no script: none it has is refused.
	_, report, _ := get(t, ts.URL+viewDir)
	if n := len(inlineScripts(report)); n != 0 || handlerRE.MatchString(report) {
		t.Errorf("the report has %d inline scripts or event handlers, which its policy refuses", n)
	}
	// Files shown as they are: a type that runs nothing, sandboxed.
	for p, want := range map[string]string{"evil.html": "text/plain; charset=utf-8", "evil.svg": "image/svg+xml",
		"notes.xml": "text/plain; charset=utf-8", "history.jsonl": "text/plain; charset=utf-8"} {
		_, _, hdr := get(t, ts.URL+evilDir+p)
		pol := policy(t, hdr.Get("Content-Security-Policy"))
		if hdr.Get("Content-Type") != want || !slices.Equal(pol["script-src"], []string{"'none'"}) || pol["sandbox"] == nil {
			t.Errorf("%s: %s, policy %q; want %s, sandboxed, no script", p, hdr.Get("Content-Type"), hdr.Get("Content-Security-Policy"), want)
		}
	}
	checkView(t, h, ts.URL+viewDir+"porcupine-lock-0.html", true)
}

// checkView checks the served view: one inline script, allowed by the one
// hash of its policy, the data in a block that does not run.
func checkView(t *testing.T, h *Server, url string, real bool) {
	t.Helper()
	code, body, hdr := get(t, url)
	pol := policy(t, hdr.Get("Content-Security-Policy"))
	src := pol["script-src"]
	if code != 200 || hdr.Get("Content-Type") != "text/html; charset=utf-8" || len(src) != 1 || !strings.HasPrefix(src[0], "'sha256-") {
		t.Fatalf("view: %d %s, script-src %q; want one hash", code, hdr.Get("Content-Type"), src)
	}
	if !slices.Equal(pol["default-src"], []string{"'none'"}) {
		t.Errorf("view: default-src %q", pol["default-src"])
	}
	scripts := inlineScripts(body)
	if len(scripts) != 1 || !allowed(src, scripts[0]) || scripts[0] != h.view.script {
		t.Fatalf("view runs %d inline scripts; want porcupine's own, allowed by its hash", len(scripts))
	}
	if real && !strings.Contains(body, `<script type="application/json" id="porcupine-data">{"Partitions"`) {
		t.Errorf("view's data is not in its block")
	}
}

// The view page splits around its data for the porcupine the harness is
// built with: an upgrade that changes its page must change viewPage too.
func TestViewPageSplits(t *testing.T) {
	v, err := newViewPage()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(v.script, "function render") || !strings.HasSuffix(strings.TrimSpace(v.script), "render(data)") {
		t.Errorf("the view's script is not porcupine's:\n%.300s", v.script)
	}
}
