package matrix

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A matrix too large to run is refused before its seeds or cells are
// made: by --seeds, by Validate, and by ReadJSON for a matrix.json from
// outside (issue 22 row 6: --seeds 2000000000 crashed out of memory).
func TestMatrixSizeLimits(t *testing.T) {
	if _, err := SeedsFlag(2_000_000_000); err == nil || !strings.Contains(err.Error(), "--seeds 1000 or fewer") {
		t.Errorf("SeedsFlag(2e9): %v", err)
	}
	if _, err := SeedsFlag(0); err == nil || !strings.Contains(err.Error(), "at least 1") {
		t.Errorf("SeedsFlag(0): %v", err)
	}
	if s, err := SeedsFlag(MaxSeeds); err != nil || len(s) != MaxSeeds {
		t.Errorf("SeedsFlag(MaxSeeds): %d seeds, %v", len(s), err)
	}
	base := Spec{Name: "matrix", Locks: []string{"token"}, Nemeses: [][]string{{"kill"}}, Seeds: SeedRange(3), Run: DefaultRunParams()}
	for _, c := range []struct {
		name string
		edit func(*Spec)
		want string
	}{
		{"repeat", func(s *Spec) { s.Scenarios, s.Repeat = []ScenarioRef{{Name: "x", Lock: "token"}}, 2_000_000_000 }, "--repeat 1000 or fewer"},
		{"seeds", func(s *Spec) { s.Seeds = make([]uint64, MaxSeeds+1) }, "at most 1000 seeds"},
		{"cells", func(s *Spec) { s.Locks = make([]string, 11); s.Seeds = SeedRange(MaxSeeds) }, "more than 10000 cells"},
		{"overflow", func(s *Spec) {
			s.Locks, s.Nemeses, s.Seeds = make([]string, 1<<20), make([][]string, 1<<20), make([]uint64, 1000)
		}, "more than 10000 cells"},
	} {
		s := base
		c.edit(&s)
		if err := s.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	if err := base.Validate(); err != nil {
		t.Errorf("a small matrix: %v", err)
	}
	file := filepath.Join(t.TempDir(), JSONFile)
	huge := `{"spec":{"name":"matrix","scenarios":[{"name":"a","lock":"token"}],"repeat":2000000000,"run":{}}}`
	if err := os.WriteFile(file, []byte(huge), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadJSON(file); err == nil || !strings.Contains(err.Error(), "at most 1000 times") {
		t.Errorf("ReadJSON of a matrix.json with 2e9 repeats: %v", err)
	}
}

func TestMulCapped(t *testing.T) {
	for _, c := range []struct {
		ns   []int
		want int
	}{{nil, 1}, {[]int{3, 4}, 12}, {[]int{1 << 40, 1 << 40, 0}, 0}, {[]int{1 << 40, 1 << 40}, 101}, {[]int{10, 10}, 100}} {
		if got := mulCapped(100, c.ns...); got != c.want {
			t.Errorf("mulCapped(100, %v) = %d, want %d", c.ns, got, c.want)
		}
	}
}
