// Package serve browses a store of runs in a web browser: the runs newest
// first, coloured by verdict; each run's report; each run's directory as a
// zip. It reads nothing outside the store: every file is opened through an
// os.Root, which refuses ".." and symbolic links that lead out of the store
// (store/latest, a link inside it, works).
package serve

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lockharness/lockharness/reports"
)

// DefaultAddr is where `harness serve` listens unless told otherwise:
// loopback only, because a store holds configurations and histories.
const DefaultAddr = "127.0.0.1:8080"

// URL prefixes.
const (
	runPrefix = "/run/" // files of the store: /run/<test>/<run>/index.html
	zipPrefix = "/zip/" // /zip/<test>/<run>.zip
)

// Server is an http.Handler over one store.
type Server struct {
	store string
	root  *os.Root
	fsys  fs.FS
	mux   *http.ServeMux

	mu    sync.Mutex
	cache map[string]cachedRun // run path → summary, while results.json is unchanged

	// zips bounds the archives built at once: each holds a compressor
	// (about a megabyte) and a core busy; fifty at once made the server
	// grow by 80 MB and every download slow. A slot is held while an
	// archive is built, never while it is sent.
	zips      chan struct{}
	downloads downloads
	// sendIdle is how long a response may wait on a client that takes
	// nothing (SendIdle; shorter in tests).
	sendIdle time.Duration
	// view serves porcupine's views with their own script allowed, and
	// no other (see viewPage).
	view viewPage
	// tmp holds the archives being built; Close removes it, and with it
	// those of requests still running when the server stops.
	tmp string
}

type cachedRun struct {
	mod  time.Time
	size int64
	run  Run
}

// Run is one row of the list of runs.
type Run struct {
	Test, Dir  string // store/<Test>/<Dir>
	Verdict    string // valid, invalid, unknown, "unchecked" (no results.json), InProgress or Incomplete (no index.html)
	Meta       reports.RunMeta
	Violations int // fatal ones: they make the run invalid
	Findings   int // harmless ones
}

// NewServer serves the store at store. The store must exist; runs added
// later appear on the next page load.
func NewServer(store string) (*Server, error) {
	st, err := os.Stat(store)
	if err != nil {
		return nil, fmt.Errorf("store %s: %w (run `harness run` first, or pass --store)", store, err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("store %s is not a directory: pass the store's directory with --store", store)
	}
	root, err := os.OpenRoot(store)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", store, err)
	}
	tmp, err := os.MkdirTemp("", "lockharness-serve-")
	if err != nil {
		_ = root.Close()
		return nil, fmt.Errorf("temporary directory for archives: %w (set TMPDIR to a writable directory)", err)
	}
	s := &Server{store: store, root: root, fsys: root.FS(), mux: http.NewServeMux(), cache: map[string]cachedRun{},
		zips: make(chan struct{}, maxZips), downloads: downloads{perClient: map[string]int{}}, sendIdle: SendIdle, tmp: tmp}
	// Should porcupine change its page so that it cannot be split (a test
	// guards against it), its views are served as they are, without
	// script, and everything else still works.
	if v, err := newViewPage(); err == nil {
		s.view = v
	}
	s.mux.HandleFunc("GET /{$}", s.list)
	s.mux.HandleFunc("GET /latest", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, runPrefix+reports.LatestLink+"/", http.StatusFound)
	})
	s.mux.HandleFunc("GET "+runPrefix+"{path...}", s.file)
	s.mux.HandleFunc("GET "+zipPrefix+"{test}/{run}", s.zip)
	s.mux.HandleFunc("GET "+matrixPrefix+"{name...}", s.matrix)
	return s, nil
}

