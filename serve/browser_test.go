package serve

import (
	"context"
	"html"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/lockharness/lockharness/matrix"
)

// findChromium returns the path of a Chromium the test can drive.
func findChromium() (string, error) {
	var err error
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		var p string
		if p, err = exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", err
}

// newBrowser starts a headless Chromium for the test, for at most 90
// seconds; the test's cleanup stops it.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	chrome, err := findChromium()
	if err != nil {
		t.Fatalf("headless Chromium not found (%v): apt-get install -y chromium", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chrome),
		chromedp.NoSandbox, // root in CI
		chromedp.Headless,
		chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-dev-shm-usage", true),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelBrowser(); cancelAlloc(); cancel() })
	return bctx
}

// A real browser opens the store, follows the newest run and sees its
// verdict, the story of its violation first with the assumption it broke
// beside it, and its timeline, loaded.
func TestBrowserShowsNewestRun(t *testing.T) {
	if testing.Short() {
		t.Skip("drives a headless Chromium")
	}
	store, _, newer := newStore(t)
	ts := newTestServer(t, store)
	bctx := newBrowser(t)

	step := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("browser: %s: %v", what, err)
		}
	}
	step("open the list of runs", chromedp.Do(bctx,
		chromedp.Navigate(ts.URL+"/"),
		chromedp.WaitVisible(chromedp.CSS("#runs"))))
	link, err := chromedp.Run(bctx, chromedp.AttributeValue(chromedp.CSS("tr.run a.report"), "href"))
	step("read the newest run's link", err)
	href := link.Value
	step("follow it", chromedp.Do(bctx,
		chromedp.Click(chromedp.CSS("tr.run a.report")),
		chromedp.WaitVisible(chromedp.CSS("#verdict"))))
	verdict, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS("#verdict")))
	step("read the verdict", err)
	url, err := chromedp.Run(bctx, chromedp.Location())
	step("read the location", err)
	natural, err := chromedp.Run(bctx, chromedp.Poll[int](
		`(() => { const i = document.getElementById("timeline"); return i && i.complete && i.naturalWidth > 0 ? i.naturalWidth : null; })()`,
		chromedp.WithPollingTimeout(30*time.Second)))
	step("wait for the timeline to load", err)
	storyWidth, err := chromedp.Run(bctx, chromedp.Poll[int](
		`(() => { const i = document.querySelector("#stories img.story-figure"); return i && i.complete && i.naturalWidth > 0 ? i.naturalWidth : null; })()`,
		chromedp.WithPollingTimeout(30*time.Second)))
	step("wait for the story diagram to load", err)
	broke, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS("#stories .assumption")))
	step("read which assumption broke", err)
	first, err := chromedp.Run(bctx, chromedp.Evaluate[bool](
		`document.getElementById("stories").getBoundingClientRect().top < document.querySelector("table").getBoundingClientRect().top`))
	step("place the story", err)
	if storyWidth < 700 || !first {
		t.Errorf("story diagram naturalWidth = %d, shown before the first table: %v; want a diagram at least 700 px wide, first", storyWidth, first)
	}
	for _, want := range []string{"Which assumption broke:", "Kleppmann's asynchronous model", "own model"} {
		if !strings.Contains(broke, want) {
			t.Errorf("beside the story: %q, want it to say %q", broke, want)
		}
	}
	// Its terms of art link to its glossary, each to an entry there.
	terms, err := chromedp.Run(bctx, chromedp.Poll[int](
		`(() => { const as = [...document.querySelectorAll("a.term")];
		  const ok = as.filter(a => { const e = document.getElementById(a.getAttribute("href").slice(1)); return e && e.closest("#glossary + dl.glossary, dl.glossary"); });
		  return as.length > 0 && ok.length === as.length && document.getElementById("glossary") ? as.length : null; })()`,
		chromedp.WithPollingTimeout(10*time.Second)))
	step("find the glossary links, each to its entry", err)
	if terms < 1 {
		t.Errorf("%d terms linked to the glossary, want the violations' terms linked", terms)
	}
	if want := "/run/token/" + filepath.Base(newer) + "/"; href != want || !strings.HasSuffix(url, want) {
		t.Errorf("first run links to %q and the browser is at %q; want the newest run %q", href, url, want)
	}
	if !strings.Contains(verdict, "INVALID") {
		t.Errorf("verdict banner says %q, want INVALID", verdict)
	}
	if natural != 1200 {
		t.Errorf("timeline naturalWidth = %d, want 1200", natural)
	}
}

