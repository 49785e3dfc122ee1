package reports

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/history"
)

func TestEvidenceLines(t *testing.T) {
	got := Evidence(checker.Coverage{Grants: 812, Renewals: 1, Claims: 800,
		Faults: map[string]checker.FaultCoverage{
			"start-partition": {TookEffect: 2, StruckHolder: 1},
			"kill":            {TookEffect: 0, Failed: 1},
		},
		Pauses:  checker.PauseCoverage{Total: 5, StruckHolder: 4, OutlivedLease: 2},
		Crashes: checker.CrashCoverage{Total: 1, WhileHolding: 1},
	})
	want := []string{
		"812 grants, 1 renewal (800 claims)",
		"faults: kill 0 took effect, 0 struck a holder (1 failed, 0 unknown); start-partition 2 took effect, 1 struck a holder",
		"5 client pauses, 4 struck a holder, 2 outlived the lease; 1 client crash, 1 while holding",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got\n%q\nwant\n%q", got, want)
	}
	if got := Evidence(checker.Coverage{}); len(got) != 1 || got[0] != "0 grants, 0 renewals (0 claims)" {
		t.Errorf("empty coverage: %q", got)
	}
}

// index.html shows the evidence next to the verdict, and why a valid
// verdict that rests on nothing is unknown.
func TestIndexShowsTheEvidence(t *testing.T) {
	meta, ops, res := validFixture()
	res.Verdict = checker.Unknown
	res.Vacuous = []string{"the kill nemesis never struck while a client held a lock (no kill took effect)"}
	res.Reason = checker.VacuousPrefix + res.Vacuous[0]
	page, _ := renderIndex(t, "vacuous", meta, ops, res)
	for _, want := range []string{
		`class="banner unknown"`,
		"No verdict: valid but vacuous: the kill nemesis never struck while a client held a lock",
		`id="evidence"`,
		Evidence(res.Coverage)[0],
		"not reached: the kill nemesis never struck",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("index.html lacks %q", want)
		}
	}
}

// renderIndex renders a run into outDir(name) and returns its index.html
// and the directory.
func renderIndex(t *testing.T, name string, meta RunMeta, ops []history.Op, res checker.Result) (string, string) {
	t.Helper()
	dir := outDir(t, name)
	if err := renderOps(context.Background(), dir, meta, ops, res); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	return unlinkTerms(string(b)), dir
}

// termLink is a term of art linked to the glossary (LinkTerms).
var termLink = regexp.MustCompile(`<a class="term" href="#[^"]*">([^<]*)</a>`)

// unlinkTerms is page with the links of terms of art to the glossary
// taken out, their words left: the tests read the sentences.
func unlinkTerms(page string) string { return termLink.ReplaceAllString(page, "$1") }
