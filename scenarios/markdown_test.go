package scenarios

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/scenarios.md from the catalogue")

// scenarioDoc is the generated page, from this package's directory.
var scenarioDoc = filepath.Join("..", "docs", "scenarios.md")

// TestScenarioDoc fails when docs/scenarios.md is not what WriteMarkdown
// makes of the catalogue, and rewrites it with
//
//	go test ./scenarios -run TestScenarioDoc -update
//
// (or LOCKHARNESS_UPDATE_DOCS=1). It starts no server, so -short runs it.
func TestScenarioDoc(t *testing.T) {
	var want bytes.Buffer
	if err := WriteMarkdown(&want, Catalogue()); err != nil {
		t.Fatal(err)
	}
	if *update || os.Getenv("LOCKHARNESS_UPDATE_DOCS") != "" {
		if err := os.WriteFile(scenarioDoc, want.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", scenarioDoc)
		return
	}
	got, err := os.ReadFile(scenarioDoc)
	if err != nil {
		t.Fatalf("%v: generate it with go test ./scenarios -run TestScenarioDoc -update", err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("docs/scenarios.md is out of date with the catalogue (%s): regenerate it with go test ./scenarios -run TestScenarioDoc -update",
			firstDifference(got, want.Bytes()))
	}
}

// TestScenarioCountInDocs: wherever the front page or the manual says how
// many scenarios the catalogue holds ("56 scenarios"), it says the
// catalogue's length. Counts of a subset are written otherwise ("the
// scenarios of part one"); measurements.md records what was run at the
// time, with its date, and is not held to today's count.
func TestScenarioCountInDocs(t *testing.T) {
	n := len(Catalogue())
	count := regexp.MustCompile(`\b(\d+) scenarios\b`)
	pages, err := filepath.Glob(filepath.Join("..", "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, filepath.Join("..", "README.md"))
	for _, page := range pages {
		if filepath.Base(page) == "measurements.md" {
			continue
		}
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range count.FindAllSubmatch(b, -1) {
			if got, _ := strconv.Atoi(string(m[1])); got != n {
				t.Errorf("%s says %q, and the catalogue holds %d scenarios", page, m[0], n)
			}
		}
	}
}

// TestWriteMarkdownEscapes: a table cell never breaks the table.
func TestWriteMarkdownEscapes(t *testing.T) {
	s := Catalogue()[0]
	s.Summary = "a | b\nc"
	s.Source = ""
	var b bytes.Buffer
	if err := WriteMarkdown(&b, []Scenario{s}); err != nil {
		t.Fatal(err)
	}
	row := b.String()[strings.LastIndex(strings.TrimRight(b.String(), "\n"), "\n")+1:]
	if !strings.Contains(row, `a \| b c`) || !strings.HasSuffix(row, "| – |\n") {
		t.Errorf("row %q: want the pipe escaped, the line joined and a dash for no source", row)
	}
	s.Lock = "no-such-lock"
	if err := WriteMarkdown(&b, []Scenario{s}); err == nil || !strings.Contains(err.Error(), "no-such-lock") {
		t.Errorf("a scenario with an unknown lock: got %v, want an error naming it", err)
	}
}

// firstDifference names the first line where got and want differ.
func firstDifference(got, want []byte) string {
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := 0; i < len(g) && i < len(w); i++ {
		if g[i] != w[i] {
			return "line " + strconv.Itoa(i+1) + ": has " + strconv.Quote(g[i]) + ", want " + strconv.Quote(w[i])
		}
	}
	return "lengths differ: " + strconv.Itoa(len(g)) + " lines, want " + strconv.Itoa(len(w))
}
