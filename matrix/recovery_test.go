package matrix

import (
	"strings"
	"testing"
	"time"
)

// TestCellRecovery: a lock cell of the default run settings gets its own
// derived recovery, the one `harness run` derives from its reproduce line
// (which names no --recovery); a --recovery given wins for every cell.
func TestCellRecovery(t *testing.T) {
	s := Spec{Run: DefaultRunParams()}
	cases := []struct {
		cell Cell
		want time.Duration
	}{
		// A Redis cell: a client timeout (250ms) and two lease terms.
		{Cell{Lock: "token", Nemeses: []string{"partition"}, Seed: 1}, 2250 * time.Millisecond},
		{Cell{Lock: "token", Nemeses: []string{"kill"}, Seed: 1}, 2250 * time.Millisecond},
		{Cell{Lock: "token", Seed: 1}, 2 * time.Second},
		// An etcd cell: the election, the promoted leader's extension and
		// two of etcd's shortest leases (2s).
		{Cell{Lock: "etcd", Nemeses: []string{"kill"}, Seed: 1}, 7 * time.Second},
	}
	for _, c := range cases {
		cfg, err := s.CellConfig(c.cell, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		if got := cfg.WithDefaults().Recovery; got != c.want {
			t.Errorf("%s: recovery %v, want %v", c.cell.ID(), got, c.want)
		}
		if strings.Contains(cfg.Command, "--recovery") {
			t.Errorf("%s: reproduce line %q names a recovery the run would derive", c.cell.ID(), cfg.Command)
		}
	}
	s.Run.Recovery = 3 * time.Second
	cell := Cell{Lock: "etcd", Nemeses: []string{"kill"}, Seed: 1}
	cfg, err := s.CellConfig(cell, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.WithDefaults().Recovery; got != 3*time.Second {
		t.Errorf("explicit --recovery 3s became %v", got)
	}
	if !strings.Contains(cfg.Command, "--recovery 3s") {
		t.Errorf("reproduce line %q lacks the given --recovery 3s", cfg.Command)
	}
}
