package lockharness_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockharness/lockharness"
	"github.com/lockharness/lockharness/locks"
)

// A lock names the system it runs on; the run refuses, before starting
// anything, a system it cannot start and a Redis backend for another
// system's lock.
func TestRunRefusesASystemItCannotStart(t *testing.T) {
	reg := locks.NewRegistry()
	never := func([]locks.Node, locks.Options) (locks.Lock, error) {
		return nil, errors.New("never built")
	}
	if err := reg.Register(locks.Info{Name: "elsewhere", System: "nosuch", New: never}); err != nil {
		t.Fatal(err)
	}
	_, err := lockharness.Run(context.Background(), lockharness.Config{
		Lock: "elsewhere", Registry: reg, Seed: 1, TimeLimit: time.Second, Store: t.TempDir(),
	})
	var ue *lockharness.UsageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "runs on nosuch, which this harness cannot start") {
		t.Fatalf("run: %v, want a usage error naming the system", err)
	}
	if info, _ := reg.Lookup("elsewhere"); info.SystemName() != "nosuch" {
		t.Errorf("SystemName %q", info.SystemName())
	}
	if info := (locks.Info{}); info.SystemName() != locks.SystemRedis {
		t.Errorf("a lock naming no system runs on %q, want redis", info.SystemName())
	}
}
