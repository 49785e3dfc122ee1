package locks_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/registry"
	"github.com/lockharness/lockharness/sut"
)

func never([]sut.ClientNode, locks.Options) (locks.Lock, error) {
	return nil, errors.New("never built")
}

// The lock registry refuses an empty name, a lock without a factory and a
// name already taken (a built-in one too); a lock of the user's registers
// next to the built-in ones, is found and listed by name; an unknown name
// is the registries' one *UnknownError, listing the known locks.
func TestRegistry(t *testing.T) {
	r := locks.Builtin()
	for _, c := range []struct {
		info locks.Info
		want string
	}{
		{locks.Info{New: never}, "register lock: empty name"},
		{locks.Info{Name: "mine"}, `register lock "mine": no factory`},
		{locks.Info{Name: "token", New: never}, `register lock "token": name already registered`},
	} {
		if err := r.Register(c.info); err == nil || err.Error() != c.want {
			t.Errorf("register %+v: %v, want %q", c.info, err, c.want)
		}
	}
	if err := r.Register(locks.Info{Name: "mine", New: never}); err != nil {
		t.Fatal(err)
	}
	if err := r.Register(locks.Info{Name: "mine", New: never}); !errors.Is(err, registry.ErrDuplicate) {
		t.Errorf("mine twice: %v", err)
	}
	info, err := r.Lookup("mine")
	if err != nil || info.Name != "mine" || info.MinNodes != 1 {
		t.Errorf("mine: %+v, %v (MinNodes 0 is taken as 1)", info, err)
	}
	names := r.Names()
	if !strings.Contains(strings.Join(names, ","), "fenced,mine,mysql") {
		t.Errorf("names %v: mine is not listed by name among the built-in locks", names)
	}
	if len(r.All()) != len(names) || len(names) != len(locks.Builtin().Names())+1 {
		t.Errorf("%d entries, %d names, want the built-in ones and mine", len(r.All()), len(names))
	}

	_, err = r.Lookup("nope")
	var ue *registry.UnknownError
	if !errors.As(err, &ue) || ue.Kind != "lock" || ue.Name != "nope" ||
		!strings.HasPrefix(err.Error(), `unknown lock "nope" (known locks: etcd, etcd-fenced, fenced, mine, `) {
		t.Errorf("nope: %v", err)
	}
	// locks.UnknownError is that type: callers that match it still do.
	var lue *locks.UnknownError
	if !errors.As(err, &lue) || lue != ue {
		t.Errorf("locks.UnknownError does not match %v", err)
	}
	// Builtin is a new registry each time: mine is not in the next one.
	if _, err := locks.Builtin().Lookup("mine"); err == nil {
		t.Error("a lock registered in one registry is in another")
	}
}
