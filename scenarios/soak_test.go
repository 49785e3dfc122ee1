package scenarios

import (
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// soakPart soaks part, one part of the catalogue, the way
// TestConsensusCatalogue, TestZooKeeperCatalogue and TestMariaDBCatalogue
// do: with LOCKHARNESS_SOAK=N it runs each scenario N times (under
// stress-ng, the CPU-load soak), checks each run's verdicts and exposure
// (checkOutcome), then the scenario's own check in also, if any, on the
// run's directory. LOCKHARNESS_STORE=dir keeps the runs there;
// LOCKHARNESS_ONLY=a,b soaks those scenarios alone. Without a count it
// skips: TestCatalogue runs every scenario once.
func soakPart(t *testing.T, part []Scenario, also map[string]func(t *testing.T, dir string)) {
	t.Helper()
	rounds, err := strconv.Atoi(os.Getenv("LOCKHARNESS_SOAK"))
	if err != nil || rounds < 1 {
		t.Skip("TestCatalogue runs these scenarios once; set LOCKHARNESS_SOAK=N to soak them")
	}
	store := t.TempDir()
	if d := os.Getenv("LOCKHARNESS_STORE"); d != "" {
		store = d // keep the runs to look at
	}
	only := os.Getenv("LOCKHARNESS_ONLY")
	var list []Scenario
	for range rounds {
		for _, s := range part {
			if only == "" || slices.Contains(strings.Split(only, ","), s.Name) {
				list = append(list, s)
			}
		}
	}
	results := make([]Result, len(list))
	RunAll(context.Background(), list, Options{Store: store}, DefaultParallel(), func(i int, r Result) { results[i] = r })
	for i, s := range list {
		t.Run(s.Name, func(t *testing.T) {
			o, err := results[i].Outcome, results[i].Err
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			checkOutcome(t, s, o)
			if f := also[s.Name]; f != nil {
				f(t, o.Dir)
			}
		})
	}
}
