package reports

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lockharness/lockharness/checker"
)

// A run of more keys than maxKeys holds none of them for their colours:
// each key is coloured by a hash of its name, and the overview's legend
// names the first keys held, sorted, and says there were over maxKeys.
func TestManyKeysAreNotHeld(t *testing.T) {
	b := &builder{ttl: 500 * ms}
	const clients, n = 2, maxKeys + 500
	for i := range n {
		t0 := int64(i) * 2 * ms
		b.section(i%clients, fmt.Sprintf("key-%05d", i), t0, t0+ms, int64(i+1), false)
	}
	ops := b.build()
	v := newRunView(RunMeta{Lock: "token"}, ops, checker.Result{Verdict: checker.Valid, Counts: counts(ops), Holds: b.holds})
	if !v.manyKeys || len(v.keys) != 0 {
		t.Fatalf("%d keys: the view keeps %d of them (manyKeys %v)", n, len(v.keys), v.manyKeys)
	}
	if c := v.keyColourIndex("key-00042"); c != hashColour("key-00042") {
		t.Errorf("key-00042 has colour %d, want its hash's %d", c, hashColour("key-00042"))
	}
	dir := outDir(t, "many-keys")
	_, svg, _ := drawTimeline(t, v, window{From: 0, To: v.end, Title: "many keys"}, dir, "overview")
	for i := range legendKeys {
		if k := fmt.Sprintf("held key-%05d", i); !strings.Contains(svg, k) {
			t.Errorf("the legend does not say %q", k)
		}
	}
	if w := fmt.Sprintf("(over %d keys; colour = key)", maxKeys); !strings.Contains(svg, w) {
		t.Errorf("the legend does not say %q", w)
	}
	if _, err := os.Stat(filepath.Join(dir, "overview.png")); err != nil {
		t.Error(err)
	}
}

// A window's keys: the first legendKeys in sorted order, whatever order
// they come in, and the count, exact up to maxKeys.
func TestWindowKeys(t *testing.T) {
	w := newWindowKeys()
	for _, k := range []string{"k9", "k3", "k7", "k3", "k1", "k8", "k2", "k6", "k5", "k4", "k0"} {
		w.add(k)
	}
	if want := []string{"k0", "k1", "k2", "k3", "k4", "k5", "k6"}; !slices.Equal(w.least, want) {
		t.Errorf("least %v, want %v", w.least, want)
	}
	if n, ok := w.count(); n != 10 || !ok {
		t.Errorf("count %d %v, want 10 true", n, ok)
	}
	for i := range maxKeys {
		w.add(fmt.Sprint("x", i))
	}
	if _, ok := w.count(); ok {
		t.Errorf("%d keys counted exactly, want over %d", maxKeys+10, maxKeys)
	}
	if w.set.keys != nil {
		t.Errorf("the set keeps %d keys past maxKeys", len(w.set.keys))
	}
}
