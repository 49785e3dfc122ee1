package matrix

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzExpectations feeds the expectations parser arbitrary bytes. It must
// never panic; a file it accepts has rules, each with an expectation it
// knows and patterns that compile, and judging a cell by it never panics.
//
// go test runs the seeds; by hand: go test -fuzz FuzzExpectations ./matrix/
func FuzzExpectations(f *testing.F) {
	if b, err := os.ReadFile("expectations.yaml"); err == nil {
		f.Add(b)
	}
	for _, seed := range []string{
		"", "rules: []\n", testRules, "rules:\n  - {lock: tok*, nemeses: kill+none, expect: valid}\n",
		"rules:\n  - {lock: token, expect: valid}\n---\nrules: []\n",
		"rules:\n  - {lock: '[', expect: valid}\n", "rules:\n  - {expect: flaky}\n", "rules: {a: 1}\n",
		"&a [*a, *a]\n", "rules:\n  - {lock: token, expect: valid, colour: red}\n",
	} {
		f.Add([]byte(seed))
	}
	cells := []Cell{{Lock: "token", Nemeses: []string{"kill"}, Seed: 1}, {Lock: "redlock", Scenario: "redlock-clock-jump", Repeat: 2, Backend: DockerBackend}, {}}
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := ParseExpectations(data)
		if err != nil {
			return
		}
		if len(e.Rules) == 0 {
			t.Fatal("accepted a file of no rules")
		}
		for _, r := range e.Rules {
			if r.check() != nil {
				t.Fatalf("accepted rule %+v", r)
			}
		}
		_ = e.CheckNames(testKnown)
		for _, c := range cells {
			if x := e.For(c); x.Rule > len(e.Rules) {
				t.Fatalf("rule %d of %d", x.Rule, len(e.Rules))
			}
		}
	})
}

// FuzzSpec feeds a matrix's spec, as matrix.json records it, arbitrary
// JSON. A spec Validate accepts has at most MaxCells cells, and each cell
// names a store directory that CheckName accepts or checkStoreNames
// refuses: no spec makes the matrix write outside its store, and none
// allocates before it is refused.
//
// go test runs the seeds; by hand: go test -fuzz FuzzSpec ./matrix/
func FuzzSpec(f *testing.F) {
	seed, _ := json.Marshal(testSpec())
	f.Add(seed)
	for _, s := range []string{
		`{}`, `{"name":"matrix","locks":["token"],"nemeses":[["kill"]],"seeds":[1,2]}`,
		`{"name":"..","locks":["../x"],"nemeses":[[]],"seeds":[1]}`,
		`{"name":"m","scenarios":[{"name":"../../x","lock":"token"}],"repeat":2000000000}`,
		`{"name":"m","backends":["local","../x"],"locks":["token"],"nemeses":[["a/b"]],"seeds":[1]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var s Spec
		if json.Unmarshal(data, &s) != nil {
			return
		}
		s.upgrade()
		if s.Validate() != nil {
			return
		}
		cells := s.Cells()
		if len(cells) > MaxCells {
			t.Fatalf("%d cells validated", len(cells))
		}
		if s.checkStoreNames() != nil {
			return
		}
		for _, c := range cells {
			if !filepath.IsLocal(c.TestName()) || strings.ContainsRune(c.TestName(), '/') {
				t.Fatalf("cell %s has test name %q", c.ID(), c.TestName())
			}
			_ = s.Reproduce(c)
		}
	})
}

// FuzzShard feeds the merge a shard's matrix.json. Every run directory
// it would copy (what readShards keeps: runDir) is one element of its
// cell's test and one of a run, local to the shard: never absolute, never
// climbing, never another cell's.
//
// go test runs the seeds; by hand: go test -fuzz FuzzShard ./matrix/
func FuzzShard(f *testing.F) {
	m := testMatrix(f)
	seed, _ := json.Marshal(m)
	f.Add(seed)
	for _, s := range []string{
		`{}`, `{"spec":{"name":"matrix"},"cells":[{"lock":"token","dir":"../../x","verdict":"valid","outcome":"met"}]}`,
		`{"spec":{"name":"matrix","backend":"local"},"cells":[{"lock":"token","seed":1,"dir":"/etc","outcome":"met"}]}`,
		`{"spec":{"name":"matrix","repeat":2000000000,"scenarios":[{"name":"a"}]}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseJSON(data)
		if err != nil || m.Spec.checkStoreNames() != nil {
			return
		}
		for _, c := range m.Cells {
			dir, err := c.runDir()
			if err != nil {
				continue
			}
			test, run, ok := strings.Cut(filepath.ToSlash(dir), "/")
			if !filepath.IsLocal(dir) || !ok || test != c.TestName() || strings.Contains(run, "/") || run == ".." || run == "." {
				t.Fatalf("cell %s: run directory %q accepted", c.ID(), dir)
			}
		}
	})
}
