package scenarios

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockharness/lockharness/reports"
	"github.com/lockharness/lockharness/sut/redis/redistest"
)

// TestReportSaysFaultSizes runs gc-pause-stale-write (a 2.5s client pause
// with a 1s TTL) against real Redis: the run's summary and its report say
// the pause's size against the TTL, as the scenario's explanation does.
func TestReportSaysFaultSizes(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a scenario against real Redis")
	}
	redistest.Require(t, "redis-server")
	s, err := Lookup("gc-pause-stale-write")
	if err != nil {
		t.Fatal(err)
	}
	o, err := Run(context.Background(), s, Options{Store: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	want := "2.5 s = 2.5 × TTL (1 s)"
	if len(o.Sizes) != 1 || !strings.HasPrefix(o.Sizes[0], "client pause (process ") || !strings.HasSuffix(o.Sizes[0], want) {
		t.Fatalf("sizes %q, want one client pause of %s", o.Sizes, want)
	}
	page, err := os.ReadFile(filepath.Join(o.Dir, reports.IndexFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"Sizes are given against the lock's TTL (1 s)", want} {
		if !strings.Contains(string(page), w) {
			t.Errorf("index.html does not say %q", w)
		}
	}
	res, err := reports.ReadResults(o.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Sizes) != 1 || res.Sizes[0] != o.Sizes[0] {
		t.Errorf("results.json sizes %q, want %q", res.Sizes, o.Sizes)
	}
}
