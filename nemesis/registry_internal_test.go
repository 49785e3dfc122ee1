package nemesis

import (
	"os"
	"strings"
	"testing"
)

func TestRegistryRejectsDuplicates(t *testing.T) {
	mks := append(builtins(), func() fault { return &pause{} })
	if _, err := newRegistry(mks); err == nil {
		t.Fatal("a nemesis registered twice was accepted")
	}
	if _, err := newRegistry(builtins()); err != nil {
		t.Fatal(err)
	}
}

// Every nemesis says what in the history shows that it struck, and each of
// its Strikes is an f its own file records: a run can then require it.
func TestEveryNemesisSaysHowItStrikes(t *testing.T) {
	for _, info := range Known() {
		if len(info.Strikes) == 0 && info.StrikesClient == "" {
			t.Errorf("%s: neither Strikes nor StrikesClient", info.Name)
		}
		src, err := os.ReadFile(strings.ReplaceAll(info.Name, "-", "") + ".go")
		if err != nil {
			t.Fatalf("%s: %v", info.Name, err)
		}
		for _, f := range info.Strikes {
			if !strings.Contains(string(src), `"`+f+`"`) {
				t.Errorf("%s: strikes %q, which its file never records", info.Name, f)
			}
		}
	}
	if _, err := Lookup("meteor"); err == nil {
		t.Error("Lookup of an unknown nemesis succeeded")
	}
	if info, err := Lookup("kill"); err != nil || len(info.Strikes) != 1 || info.Strikes[0] != "kill" {
		t.Errorf("Lookup(kill) = %+v, %v", info, err)
	}
}
