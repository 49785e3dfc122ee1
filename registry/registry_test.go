package registry_test

import (
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"

	"github.com/lockharness/lockharness/registry"
)

// A registry refuses an empty name, a nil entry and a second entry of one
// name, each with an error that says which (errors.Is) and names the kind
// and the name.
func TestRegisterRefuses(t *testing.T) {
	r := registry.New[func() int]("gadget")
	one := func() int { return 1 }
	if err := r.Register("one", one); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		v    func() int
		want error
		msg  string
	}{
		{"", one, registry.ErrNoName, "register gadget: empty name"},
		{"two", nil, registry.ErrNil, `register gadget "two": nil entry`},
		{"one", one, registry.ErrDuplicate, `register gadget "one": name already registered`},
	} {
		err := r.Register(c.name, c.v)
		if !errors.Is(err, c.want) || err.Error() != c.msg {
			t.Errorf("register %q: %v, want %q", c.name, err, c.msg)
		}
	}
	if r.Len() != 1 {
		t.Errorf("%d entries after refusals, want 1", r.Len())
	}
	// A nil interface and a nil pointer are nil entries too; a zero
	// struct is not.
	if err := registry.New[error]("e").Register("x", nil); !errors.Is(err, registry.ErrNil) {
		t.Errorf("nil interface: %v", err)
	}
	if err := registry.New[*int]("p").Register("x", nil); !errors.Is(err, registry.ErrNil) {
		t.Errorf("nil pointer: %v", err)
	}
	if err := registry.New[struct{}]("s").Register("x", struct{}{}); err != nil {
		t.Errorf("zero struct: %v", err)
	}
}

// Lookup finds what was registered; an unknown name is an *UnknownError
// of the registry's kind that lists the known names, in its words.
func TestLookup(t *testing.T) {
	r := registry.New[int]("lock", registry.KnownAs("known locks"))
	for i, n := range []string{"token", "redlock", "fenced"} {
		if err := r.Register(n, i); err != nil {
			t.Fatal(err)
		}
	}
	if v, err := r.Lookup("redlock"); err != nil || v != 1 {
		t.Errorf("redlock: %v, %v", v, err)
	}
	_, err := r.Lookup("nope")
	var ue *registry.UnknownError
	if !errors.As(err, &ue) || ue.Kind != "lock" || ue.Name != "nope" ||
		err.Error() != `unknown lock "nope" (known locks: fenced, redlock, token)` {
		t.Errorf("nope: %v", err)
	}
	// Wrapped, it is still found.
	if !errors.As(fmt.Errorf("run: %w", err), &ue) {
		t.Error("a wrapped UnknownError is not found by errors.As")
	}
	if got := (&registry.UnknownError{Kind: "nemesis", Name: "meteor", Known: []string{"kill", "pause"}}).Error(); got != `unknown nemesis "meteor" (known: kill, pause)` {
		t.Errorf("default words: %q", got)
	}
}

// Names and All are sorted by name, or in registration order when the
// registry is made InOrder.
func TestOrder(t *testing.T) {
	sorted := registry.New[string]("x")
	inOrder := registry.New[string]("x", registry.InOrder())
	for _, n := range []string{"redis", "etcd", "zookeeper", "mariadb"} {
		for _, r := range []*registry.Registry[string]{sorted, inOrder} {
			if err := r.Register(n, "is "+n); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got, want := sorted.Names(), []string{"etcd", "mariadb", "redis", "zookeeper"}; !reflect.DeepEqual(got, want) {
		t.Errorf("sorted names %v, want %v", got, want)
	}
	if got, want := sorted.All(), []string{"is etcd", "is mariadb", "is redis", "is zookeeper"}; !reflect.DeepEqual(got, want) {
		t.Errorf("sorted entries %v, want %v", got, want)
	}
	if got, want := inOrder.Names(), []string{"redis", "etcd", "zookeeper", "mariadb"}; !reflect.DeepEqual(got, want) {
		t.Errorf("names in order %v, want %v", got, want)
	}
	if _, err := inOrder.Lookup("consul"); err == nil || err.Error() != `unknown x "consul" (known: redis, etcd, zookeeper, mariadb)` {
		t.Errorf("consul: %v", err)
	}
	// Names is a copy.
	sorted.Names()[0] = "changed"
	if sorted.Names()[0] != "etcd" {
		t.Error("Names shares the registry's slice")
	}
}

// Registering and looking up from many goroutines is safe (go test -race).
func TestConcurrent(t *testing.T) {
	r := registry.New[int]("n")
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = r.Register(fmt.Sprint(i%10), i)
			_, _ = r.Lookup("3")
			_ = r.All()
		}()
	}
	wg.Wait()
	if r.Len() != 10 {
		t.Errorf("%d entries, want 10", r.Len())
	}
}
