package adapter_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/lockharness/lockharness/locks/adapter"
	"github.com/lockharness/lockharness/sut/redis/redistest"
)

func TestShippedAdaptersConform(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"minimal", "redis-py"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel() // a server and adapters of its own
			nodes := redisNodes(t)
			spec := shipped(t, name)
			rep := adapter.Conform(context.Background(), spec, adapter.ConformOptions{Nodes: nodes, Dir: t.TempDir()})
			var b strings.Builder
			rep.Write(&b)
			if !rep.OK() {
				t.Fatalf("not conformant:\n%s", b.String())
			}
			t.Logf("\n%s", b.String())
		})
	}
}

// harness adapter check's verdicts: a shipped name passes, an adapter that
// answers twice fails naming the line, one that crashes at start could not
// be tested.
func TestCheckCommand(t *testing.T) {
	redistest.Require(t, "redis-server")
	requirePython(t)
	t.Parallel()
	script := testdataSpec(t, "misbehave.py").Command[1]
	cases := []struct {
		cmd        string
		ok, fatal  bool
		wantInText string
	}{
		{"minimal", true, false, "all 20 checks passed"},
		{python + " " + script + " twice 4", false, false, `a second answer to request 5: every request gets exactly one`},
		{python + " " + script + " crash-start", false, true, "ended (exit status 3) before answering request 1 (hello); its log ends: misbehave: crashing at start, as asked"},
		{"'unclosed", false, true, "unclosed ' quote"},
	}
	for _, c := range cases {
		rep := adapter.CheckCommand(context.Background(), c.cmd, t.TempDir())
		var b strings.Builder
		rep.Write(&b)
		if rep.OK() != c.ok || (rep.Fatal != nil) != c.fatal || !strings.Contains(b.String(), c.wantInText) {
			t.Errorf("%s: ok %v, fatal %v, want %v and %v and the report to contain %q:\n%s", c.cmd, rep.OK(), rep.Fatal, c.ok, c.fatal, c.wantInText, b.String())
		}
	}
}

// The protocol's page quotes the minimal adapter as shipped, so what a
// reader copies is what `harness adapter check minimal` passes, and it
// stays under 80 lines.
func TestProtocolPageQuotesMinimalAdapter(t *testing.T) {
	src, err := os.ReadFile("../../adapters/minimal/adapter.py")
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile("../../docs/protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), "```python\n"+string(src)+"```") {
		t.Error("docs/protocol.md does not quote adapters/minimal/adapter.py as it is")
	}
	if n := strings.Count(string(src), "\n"); n >= 80 {
		t.Errorf("the minimal adapter has %d lines, want under 80", n)
	}
}

// harness adapter check starts the system each shipped adapter of a real
// library names (a ZooKeeper ensemble of three, an etcd member) and every
// one passes: for ZooKeeper's session leases, the expiry checks are
// session checks (held past the validity while the holder lives, handed
// on when a killed holder's session expires).
func TestRealAdaptersPassCheck(t *testing.T) {
	for _, c := range []struct {
		name, want string
	}{
		{"kazoo", "a dead holder's key goes to a waiter once its session expires"},
		{"curator", "a dead holder's key goes to a waiter once its session expires"},
		{"python-etcd3", "after its validity the key is granted to another client (within 1s"},
	} {
		t.Run(c.name, func(t *testing.T) {
			requireLib(t, c.name)
			rep := adapter.CheckCommand(context.Background(), c.name, t.TempDir())
			var b strings.Builder
			rep.Write(&b)
			if !rep.OK() || !strings.Contains(b.String(), c.want) || !strings.Contains(b.String(), "ok    the lock is in the server init named") {
				t.Fatalf("want every check passed, with %q:\n%s", c.want, b.String())
			}
			t.Logf("\n%s", b.String())
		})
	}
}
