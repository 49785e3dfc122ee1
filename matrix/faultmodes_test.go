package matrix

import (
	"slices"
	"strings"
	"testing"
)

// A nightly partition cell draws the holder pattern and the multi-node
// patterns, never isolate, and a clock cell bumps alone: the cell's run
// gets them, its reproduce line carries them, and a cell of another
// nemesis gets neither.
func TestCellFaultModes(t *testing.T) {
	s := Spec{Locks: []string{"set-nx-ex"}, Nemeses: [][]string{{"partition"}, {"clock"}, {"kill"}}, Seeds: []uint64{1}, Run: DefaultRunParams()}
	for _, c := range s.Cells() {
		cfg := s.RunConfig(c, "store")
		cmd := s.Reproduce(c)
		part, clock := slices.Contains(c.Nemeses, "partition"), slices.Contains(c.Nemeses, "clock")
		if got := len(cfg.Nemesis.PartitionPatterns) > 0; got != part {
			t.Errorf("%s: partition patterns %v", c.ID(), cfg.Nemesis.PartitionPatterns)
		}
		if part && (slices.Contains(cfg.Nemesis.PartitionPatterns, "isolate") || !slices.Contains(cfg.Nemesis.PartitionPatterns, "holder")) {
			t.Errorf("%s: partition patterns %v, want holder and not isolate", c.ID(), cfg.Nemesis.PartitionPatterns)
		}
		if got := strings.Contains(cmd, "--partition-patterns holder,"); got != part {
			t.Errorf("%s: reproduce %q", c.ID(), cmd)
		}
		if got := slices.Equal(cfg.Nemesis.ClockModes, []string{"bump"}); got != clock {
			t.Errorf("%s: clock modes %v", c.ID(), cfg.Nemesis.ClockModes)
		}
		if got := strings.Contains(cmd, "--clock-modes bump"); got != clock {
			t.Errorf("%s: reproduce %q", c.ID(), cmd)
		}
	}
}
