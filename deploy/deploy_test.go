package deploy_test

import (
	"errors"
	"testing"

	"github.com/lockharness/lockharness/deploy"
)

// An UnsupportedError names who needs what, what lacks it and how to get
// it, and is deploy.ErrUnsupported to errors.Is.
func TestUnsupportedError(t *testing.T) {
	for _, tc := range []struct {
		err  *deploy.UnsupportedError
		want string
	}{
		{&deploy.UnsupportedError{Capability: deploy.CanPause, Target: "n2", Need: "the pause nemesis", Hint: "use an image with a shell"},
			"the pause nemesis needs pausing nodes (pause), which node n2 does not support: use an image with a shell"},
		{&deploy.UnsupportedError{Capability: deploy.CanCutLinks},
			"this deployment does not support cutting network links (partition)"},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
		if !errors.Is(tc.err, deploy.ErrUnsupported) {
			t.Errorf("%v is not ErrUnsupported", tc.err)
		}
	}
}

func TestNeedsMerge(t *testing.T) {
	a := deploy.Needs{Capabilities: []deploy.Capability{deploy.CanKill, deploy.CanCutLinks}}
	b := deploy.Needs{Replicated: true, Capabilities: []deploy.Capability{deploy.CanCutLinks, deploy.CanSetClock}}
	m := a.Merge(b)
	if !m.Replicated || len(m.Capabilities) != 3 || !m.Has(deploy.CanSetClock) || !m.Has(deploy.CanKill) {
		t.Fatalf("merged %+v", m)
	}
}

func TestLinkNames(t *testing.T) {
	n := deploy.LinkName(deploy.ClientName(3), "n1")
	from, to, ok := deploy.SplitLinkName(n)
	if n != "c3->n1" || !ok || from != "c3" || to != "n1" {
		t.Fatalf("%q split into %q %q %v", n, from, to, ok)
	}
}
