package cli

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/sut"
)

// mainWith runs the command line as a user's main calling Main with opts.
func mainWith(t *testing.T, opts Options, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), args, &stdout, &stderr, opts)
	return code, stdout.String(), stderr.String()
}

// usersLocks is the built-in locks and one of a user's own, unfenced on
// one Redis node; it is never built here (only named).
func usersLocks(t *testing.T) *locks.Registry {
	t.Helper()
	reg := locks.Builtin()
	if err := reg.Register(locks.Info{Name: "mine", Description: "a user's lock", MaxNodes: 1,
		New: func([]sut.ClientNode, locks.Options) (locks.Lock, error) { return nil, errors.New("not in this test") }}); err != nil {
		t.Fatal(err)
	}
	return reg
}

// Every command that runs locks takes --lock-cmd; a build whose main gave
// no adapter support says so, exit 2, before anything runs.
func TestLockCmdWithoutAdapterSupport(t *testing.T) {
	store := t.TempDir()
	for _, args := range [][]string{
		{"run", "--lock-cmd", "python3 adapter.py", "--store", store},
		{"scenario", "run", "gc-pause-stale-write", "--lock-cmd", "python3 adapter.py", "--store", store},
		{"matrix", "--lock-cmd", "python3 adapter.py", "--nemeses", "none", "--seeds", "1", "--store", store},
	} {
		code, _, stderr := mainWith(t, Options{}, args...)
		if code != exitError || !strings.Contains(stderr, "this build of harness has no adapter support") {
			t.Errorf("%v: exit %d, stderr %q", args, code, stderr)
		}
	}
}

// --lock-cmd adds the lock the adapter command describes, under its own
// name, for this invocation alone; a name already taken is refused.
func TestLockCmdAddsItsLock(t *testing.T) {
	var given []string
	opts := Options{Locks: usersLocks(t), LockCommand: func(cmdline string) (locks.Info, error) {
		given = append(given, cmdline)
		return locks.Info{Name: "adapted", MaxNodes: 1, New: func([]sut.ClientNode, locks.Options) (locks.Lock, error) {
			return nil, errors.New("not in this test")
		}}, nil
	}}
	// The unknown-lock error lists the registry of the invocation.
	code, _, stderr := mainWith(t, opts, "run", "--lock-cmd", "./adapter --x 'y z'", "--lock", "nosuch", "--store", t.TempDir())
	if code != exitError || !strings.Contains(stderr, "adapted") || !strings.Contains(stderr, "mine") {
		t.Errorf("exit %d, stderr %q: want the known locks, adapted and mine among them", code, stderr)
	}
	if len(given) != 1 || given[0] != "./adapter --x 'y z'" {
		t.Errorf("LockCommand was given %q", given)
	}
	if _, err := opts.Locks.Lookup("adapted"); err == nil {
		t.Error("--lock-cmd changed the main's registry")
	}
	opts.LockCommand = func(string) (locks.Info, error) { return locks.Info{Name: "mine", New: opts.Locks.All()[0].New}, nil }
	code, _, stderr = mainWith(t, opts, "run", "--lock-cmd", "./adapter", "--store", t.TempDir())
	if code != exitError || !strings.Contains(stderr, `"mine"`) {
		t.Errorf("a taken name: exit %d, stderr %q", code, stderr)
	}
}

// harness locks lists the main's registry; scenario run --lock takes a lock
// of it when the lock is of the scenario's kind, and refuses one of
// another kind, exit 2, naming the kinds and the locks that fit.
func TestUsersLocksThroughTheCommands(t *testing.T) {
	opts := Options{Locks: usersLocks(t)}
	code, stdout, _ := mainWith(t, opts, "locks")
	if code != 0 || !strings.Contains(stdout, "mine") || !strings.Contains(stdout, "a user's lock") {
		t.Errorf("locks: exit %d, %q", code, stdout)
	}
	code, _, stderr := mainWith(t, opts, "scenario", "run", "gc-pause-fenced", "--lock", "mine", "--store", t.TempDir())
	if code != exitError || !strings.Contains(stderr, "needs a redis lock with expiring lease and fencing") || !strings.Contains(stderr, "locks that fit: fenced") {
		t.Errorf("scenario run of another kind: exit %d, %q", code, stderr)
	}
	code, _, stderr = mainWith(t, opts, "matrix", "--locks", "mine,nosuch", "--nemeses", "none", "--seeds", "1", "--store", t.TempDir())
	if code != exitError || !strings.Contains(stderr, `"nosuch"`) || !strings.Contains(stderr, "mine") {
		t.Errorf("matrix with an unknown lock: exit %d, %q", code, stderr)
	}
}
