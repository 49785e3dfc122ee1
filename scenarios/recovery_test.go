package scenarios

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lockharness/lockharness/checker"
)

// A scenario file that leaves out recovery gets the one the run sizes from
// the lock's TTL and the faults its script uses (run.DerivedRecovery,
// docs/faults.md), as `harness run --recovery 0` does: wrong-release
// without its line, TTL 1s, a client pause of the nemesis's default length
// as the slowest settle.
func TestScenarioWithoutRecoveryDerivesIt(t *testing.T) {
	b, err := os.ReadFile("catalogue/1-literature/04-wrong-release.yaml")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(b), "recovery: 1.5s\n", "", 1)
	if text == string(b) {
		t.Fatalf("wrong-release's file has no \"recovery: 1.5s\" line to leave out:\n%s", text)
	}
	u, err := Read(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	cfg := u.RunConfig(t.TempDir()).WithDefaults()
	want := cfg.DerivedRecovery()
	if u.Run.Recovery != 0 || cfg.Recovery != want || want < 2*time.Second {
		t.Errorf("recovery %v (file) → %v (run), want the derived %v, at least two lease terms of 1s", u.Run.Recovery, cfg.Recovery, want)
	}
}

// Every scenario's recovery, sized by hand for its script, leaves liveness
// judgeable: at least the checker's shortest judged recovery (1s), and for
// a scenario that expects liveness invalid, longer than its TTL (the
// checker calls a key stuck through a recovery shorter than the longest
// lease unknown, not unavailable).
func TestCatalogueRecoveryJudgesLiveness(t *testing.T) {
	for _, s := range Catalogue() {
		// A file without a recovery line gets the derived one.
		r, ttl := s.RunConfig(t.TempDir()).WithDefaults().Recovery, s.Run.Workload.WithDefaults().TTL
		if r < time.Second {
			t.Errorf("%s: recovery %v, below the liveness checker's 1s", s.Name, r)
		}
		if s.Expect.Liveness == checker.Invalid && r <= ttl {
			t.Errorf("%s: expects liveness invalid with a recovery of %v, not longer than its TTL %v", s.Name, r, ttl)
		}
	}
}