// In a real browser, porcupine's view draws (its script runs under the
// policy), while the script of a hostile page in the store does not, in
// any of its forms: inline, an event handler, code put where a view's
// data goes.
func TestBrowserRunsOnlyTheViewsScript(t *testing.T) {
	if testing.Short() {
		t.Skip("drives a headless Chromium")
	}
	store, viewDir, evilDir := hostileStore(t)
	ts := newTestServer(t, store)
	bctx := newBrowser(t)
	if err := chromedp.Do(bctx, chromedp.Navigate(ts.URL+viewDir+"porcupine-lock-0.html")); err != nil {
		t.Fatal(err)
	}
	drawn, err := chromedp.Run(bctx, chromedp.Poll[int](
		`(() => { const n = document.querySelectorAll("#canvas svg rect").length; return n > 0 ? n : null })()`,
		chromedp.WithPollingTimeout(30*time.Second)))
	if err != nil || drawn == 0 {
		t.Fatalf("porcupine's view did not draw: %v", err)
	}
	for _, p := range []string{evilDir, evilDir + "porcupine-evil.html", evilDir + "porcupine-code.html",
		evilDir + "porcupine-script.html", evilDir + "evil.svg", evilDir + "evil.html"} {
		// Navigate returns after the load event, which comes after an
		// image's error (and its onerror).
		if err := chromedp.Do(bctx, chromedp.Navigate(ts.URL+p)); err != nil {
			t.Fatalf("open %s: %v", p, err)
		}
		title, err := chromedp.Run(bctx, chromedp.Evaluate[string](`document.title + (window.pwned ? " pwned" : "")`))
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if strings.Contains(title, "pwned") {
			t.Errorf("%s ran its script: title %q", p, title)
		}
	}
}

// A real browser opens a matrix's page and sees its heat map, loaded,
// with the legend a reader needs: a line per outcome class and the
// glyphs' line, in the picture itself.
func TestBrowserShowsHeatMapWithLegend(t *testing.T) {
	if testing.Short() {
		t.Skip("drives a headless Chromium")
	}
	store, _ := newMatrixStore(t)
	ts := newTestServer(t, store)
	bctx := newBrowser(t)
	if err := chromedp.Do(bctx, chromedp.Navigate(ts.URL+"/matrix/nightly")); err != nil {
		t.Fatalf("browser: open the matrix page: %v", err)
	}
	width, err := chromedp.Run(bctx, chromedp.Poll[int](
		`(() => { const i = document.getElementById("heatmap"); return i && i.complete && i.naturalWidth > 0 ? i.naturalWidth : null; })()`,
		chromedp.WithPollingTimeout(30*time.Second)))
	if err != nil {
		t.Fatalf("browser: wait for the heat map to load: %v", err)
	}
	// The page's policy lets no script fetch: open the picture itself.
	src, err := chromedp.Run(bctx, chromedp.Evaluate[string](`document.getElementById("heatmap").src`))
	if err == nil {
		err = chromedp.Do(bctx, chromedp.Navigate(src))
	}
	var svg string
	if err == nil {
		svg, err = chromedp.Run(bctx, chromedp.Evaluate[string](`new XMLSerializer().serializeToString(document)`))
	}
	if err != nil {
		t.Fatalf("browser: read the heat map it loaded: %v", err)
	}
	if width < 400 {
		t.Errorf("heat map naturalWidth = %d, want a picture at least 400 px wide", width)
	}
	svg = html.UnescapeString(svg)
	for _, c := range matrix.Classes() {
		if !strings.Contains(svg, ">"+c.Legend()+"<") {
			t.Errorf("the heat map the browser loaded lacks the legend line %q", c.Legend())
		}
	}
	if !strings.Contains(svg, ">"+matrix.GlyphLegend+"<") {
		t.Errorf("the heat map the browser loaded lacks the glyphs' legend %q", matrix.GlyphLegend)
	}
}
