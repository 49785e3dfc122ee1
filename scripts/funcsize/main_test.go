package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeTree writes files (path -> content) under a new temporary folder and
// changes into it for the test, so that paths read as they do from a
// repository's root.
func writeTree(t *testing.T, files map[string]string) {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(dir)
}

// longFunc is a function of n lines in all.
func longFunc(name string, n int) string {
	var b strings.Builder
	b.WriteString("func " + name + "() {\n")
	for i := 0; i < n-2; i++ {
		b.WriteString("\t_ = 1\n")
	}
	b.WriteString("}\n")
	return b.String()
}

func TestComplexityCountsAsGocyclo(t *testing.T) {
	writeTree(t, map[string]string{"p/a.go": `package p

type T[K any] struct{}

func (t *T[K]) M(a, b bool, xs []int, ch chan int) int {
	if a && b || !a { // if, &&, ||
		return 1
	}
	for i := 0; i < 3; i++ { // for
	}
	for range xs { // range
	}
	switch len(xs) {
	case 0, 1: // one case, however many values
	case 2:
	default: // not counted
	}
	select {
	case <-ch:
	default:
	}
	f := func() {
		if a { // a literal's branches count toward its function
		}
	}
	f()
	return 0
}

func Plain() {}
`})
	funcs, err := measureAll([]string{"./..."}, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(funcs) != 2 {
		t.Fatalf("want 2 functions, got %+v", funcs)
	}
	m, plain := funcs[0], funcs[1]
	if m.Name != "T.M" || m.Complexity != 10 || m.Lines != 24 || m.Pos != "p/a.go:5" {
		t.Errorf("T.M measured as %+v, want name T.M, complexity 10, 24 lines, at p/a.go:5", m)
	}
	if plain.Name != "Plain" || plain.Complexity != 1 || plain.Lines != 1 {
		t.Errorf("Plain measured as %+v, want complexity 1, 1 line", plain)
	}
}

func TestBoundsAndAllowList(t *testing.T) {
	writeTree(t, map[string]string{
		"p/a.go":          "package p\n\n" + longFunc("Long", 101) + longFunc("Fine", 100) + longFunc("Table", 300),
		"p/a_test.go":     "package p\n\n" + longFunc("TestLong", 200),
		"p/testdata/x.go": "package x\n\n" + longFunc("Skipped", 200),
		"q/b.go":          "package q\n\n" + longFunc("Elsewhere", 200),
		"allow.txt": `# data tables
p/a.go Table  a data table: one entry per scenario
q/b.go Elsewhere  allowed, but measured only when q is
p/a.go Gone  split long ago
`,
	})
	var out, errOut bytes.Buffer
	code := run([]string{"-allow", "allow.txt", "./p/..."}, &out, &errOut)
	if code != 1 {
		t.Fatalf("exit code %d, want 1; stdout:\n%s\nstderr:\n%s", code, &out, &errOut)
	}
	got := out.String()
	for _, want := range []string{
		"p/a.go:3: Long is 101 lines",
		"allow.txt:4: the allow-list names p/a.go Gone",
		"1 function(s) over a bound, 1 stale allow-list line(s)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	for _, unwanted := range []string{"Fine", "Table is", "TestLong", "Skipped", "Elsewhere"} {
		if strings.Contains(got, unwanted) {
			t.Errorf("output names %q, which is within the bounds, allowed, a test, skipped or not measured:\n%s", unwanted, got)
		}
	}

	out.Reset()
	if code := run([]string{"-allow", "allow.txt", "-tests", "p/a_test.go"}, &out, &errOut); code != 1 || !strings.Contains(out.String(), "TestLong is 200 lines") {
		t.Errorf("-tests: exit code %d, output:\n%s", code, &out)
	}
}

func TestComplexityBound(t *testing.T) {
	var b strings.Builder
	b.WriteString("package p\n\nfunc Branchy(x int) {\n")
	for i := 0; i < 30; i++ {
		b.WriteString("\tif x == 1 {\n\t}\n")
	}
	b.WriteString("}\n")
	writeTree(t, map[string]string{"p/a.go": b.String()})
	var out, errOut bytes.Buffer
	if code := run([]string{"-complexity", "31", "./..."}, &out, &errOut); code != 0 {
		t.Errorf("complexity 31 within a bound of 31: exit code %d, output:\n%s", code, &out)
	}
	if code := run([]string{"-complexity", "30", "./..."}, &out, &errOut); code != 1 || !strings.Contains(out.String(), "Branchy is 62 lines, complexity 31") {
		t.Errorf("complexity 31 over a bound of 30: exit code %d, output:\n%s", code, &out)
	}
}

func TestBadAllowList(t *testing.T) {
	for name, list := range map[string]string{
		"no reason": "p/a.go Table\n",
		"twice":     "p/a.go Table  one\np/a.go Table  two\n",
	} {
		t.Run(name, func(t *testing.T) {
			writeTree(t, map[string]string{"p/a.go": "package p\n", "allow.txt": list})
			var out, errOut bytes.Buffer
			if code := run([]string{"-allow", "allow.txt", "./..."}, &out, &errOut); code != 2 {
				t.Errorf("exit code %d, want 2; stderr: %s", code, &errOut)
			}
		})
	}
}

// TestAllowListOfTheRepository reads the repository's own allow-list: each
// line names a function and says why.
func TestAllowListOfTheRepository(t *testing.T) {
	a, err := readAllowList("allow.txt")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range a {
		if _, err := os.Stat(filepath.Join("..", "..", filepath.FromSlash(e.file))); err != nil {
			t.Errorf("allow.txt:%d: %s: %v", e.line, e.file, err)
		}
	}
}
