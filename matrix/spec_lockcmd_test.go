package matrix

import (
	"strings"
	"testing"
)

// A lock cell of a lock an adapter command provides reproduces with that
// command, quoted for the shell; the others do not carry it.
func TestReproduceCarriesTheLockCmd(t *testing.T) {
	s := Spec{Locks: []string{"adapted", "token"}, Nemeses: [][]string{nil}, Seeds: []uint64{1}, Run: DefaultRunParams(),
		LockCmds: map[string]string{"adapted": "python3 my adapter.py --name 'x'"}}
	for _, c := range s.Cells() {
		got := s.Reproduce(c)
		has := strings.Contains(got, ` --lock-cmd 'python3 my adapter.py --name '\''x'\'''`)
		if has != (c.Lock == "adapted") {
			t.Errorf("%s: %s", c.ID(), got)
		}
	}
}

// A cell with faults runs them awaiting holders (DefaultRunParams) and
// reproduces with --nemesis-await; a cell without faults has nothing to
// await, and a spec that turns awaits off runs and reproduces without.
func TestCellsAwaitHolders(t *testing.T) {
	s := Spec{Locks: []string{"token"}, Nemeses: [][]string{nil, {"kill"}}, Seeds: []uint64{1}, Run: DefaultRunParams()}
	for _, c := range s.Cells() {
		got, cfg := s.Reproduce(c), s.RunConfig(c, "store")
		if strings.Contains(got, " --nemesis-await") != (len(c.Nemeses) > 0) || !cfg.AwaitHolders {
			t.Errorf("%s: %s (awaits %v)", c.ID(), got, cfg.AwaitHolders)
		}
	}
	s.Run.AwaitHolders = false
	c := s.Cells()[0]
	if got := s.Reproduce(c); strings.Contains(got, "--nemesis-await") || s.RunConfig(c, "store").AwaitHolders {
		t.Errorf("awaits off: %s", got)
	}
}
