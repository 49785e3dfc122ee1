package scenarios

import (
	"errors"
	"strings"
	"testing"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/sut"
)

// userRegistry is the built-in locks and a user's single-node Redis lock
// without fencing, as a user's main registers it.
func userRegistry(t *testing.T, extra ...locks.Info) *locks.Registry {
	t.Helper()
	reg := locks.Builtin()
	noLock := func([]sut.ClientNode, locks.Options) (locks.Lock, error) {
		return nil, errors.New("not built in this test")
	}
	for _, info := range append([]locks.Info{{Name: "mine", MaxNodes: 1, New: noLock}}, extra...) {
		if info.New == nil {
			info.New = noLock
		}
		if err := reg.Register(info); err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

// Every scenario applies to its own lock, and a kind it declares never
// predicts of the kind what its own lock's expectation contradicts: a
// prediction is what the mechanism forces on every lock of the kind, its
// own lock included.
func TestKindsAgreeWithTheCatalogue(t *testing.T) {
	for _, s := range Catalogue() {
		info, err := s.ownRegistry().Lookup(s.Lock)
		if err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
		kinds, err := s.AppliesTo()
		if err != nil {
			t.Fatal(err)
		}
		k, ok := s.kindFor(info, kinds)
		if !ok {
			t.Errorf("%s: its own lock %s is of none of its kinds %v", s.Name, s.Lock, kinds)
			continue
		}
		for _, n := range Checkers() {
			if want := k.Expect.Of(n); want != "" && want != s.Expect.Of(n) {
				t.Errorf("%s: kind %s predicts %s %s, the catalogue expects %s of %s", s.Name, k, n, want, s.Expect.Of(n), s.Lock)
			}
		}
	}
}

// A user's lock of the kind a scenario declares runs it with that kind's
// prediction alone, recorded as the run's expectation and reproduced with
// --lock; a checker the prediction leaves out is judged as a run's.
func TestScenarioWithAUsersLock(t *testing.T) {
	s, err := Lookup("gc-pause-stale-write")
	if err != nil {
		t.Fatal(err)
	}
	reg := userRegistry(t)
	o, err := s.WithLock("mine", reg)
	if err != nil {
		t.Fatal(err)
	}
	if o.Lock != "mine" || o.Instead != "token" || o.Run.Registry != reg || len(o.Kinds) != 1 {
		t.Fatalf("scenario with mine: lock %s instead of %q, kinds %v", o.Lock, o.Instead, o.Kinds)
	}
	cfg := o.RunConfig(t.TempDir())
	if len(cfg.Expected) != 1 || cfg.Expected[checker.Resource] != "invalid" {
		t.Errorf("expected %v, want the resource's invalid alone", cfg.Expected)
	}
	if cfg.Command != "harness scenario run gc-pause-stale-write --lock mine" || cfg.Lock != "mine" {
		t.Errorf("run config: lock %s, command %q", cfg.Lock, cfg.Command)
	}
	if got := o.Expect.String(); got != "resource invalid; others judged as a run" {
		t.Errorf("expectation %q", got)
	}
	out := Outcome{Scenario: o, Observed: map[string]checker.Verdict{checker.LockPromise: checker.Valid, checker.Resource: checker.Invalid, checker.Liveness: checker.Valid}}
	if !out.Pass() {
		t.Error("the predicted verdict did not pass")
	}
	out.Observed[checker.LockPromise] = checker.Invalid
	if out.Pass() {
		t.Error("an invalid lock promise, which nothing predicted, passed")
	}
	// Its own lock: the scenario as catalogued.
	if own, err := s.WithLock("token", reg); err != nil || own.Instead != "" || own.Expect != s.Expect {
		t.Errorf("own lock: %+v, %v", own.Expect, err)
	}
}

// A lock of no kind the scenario applies to is refused, naming the kinds
// it needs and the locks that fit; a scenario that arms a failpoint needs
// a lock that honours it.
func TestScenarioRefusesALockOfAnotherKind(t *testing.T) {
	reg := userRegistry(t, locks.Info{Name: "my-quorum"})
	for _, c := range []struct {
		scenario, lock string
		says           []string
	}{
		{"gc-pause-stale-write", "fenced", []string{"redis lock with expiring lease, without fencing or quorum", "locks that fit:", "mine", "token"}},
		{"redlock-clock-jump", "mine", []string{"quorum", "my-quorum", "redlock", "redsync"}},
		{"redlock-pause-before-check", "redsync", []string{"failpoints " + locks.FailpointAfterMajority, "redlock"}},
	} {
		s, err := Lookup(c.scenario)
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.WithLock(c.lock, reg)
		var ke *KindError
		if !errors.As(err, &ke) {
			t.Fatalf("%s --lock %s: %v, want a KindError", c.scenario, c.lock, err)
		}
		for _, w := range c.says {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s --lock %s: %q does not say %q", c.scenario, c.lock, err, w)
			}
		}
		if c.lock == "fenced" && strings.Contains(strings.SplitN(err.Error(), "fit:", 2)[1], "fenced") {
			t.Errorf("a fenced lock is said to fit: %v", err)
		}
	}
	// A scenario without declared kinds applies to locks of its own
	// lock's kind, with no prediction.
	s, _ := Lookup("redlock-clock-jump")
	o, err := s.WithLock("my-quorum", reg)
	if err != nil || len(o.Expect.Map()) != 0 {
		t.Errorf("redlock-clock-jump with my-quorum: %v, expectation %v", err, o.Expect.Map())
	}
	if _, err := s.WithLock("nosuch", reg); !errors.As(err, new(*locks.UnknownError)) {
		t.Errorf("unknown lock: %v", err)
	}
}
