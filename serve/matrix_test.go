package serve

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/matrix"
)

func TestShowsMatricesLinkedToRuns(t *testing.T) {
	store, newer := newMatrixStore(t)
	rel := func(dir string) string { r, _ := filepath.Rel(store, dir); return filepath.ToSlash(r) }
	ts := newTestServer(t, store)

	code, body, _ := get(t, ts.URL+"/matrix/")
	if code != http.StatusOK || !strings.Contains(body, `href="/matrix/nightly"`) {
		t.Fatalf("matrix list: %d\n%s", code, body)
	}
	code, body, _ = get(t, ts.URL+"/matrix/nightly")
	if code != http.StatusOK {
		t.Fatalf("matrix page: %d", code)
	}
	for _, want := range []string{`id="heatmap" src="/run/nightly/heatmap.svg"`, "Expectations missed", "token/partition/seed-2",
		`href="/run/` + rel(newer) + `/"`, "expected valid, got invalid: process 0 and process 1 both held lock-0"} {
		if !strings.Contains(body, want) {
			t.Errorf("matrix page lacks %s", want)
		}
	}
	for _, p := range []string{"/run/nightly/heatmap.svg", "/run/" + rel(newer) + "/", "/run/nightly/junit.xml"} {
		if code, _, _ := get(t, ts.URL+p); code != http.StatusOK {
			t.Errorf("%s: %d", p, code)
		}
	}
	for _, p := range []string{"/matrix/missing", "/matrix/token", "/matrix/..%2f..%2fetc", "/matrix/.hidden"} {
		if code, _, _ := get(t, ts.URL+p); code != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", p, code)
		}
	}
	// The runs list is unchanged by the matrix's directory.
	runs, err := openServer(t, store).Runs()
	if err != nil || len(runs) != 2 {
		t.Errorf("runs listed: %d (%v), want the 2 runs", len(runs), err)
	}
}

func openServer(t *testing.T, store string) *Server {
	t.Helper()
	s, err := NewServer(store)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// newMatrixStore is newStore with a matrix "nightly" of its two runs
// (token × partition, seeds 1 and 2: the older valid, the newer invalid)
// written beside them; it returns the store and the newer run.
func newMatrixStore(t *testing.T) (store, newer string) {
	t.Helper()
	store, older, newer := newStore(t)
	spec := matrix.Spec{Name: "nightly", Backend: matrix.DefaultBackend, Locks: []string{"token"},
		Nemeses: [][]string{{"partition"}}, Seeds: matrix.SeedRange(2), Run: matrix.DefaultRunParams()}
	cells := spec.Cells()
	rel := func(dir string) string { r, _ := filepath.Rel(store, dir); return filepath.ToSlash(r) }
	results := []matrix.CellResult{
		{Cell: cells[0], Test: cells[0].TestName(), Dir: rel(older), Verdict: checker.Valid, Command: spec.Reproduce(cells[0])},
		{Cell: cells[1], Test: cells[1].TestName(), Dir: rel(newer), Verdict: checker.Invalid, Headline: "process 0 and process 1 both held lock-0", Command: spec.Reproduce(cells[1])},
	}
	if _, err := matrix.WriteOutputs(store, matrix.Build(spec, matrix.Shard{}, results)); err != nil {
		t.Fatal(err)
	}
	return store, newer
}
