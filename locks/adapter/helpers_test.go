package adapter_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/lockharness/lockharness/locks/adapter"
	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/sut/redis/redistest"
)

// python is the interpreter that sees Debian's python3-redis.
const python = "/usr/bin/python3"

// requirePython skips when Debian's python3 with redis-py is missing.
func requirePython(tb testing.TB) {
	tb.Helper()
	if err := exec.Command(python, "-c", "import redis").Run(); err != nil {
		tb.Fatalf("%s cannot import redis (%v): apt-get install -y python3-redis", python, err)
	}
}

// redisNodes starts one Redis node with two client slots and returns
// their views of it.
func redisNodes(t *testing.T) func(int) []sut.ClientNode {
	t.Helper()
	redistest.Require(t, "redis-server")
	requirePython(t)
	c := redistest.Up(t, sut.Config{Nodes: 1, Clients: 2})
	views := map[int][]sut.ClientNode{}
	t.Cleanup(func() {
		for _, ns := range views {
			sut.CloseClientNodes(ns)
		}
	})
	return func(slot int) []sut.ClientNode {
		if ns, ok := views[slot]; ok {
			return ns
		}
		ns := c.ClientNodes(slot, sut.ClientOptions{Timeout: 500 * time.Millisecond})
		views[slot] = ns
		return ns
	}
}

// testdataSpec is the spec of a misbehaving adapter under testdata. Its
// start and requests may take long on a loaded machine (a 5s start bound
// ran out before an interpreter started at load 13, a 1s request bound
// before the "exit" mode's end was seen at load 25): every mode but
// "silent" and "slow" ends by itself, and their tests set their bounds.
func testdataSpec(t *testing.T, script string) adapter.Spec {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", script))
	if err != nil {
		t.Fatal(err)
	}
	return adapter.Spec{Name: script, Command: []string{python, p}, StartTimeout: 30 * time.Second, RequestTimeout: 10 * time.Second}
}

// shipped returns the shipped adapter called name.
func shipped(t testing.TB, name string) adapter.Spec {
	t.Helper()
	specs, err := adapter.Shipped(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range specs {
		if s.Name == name {
			if s.Unavailable != "" {
				t.Fatalf("%s cannot run: %s", name, s.Unavailable)
			}
			return s
		}
	}
	t.Fatalf("no shipped adapter %s", name)
	return adapter.Spec{}
}

// noProcessLeft fails when a process of the test's own process groups,
// other than the test binary's, is alive: every adapter group is gone.
func noProcessLeft(t *testing.T, pgids []int) {
	t.Helper()
	for _, g := range pgids {
		if err := syscall.Kill(-g, 0); err == nil {
			t.Errorf("process group %d is still alive", g)
		}
	}
}
