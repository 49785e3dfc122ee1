// Package matrix runs many lockharness runs as one nightly safety check:
// cells of lock × nemesis set × seed (and backend), or scenario ×
// repetition, each a normal run in the store, each judged against an
// expectation (valid, invalid, flaky). It shards the cells across CI
// runners, resumes from the store, merges shards' stores, and writes
// matrix.json, JUnit XML, a markdown summary and a heat map.
//
// The logic (cells, shards, expectations, judging, outputs) is pure; Run
// is the only part that starts anything.
package matrix

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Backends a cell can run on (the names of `harness run --backend`).
const (
	// DefaultBackend is local redis-server processes; its cells' IDs and
	// store names carry no backend, as they did before there were others.
	DefaultBackend = "local"
	// DockerBackend is containers of one Redis image.
	DockerBackend = "docker"
)

// Cell is one run of the matrix: a lock under a set of nemeses with a
// seed, or one repetition of a catalogued scenario.
type Cell struct {
	Backend string   `json:"backend"`
	Lock    string   `json:"lock"`
	Nemeses []string `json:"nemeses"`
	Seed    uint64   `json:"seed,omitempty"`
	// Scenario and Repeat identify a scenario cell (Seed is then unused:
	// a scenario carries its own seed and script).
	Scenario string `json:"scenario,omitempty"`
	Repeat   int    `json:"repeat,omitempty"`
}

// NemesisSet is the nemeses of a cell as one word ("partition+clock"), or
// "none"; it is what expectation patterns and the heat map's columns use.
func (c Cell) NemesisSet() string {
	if len(c.Nemeses) == 0 {
		return "none"
	}
	return strings.Join(c.Nemeses, "+")
}

// ID names the cell for people: "token/partition/seed-1",
// "scenario/redlock-clock-jump/run-3"; a backend other than local comes
// first.
func (c Cell) ID() string {
	var id string
	if c.Scenario != "" {
		id = fmt.Sprintf("scenario/%s/run-%d", c.Scenario, c.Repeat)
	} else {
		id = fmt.Sprintf("%s/%s/seed-%d", c.Lock, c.NemesisSet(), c.Seed)
	}
	if c.Backend != "" && c.Backend != DefaultBackend {
		id = c.Backend + "/" + id
	}
	return id
}

// TestName is the cell's subdirectory of the store: deterministic, so a
// re-run of the same matrix finds the cells already done. Store names
// allow no '/' or '+', hence the dots and underscores.
func (c Cell) TestName() string {
	var parts []string
	parts = append(parts, "matrix")
	if c.Backend != "" && c.Backend != DefaultBackend {
		parts = append(parts, c.Backend)
	}
	if c.Scenario != "" {
		parts = append(parts, "scenario", c.Scenario, "run-"+strconv.Itoa(c.Repeat))
	} else {
		nem := "none"
		if len(c.Nemeses) > 0 {
			nem = strings.Join(c.Nemeses, "_")
		}
		parts = append(parts, c.Lock, nem, "seed-"+strconv.FormatUint(c.Seed, 10))
	}
	return strings.Join(parts, ".")
}

// compareCells is the matrix's one order: scenario cells after lock cells,
// then backend, lock (or scenario), nemesis set, seed (or repetition)
// numerically. Sharding and every output follow it.
func compareCells(a, b Cell) int {
	return cmp.Or(
		cmp.Compare(b2i(a.Scenario != ""), b2i(b.Scenario != "")),
		cmp.Compare(a.Backend, b.Backend),
		cmp.Compare(a.Scenario, b.Scenario),
		cmp.Compare(a.Lock, b.Lock),
		cmp.Compare(a.NemesisSet(), b.NemesisSet()),
		cmp.Compare(a.Seed, b.Seed),
		cmp.Compare(a.Repeat, b.Repeat),
	)
}

// SortCells sorts cells into the matrix's order.
func SortCells(cells []Cell) { slices.SortStableFunc(cells, compareCells) }

// Shard is one CI runner's share of the cells: Index of Count, 1-based as
// users write it ("2/8"). The zero value is the whole matrix.
type Shard struct {
	Index, Count int
}

// ParseShard reads "i/n" with 1 ≤ i ≤ n; "" is the whole matrix.
func ParseShard(s string) (Shard, error) {
	if s == "" {
		return Shard{}, nil
	}
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 1 || i > n {
		return Shard{}, fmt.Errorf("shard %q: write i/n with 1 ≤ i ≤ n, for example --shard 2/8", s)
	}
	return Shard{Index: i, Count: n}, nil
}

func (s Shard) String() string {
	if s.Count == 0 {
		return ""
	}
	return fmt.Sprintf("%d/%d", s.Index, s.Count)
}

// Select returns the shard's cells: the cells are sorted into the
// matrix's order and cell k (0-based) belongs to shard k mod n + 1. The
// split depends only on the set of cells, so every runner computes the
// same one, and neighbouring cells (one lock's seeds) spread across
// runners.
func (s Shard) Select(cells []Cell) []Cell {
	all := slices.Clone(cells)
	SortCells(all)
	if s.Count <= 1 {
		return all
	}
	var out []Cell
	for k, c := range all {
		if k%s.Count == s.Index-1 {
			out = append(out, c)
		}
	}
	return out
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
