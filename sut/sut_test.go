package sut_test

import (
	"errors"
	"testing"

	"github.com/lockharness/lockharness/sut"
)

// An UnsupportedError names who needs what, what lacks it and how to get
// it, and is sut.ErrUnsupported to errors.Is.
func TestUnsupportedError(t *testing.T) {
	for _, tc := range []struct {
		err  *sut.UnsupportedError
		want string
	}{
		{&sut.UnsupportedError{Capability: sut.CanPause, Target: "n2", Need: "the pause nemesis", Hint: "use an image with a shell"},
			"the pause nemesis needs pausing nodes (pause), which node n2 does not support: use an image with a shell"},
		{&sut.UnsupportedError{Capability: sut.CanCutLinks},
			"this deployment does not support cutting network links (partition)"},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
		if !errors.Is(tc.err, sut.ErrUnsupported) {
			t.Errorf("%v is not ErrUnsupported", tc.err)
		}
	}
}

func TestNeedsMerge(t *testing.T) {
	a := sut.Needs{Capabilities: []sut.Capability{sut.CanKill, sut.CanCutLinks}}
	b := sut.Needs{Replicated: true, Capabilities: []sut.Capability{sut.CanCutLinks, sut.CanSetClock}}
	m := a.Merge(b)
	if !m.Replicated || len(m.Capabilities) != 3 || !m.Has(sut.CanSetClock) || !m.Has(sut.CanKill) {
		t.Fatalf("merged %+v", m)
	}
}

func TestLinkNames(t *testing.T) {
	n := sut.LinkName(sut.ClientName(3), "n1")
	from, to, ok := sut.SplitLinkName(n)
	if n != "c3->n1" || !ok || from != "c3" || to != "n1" {
		t.Fatalf("%q split into %q %q %v", n, from, to, ok)
	}
}
