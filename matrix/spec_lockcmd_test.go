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