// Close releases the store and removes the archives being built.
func (s *Server) Close() error {
	return errors.Join(s.root.Close(), os.RemoveAll(s.tmp))
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	// No script runs, nothing is loaded from elsewhere: see pagePolicy.
	// Files shown as they are and porcupine's views set their own.
	h.Set("Content-Security-Policy", pagePolicy)
	h.Set("Referrer-Policy", "no-referrer")
	s.mux.ServeHTTP(newDeadlineWriter(w, s.sendIdle), r)
}

// cleanName turns a URL path below a prefix into a name inside the store,
// or reports that it is not one: no "..", no absolute path, no hidden
// files, no empty elements.
func cleanName(p string) (string, bool) {
	p = strings.TrimSuffix(p, "/")
	if p == "" {
		return ".", true
	}
	if strings.Contains(p, "\\") || !fs.ValidPath(p) {
		return "", false
	}
	for _, el := range strings.Split(p, "/") {
		if strings.HasPrefix(el, ".") {
			return "", false
		}
	}
	return p, true
}

func (s *Server) file(w http.ResponseWriter, r *http.Request) {
	name, ok := cleanName(r.PathValue("path"))
	if !ok {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	f, err := s.fsys.Open(name)
	if err != nil {
		// Escaping symlinks and missing files look alike from outside.
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	if st.IsDir() {
		if !strings.HasSuffix(r.URL.Path, "/") {
			http.Redirect(w, r, r.URL.Path+"/", http.StatusMovedPermanently)
			return
		}
		s.dir(w, r, name)
		return
	}
	if !st.Mode().IsRegular() {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	rs, ok := f.(io.ReadSeeker)
	if !ok {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	if isView(name) && s.view.serve(w, r, f, st.Size()) {
		return
	}
	ctype, page := storeType(name)
	w.Header().Set("Content-Type", ctype)
	if !page {
		w.Header().Set("Content-Security-Policy", rawPolicy)
	}
	http.ServeContent(w, r, path.Base(name), st.ModTime(), rs)
}

// dir serves a directory's index.html, or a plain listing when it has none
// (a run still in progress, a test directory, the store).
func (s *Server) dir(w http.ResponseWriter, r *http.Request, name string) {
	index := path.Join(name, reports.IndexFile)
	if f, err := s.fsys.Open(index); err == nil {
		defer f.Close()
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
			if rs, ok := f.(io.ReadSeeker); ok {
				w.Header().Set("Content-Type", "text/html; charset=utf-8")
				http.ServeContent(w, r, reports.IndexFile, st.ModTime(), rs)
				return
			}
		}
	}
	entries, err := fs.ReadDir(s.fsys, name)
	if err != nil {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	var names []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		n := e.Name()
		if e.IsDir() || e.Type()&fs.ModeSymlink != 0 {
			n += "/"
		}
		names = append(names, n)
	}
	status := ""
	if strings.Count(name, "/") == 1 {
		switch s.progress(name) {
		case InProgress:
			status = "This run is in progress: its report appears here when it has finished."
		case Incomplete:
			status = "This run has no report: it was stopped before writing one. `harness report` on its directory checks its history and draws it."
		}
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = dirTmpl.Execute(w, struct {
		Name, Status string
		Names        []string
	}{name, status, names})
}

// HTTPServer is the http.Server `harness serve` runs h with: every phase
// of a connection has a timeout, so idle keep-alive connections and slow
// clients do not hold memory and descriptors for ever.
func HTTPServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		// Bounds a response that writes nothing at all; Server moves the
		// deadline with every write (SendIdle), so a large file goes out to
		// a client that keeps reading, and one that stops is cut off.
		WriteTimeout:   5 * time.Minute,
		IdleTimeout:    60 * time.Second,
		MaxHeaderBytes: 64 << 10,
	}
}

// Runs lists the runs of the store, newest first.
func (s *Server) Runs() ([]Run, error) {
	tests, err := fs.ReadDir(s.fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("read store: %w", err)
	}
	var runs []Run
	for _, t := range tests {
		if !t.IsDir() || strings.HasPrefix(t.Name(), ".") {
			continue // store/latest is a link: its run is listed under its test
		}
		dirs, err := fs.ReadDir(s.fsys, t.Name())
		if err != nil {
			continue
		}
		for _, d := range dirs {
			if !d.IsDir() || strings.HasPrefix(d.Name(), ".") {
				continue
			}
			runs = append(runs, s.summary(t.Name(), d.Name()))
		}
	}
	slices.SortStableFunc(runs, func(a, b Run) int {
		return cmp.Or(b.Meta.Start.Compare(a.Meta.Start), cmp.Compare(b.Dir, a.Dir), cmp.Compare(a.Test, b.Test))
	})
	return runs, nil
}

// Verdicts shown for runs without a report.
const (
	InProgress = "in progress" // no index.html yet, written to lately
	Incomplete = "incomplete"  // no index.html, and nothing written lately: killed or failed
)

// stillWriting is how recently a run without a report must have written a
// file to count as in progress rather than cut short. A run writes its
// history every FlushInterval; its check and report write nothing for at
// most a few minutes.
const stillWriting = 10 * time.Minute

// progress says whether the run at name (test/dir) has its report, and if
// not whether it is still being written.
func (s *Server) progress(name string) string {
	if st, err := fs.Stat(s.fsys, name+"/"+reports.IndexFile); err == nil && st.Mode().IsRegular() {
		return ""
	}
	var newest time.Time
	for _, f := range []string{reports.HistoryFile, reports.MetaFile, reports.ResultsFile} {
		if st, err := fs.Stat(s.fsys, name+"/"+f); err == nil && st.ModTime().After(newest) {
			newest = st.ModTime()
		}
	}
	if time.Since(newest) < stillWriting {
		return InProgress
	}
	return Incomplete
}

// summary reads a run's results.json (or run.json), cached while the file
// is unchanged. It reads only the head of results.json (readSummary): a
// store written before the holds had a file of their own has results of
// long runs that are hundreds of megabytes of holds. A run without
// index.html is shown as in progress or incomplete, whatever its
// results.json says (an interrupted check writes partial ones).
func (s *Server) summary(test, dir string) Run {
	run := s.summaryOfResults(test, dir)
	if p := s.progress(test + "/" + dir); p != "" {
		run.Verdict = p
	}
	return run
}

func (s *Server) summaryOfResults(test, dir string) Run {
	run := Run{Test: test, Dir: dir, Verdict: "unchecked"}
	p := test + "/" + dir + "/" + reports.ResultsFile
	st, err := fs.Stat(s.fsys, p)
	if err != nil {
		if b, err := fs.ReadFile(s.fsys, test+"/"+dir+"/"+reports.MetaFile); err == nil {
			_ = json.Unmarshal(b, &run.Meta)
		}
		if run.Meta.Start.IsZero() {
			run.Meta.Start = stampTime(dir)
		}
		return run
	}
	s.mu.Lock()
	c, ok := s.cache[p]
	s.mu.Unlock()
	if ok && c.mod.Equal(st.ModTime()) && c.size == st.Size() {
		return c.run
	}
	if f, err := s.fsys.Open(p); err == nil {
		sum, err := readSummary(f)
		f.Close()
		if err == nil {
			run.Meta, run.Verdict, run.Violations, run.Findings = sum.meta, string(sum.verdict), sum.fatal, sum.harmless
		} else {
			run.Verdict = "unknown"
		}
	} else {
		run.Verdict = "unknown"
	}
	if run.Meta.Start.IsZero() {
		run.Meta.Start = stampTime(dir)
	}
	s.mu.Lock()
	s.cache[p] = cachedRun{mod: st.ModTime(), size: st.Size(), run: run}
	s.mu.Unlock()
	return run
}

// stampTime reads the time out of a run directory's name.
func stampTime(dir string) time.Time {
	stamp, _, _ := strings.Cut(dir, "-")
	t, _ := time.Parse("20060102T150405.000Z", stamp)
	return t
}

func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	runs, err := s.Runs()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	var latest string
	if target, err := s.root.Readlink(reports.LatestLink); err == nil {
		latest = path.Clean(strings.ReplaceAll(target, "\\", "/"))
	}
	type row struct {
		Run
		Report, Zip, Start, Duration, Nemeses string
		Latest                                bool
	}
	rows := make([]row, len(runs))
	for i, rn := range runs {
		esc := url.PathEscape(rn.Test) + "/" + url.PathEscape(rn.Dir)
		rows[i] = row{Run: rn, Report: runPrefix + esc + "/", Zip: zipPrefix + esc + ".zip",
			Nemeses: strings.Join(rn.Meta.Nemeses, ", "), Latest: latest == rn.Test+"/"+rn.Dir}
		if !rn.Meta.Start.IsZero() {
			rows[i].Start = rn.Meta.Start.UTC().Format("2006-01-02 15:04:05")
		}
		if rn.Meta.Duration > 0 {
			rows[i].Duration = rn.Meta.Duration.Round(100 * time.Millisecond).String()
		}
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := listTmpl.Execute(w, struct {
		Store string
		Rows  []row
	}{s.store, rows}); err != nil && !errors.Is(err, http.ErrHandlerTimeout) {
		return
	}
}

var listTmpl = template.Must(template.New("list").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>lockharness runs</title>
<style>
body { font: 15px/1.45 system-ui, sans-serif; color: #222; margin: 0 auto; max-width: 1240px; padding: 0 16px 40px; background: #fafafa; }
h1 { font-size: 20px; }
table { border-collapse: collapse; width: 100%; background: #fff; }
th, td { border-bottom: 1px solid #ddd; padding: 5px 8px; text-align: left; }
th { background: #f0f0f0; }
.verdict { font-weight: 600; color: #fff; padding: 1px 8px; border-radius: 10px; }
.valid .verdict { background: #2e7d32; } .invalid .verdict { background: #c62828; }
.unknown .verdict, .unchecked .verdict { background: #757575; }
.progress .verdict, .incomplete .verdict { background: #fff; color: #555; border: 1px dashed #888; }
tr.invalid { background: #fff5f5; }
.note { color: #666; }
</style></head><body>
<h1>lockharness runs <span class="note">in {{.Store}}</span></h1><p><a href="/matrix/">matrices</a></p>
{{if .Rows}}<table id="runs">
<tr><th>started (UTC)</th><th>test</th><th>lock</th><th>nemeses</th><th>seed</th><th>duration</th><th>verdict</th><th></th></tr>
{{range .Rows}}<tr class="run {{.Verdict}}">
<td><a class="report" href="{{.Report}}">{{if .Start}}{{.Start}}{{else}}{{.Dir}}{{end}}</a>{{if .Latest}} <span class="note">latest</span>{{end}}</td>
<td>{{.Test}}</td><td>{{.Meta.Lock}}</td><td>{{.Nemeses}}</td><td>{{.Meta.Seed}}</td><td>{{.Duration}}</td>
<td><span class="verdict">{{.Verdict}}</span>{{if .Violations}} {{.Violations}} violation(s){{end}}{{if .Findings}} <span class="note">{{.Findings}} harmless finding(s)</span>{{end}}</td>
<td><a href="{{.Report}}">report</a> · <a href="{{.Zip}}">zip</a></td></tr>
{{end}}</table>
{{else}}<p>No runs yet. Start one with <code>harness run --lock token</code>.</p>{{end}}
</body></html>
`))

var dirTmpl = template.Must(template.New("dir").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Name}}</title></head><body>
<h1>{{.Name}}</h1><p><a href="/">all runs</a></p>{{if .Status}}<p class="status">{{.Status}}</p>{{end}}<ul>
{{range .Names}}<li><a href="{{.}}">{{.}}</a></li>
{{end}}</ul></body></html>
`))
