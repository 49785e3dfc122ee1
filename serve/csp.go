package serve

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"path"
	"strconv"
	"strings"

	"github.com/anishathalye/porcupine"

	"github.com/lockharness/lockharness/reports"
)

// Content-Security-Policies. Whatever lands in a store is served from it,
// and a store is written by runs, shards from CI and people: an HTML file
// in it must not run script in the browser of whoever browses the store.
// The reports and every page the server writes need no script at all; the
// only script that runs is porcupine's, on its views of a run, and only
// its own code, allowed by a hash computed at startup from porcupine's
// embedded page (see viewPage). Styles stay inline (the reports carry
// theirs; a style cannot run script), images come from the store itself,
// nothing is loaded from elsewhere, and no page can be framed.
const (
	basePolicy = "default-src 'none'; img-src 'self' data:; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
	// pagePolicy is every page's: the list, the matrices, the reports.
	pagePolicy = basePolicy + "; script-src 'none'"
	// rawPolicy is that of a file shown as it is (a history, an SVG, a
	// stray HTML file shown as text): sandboxed, an origin of its own.
	rawPolicy = pagePolicy + "; sandbox"
)

// isView says whether a store file is porcupine's view of a key, as
// reports.Render names them.
func isView(name string) bool {
	base := path.Base(name)
	return strings.HasPrefix(base, "porcupine-") && strings.HasSuffix(base, ".html")
}

// storeType is the content type a store file is served with, and whether
// it is a page (a report, a porcupine view) rather than a file shown as
// it is. Only the reports and the views are served as HTML: any other
// HTML, XML or unknown file is shown as plain text, which no browser runs.
func storeType(name string) (ctype string, page bool) {
	if path.Base(name) == reports.IndexFile || isView(name) {
		return "text/html; charset=utf-8", true
	}
	switch path.Ext(name) {
	case ".png":
		return "image/png", false
	case ".svg": // its scripts, if any, are refused by rawPolicy
		return "image/svg+xml", false
	case ".json":
		return "application/json", false
	}
	return "text/plain; charset=utf-8", false
}

// viewPage is porcupine's page (checker.View.WriteHTML), split at startup
// around its data: a view in the store is head + data + tail, its script
// porcupine's code followed by `const data = <JSON>; render(data)`. The
// data differs from view to view, so its script's hash cannot be known in
// advance; the server sends the data in a block of type application/json,
// which no browser runs, and a fixed script that reads it and draws: the
// only one viewPolicy allows. A file that only looks like a view, or one
// from another version of porcupine, is served with pagePolicy: its
// scripts do not run.
type viewPage struct {
	head, tail       []byte // a view on disk: head + data + tail
	newHead, newTail []byte // what is sent around the data instead
	policy           string // viewPolicy: the fixed script's hash
	script           string // the fixed script
}

// dataID is the id of the block that carries a view's data.
const dataID = "porcupine-data"

// newViewPage splits the page porcupine writes for an empty history.
func newViewPage() (viewPage, error) {
	var b bytes.Buffer
	none := porcupine.Model{Step: func(state, _, _ any) (bool, any) { return true, state }}
	if err := porcupine.Visualize(none, porcupine.LinearizationInfo{}, &b); err != nil {
		return viewPage{}, fmt.Errorf("porcupine's page: %w", err)
	}
	page := b.String()
	const dataMark = "const data = "
	at := strings.LastIndex(page, dataMark)
	open := strings.LastIndex(page[:max(at, 0)], "<script>")
	if at < 0 || open < 0 {
		return viewPage{}, errors.New("porcupine's page has no `const data = ` in a script: its views cannot be served")
	}
	dataAt := at + len(dataMark)
	dataEnd := dataAt + strings.IndexByte(page[dataAt:], '\n')
	end := dataEnd + strings.Index(page[dataEnd:], "</script>")
	if dataEnd < dataAt || end < dataEnd {
		return viewPage{}, errors.New("porcupine's page does not end its data and script as expected: its views cannot be served")
	}
	script := page[open+len("<script>"):at] +
		`const data = JSON.parse(document.getElementById("` + dataID + `").textContent)` + page[dataEnd:end]
	sum := sha256.Sum256([]byte(script))
	return viewPage{
		head: []byte(page[:dataAt]), tail: []byte(page[dataEnd:]),
		newHead: []byte(page[:open] + `<script type="application/json" id="` + dataID + `">`),
		newTail: []byte("</script>\n    <script>" + script + page[end:]),
		policy:  basePolicy + "; script-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'",
		script:  script,
	}, nil
}

// serve sends the view in f (of the given size) with its data moved out
// of the script, and reports false, having sent nothing, when f is not
// porcupine's page around data without a '<' (json.Marshal escapes it, so
// a view's data never holds one; one could end the data block).
func (v *viewPage) serve(w http.ResponseWriter, r *http.Request, f fs.File, size int64) bool {
	ra, ok := f.(io.ReaderAt)
	n := size - int64(len(v.head)) - int64(len(v.tail))
	if !ok || v.head == nil || n < 0 || !sameAt(ra, 0, v.head) || !sameAt(ra, size-int64(len(v.tail)), v.tail) {
		return false
	}
	data := io.NewSectionReader(ra, int64(len(v.head)), n)
	if hasByte(data, '<') {
		return false
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", v.policy)
	h.Set("Content-Length", strconv.FormatInt(int64(len(v.newHead))+n+int64(len(v.newTail)), 10))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return true
	}
	if _, err := w.Write(v.newHead); err != nil {
		return true
	}
	if _, err := io.Copy(w, io.NewSectionReader(ra, int64(len(v.head)), n)); err != nil {
		return true
	}
	_, _ = w.Write(v.newTail)
	return true
}

// sameAt says whether ra holds want at off, reading a chunk at a time.
func sameAt(ra io.ReaderAt, off int64, want []byte) bool {
	buf := make([]byte, min(len(want), 32<<10))
	for len(want) > 0 {
		k := min(len(want), len(buf))
		if _, err := ra.ReadAt(buf[:k], off); err != nil || !bytes.Equal(buf[:k], want[:k]) {
			return false
		}
		off, want = off+int64(k), want[k:]
	}
	return true
}

// hasByte says whether r holds c (or cannot be read to its end).
func hasByte(r io.Reader, c byte) bool {
	buf := make([]byte, 32<<10)
	for {
		k, err := r.Read(buf)
		if bytes.IndexByte(buf[:k], c) >= 0 {
			return true
		}
		if err == io.EOF {
			return false
		}
		if err != nil {
			return true
		}
	}
}
