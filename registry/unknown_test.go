package registry_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/nemesis"
	"github.com/lockharness/lockharness/registry"
	"github.com/lockharness/lockharness/scenarios"
	"github.com/lockharness/lockharness/sut"
)

// Each package's UnknownError is the registries' one type, so callers that
// matched a package's keep matching it, and one errors.As finds any.
var (
	_ *registry.UnknownError = (*locks.UnknownError)(nil)
	_ *registry.UnknownError = (*nemesis.UnknownError)(nil)
	_ *registry.UnknownError = (*scenarios.UnknownError)(nil)
	_ *registry.UnknownError = (*sut.UnknownError)(nil)
)

// Every registry answers an unknown name with that error, of its kind, in
// the words the CLI and its tests quote.
func TestOneUnknownError(t *testing.T) {
	for _, c := range []struct {
		kind, prefix string
		err          error
	}{
		{"lock", `unknown lock "x" (known locks: `, func() error { _, err := locks.Builtin().Lookup("x"); return err }()},
		{"nemesis", `unknown nemesis "x" (known: `, func() error { _, err := nemesis.Lookup("x"); return err }()},
		{"nemesis", `unknown nemesis "x" (known: `, func() error { _, err := nemesis.New(nemesis.Config{Names: []string{"x"}}); return err }()},
		{"scenario", `unknown scenario "x" (known: `, func() error { _, err := scenarios.Lookup("x"); return err }()},
		{"system", `unknown system "x" (known: `, func() error { _, err := sut.NewRegistry().Lookup("x"); return err }()},
		{"backend of redis", `unknown backend of redis "x" (known: `, func() error { _, err := (sut.System{Name: "redis"}).Backend("x", ""); return err }()},
	} {
		var ue *registry.UnknownError
		if !errors.As(c.err, &ue) || ue.Kind != c.kind || ue.Name != "x" || !strings.HasPrefix(c.err.Error(), c.prefix) {
			t.Errorf("%s: %v", c.kind, c.err)
		}
	}
}
