package nemesis

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/registry"
)

func TestRegistryRejectsDuplicates(t *testing.T) {
	r := Builtin()
	if err := r.Register(func() Fault { return &pause{} }); !errors.Is(err, registry.ErrDuplicate) ||
		err.Error() != `register nemesis "pause": name already registered` {
		t.Fatalf("a nemesis registered twice: %v", err)
	}
	if len(r.Names()) != len(builtins()) {
		t.Fatalf("%d nemeses, want %d", len(r.Names()), len(builtins()))
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

// Every kind of fault a nemesis's file puts in force or ends by name
// (event{fault: …}, Value{Fault: …}, ends: […]) is one its Info says how
// to draw.
func TestEveryNemesisSaysHowItIsDrawn(t *testing.T) {
	named := regexp.MustCompile(`(?:fault|Fault): "([^"]+)"[,}]|ends: \[\]string\{([^}]*)\}`)
	for _, info := range Known() {
		src, err := os.ReadFile(strings.ReplaceAll(info.Name, "-", "") + ".go")
		if err != nil {
			t.Fatalf("%s: %v", info.Name, err)
		}
		var kinds []string
		for _, k := range info.Kinds {
			kinds = append(kinds, k.Name)
		}
		for _, m := range named.FindAllStringSubmatch(string(src), -1) {
			names := []string{m[1]}
			if m[1] == "" {
				names = strings.Split(m[2], ", ")
			}
			for _, n := range names {
				n = strings.Trim(n, `"`)
				if strings.Contains(n, ".") {
					continue // a variable's field, checked where it is set
				}
				if !slices.Contains(kinds, n) {
					t.Errorf("%s: its file names the fault kind %q, which its Info does not draw (Kinds %v)", info.Name, n, kinds)
				}
			}
		}
	}
}

// The kinds the built-in nemeses draw are the table the record held before
// each nemesis said it itself: same kinds, same order, same bytes in a
// run's record.
func TestFaultKindsAreTheTableTheyWere(t *testing.T) {
	was := []history.FaultKind{
		{Name: "partition", Colour: "#ffbe00", StartedBy: []string{"start-partition"}, EndedBy: []string{"stop-partition"}},
		{Name: "latency", Colour: "#1f77b4", StartedBy: []string{"start-latency"}, EndedBy: []string{"stop-latency"}},
		{Name: "delay", Colour: "#1f77b4"},
		{Name: "clock", Colour: "#9467bd", StartedBy: []string{"bump-clock", "drift-clock", "strobe-clock"}, EndedBy: []string{"reset-clock"}},
		{Name: "pause", Label: "node pause", Colour: "#6e6e6e", StartedBy: []string{"pause-node", "pause"}, EndedBy: []string{"resume-node", "resume"}},
		{Name: "kill", Label: "node down", Colour: "#8c564b", StartedBy: []string{"kill"}, EndedBy: []string{"restart"}},
		{Name: "replication cut", StartedBy: []string{"cut-replication"}, EndedBy: []string{"promote"}},
		{Name: "promote", Colour: "#17becf", StartedBy: []string{"promote"}, EndedBy: []string{"demote"}, Marks: []string{"await-promotion"}},
		{Name: "failover", Colour: "#17becf"},
		{Name: "master paused", StartedBy: []string{"pause-master"}, EndedBy: []string{"heal-master"}},
		{Name: "master isolated", StartedBy: []string{"isolate-master"}, EndedBy: []string{"heal-master"}},
		{Name: "lost replies"},
		{Name: "memory pressure"},
		{Name: "stale replica"},
		{Name: "pause-client", Label: "client pause"},
		{Name: "renewer stall"},
		{Name: "crash-client", Instant: true},
		{Name: "kill-connection", Instant: true},
	}
	want, _ := json.Marshal(was)
	got, err := json.Marshal(FaultKinds())
	if err != nil || string(got) != string(want) {
		t.Errorf("fault kinds:\n%s\nwant:\n%s", got, want)
	}
	// The caller's copy is its own.
	k := FaultKinds()
	k[0].StartedBy[0] = "changed"
	if FaultKinds()[0].StartedBy[0] != "start-partition" {
		t.Error("FaultKinds shares its slices")
	}
}

// A fault kind is drawn one way: a second nemesis may put a kind in force
// that another draws only if it draws it alike.
func TestRegistryRefusesAKindDrawnOtherwise(t *testing.T) {
	r := Builtin()
	n := len(r.FaultKinds())
	other := Info{Name: "other-partition", Kinds: []history.FaultKind{{Name: "partition", Colour: "#000000"}}}
	if err := r.Register(func() Fault { return infoOnly{other} }); err == nil || !strings.Contains(err.Error(), `fault kind "partition" is drawn otherwise`) {
		t.Errorf("a partition drawn black: %v", err)
	}
	if _, err := r.Lookup("other-partition"); err == nil {
		t.Error("the refused nemesis was registered")
	}
	alike := Info{Name: "alike-partition", Kinds: []history.FaultKind{partitionKinds[0], {Name: "tremor", Instant: true}}}
	if err := r.Register(func() Fault { return infoOnly{alike} }); err != nil {
		t.Fatal(err)
	}
	if got := r.FaultKinds(); len(got) != n+1 || got[n].Name != "tremor" {
		t.Errorf("kinds after a nemesis drawing partition alike and a tremor: %v", got[n:])
	}
	for _, bad := range []func() Fault{nil, func() Fault { return nil }} {
		if err := r.Register(bad); !errors.Is(err, registry.ErrNil) {
			t.Errorf("nil: %v", err)
		}
	}
	if err := r.Register(func() Fault { return infoOnly{Info{Kinds: []history.FaultKind{{}}}} }); !errors.Is(err, registry.ErrNoName) {
		t.Errorf("no name: %v", err)
	}
	if err := r.Register(func() Fault { return infoOnly{Info{Name: "x", Kinds: []history.FaultKind{{}}}} }); err == nil {
		t.Error("a kind without a name was accepted")
	}
}

// infoOnly is a fault that is only its Info.
type infoOnly struct{ info Info }

func (f infoOnly) Info() Info { return f.info }
func (infoOnly) Generate(*rand.Rand, Config, Topology) []Step {
	return nil
}
func (infoOnly) Setup(context.Context, *Exec) error    { return nil }
func (infoOnly) Do(context.Context, *Exec, Step) error { return nil }
func (infoOnly) Reset()                                {}
