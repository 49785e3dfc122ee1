package nemesis

import "testing"

func TestRegistryRejectsDuplicates(t *testing.T) {
	mks := append(builtins(), func() fault { return &pause{} })
	if _, err := newRegistry(mks); err == nil {
		t.Fatal("a nemesis registered twice was accepted")
	}
	if _, err := newRegistry(builtins()); err != nil {
		t.Fatal(err)
	}
}
