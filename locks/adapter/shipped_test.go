package adapter_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/locks/adapter"
)

// The shipped adapters are listed with the library version they report,
// run by the interpreter that imports the library.
func TestRegisterShipped(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python")
	}
	requirePython(t)
	reg := locks.Builtin()
	if err := adapter.RegisterShipped(context.Background(), reg); err != nil {
		t.Fatal(err)
	}
	info, err := reg.Lookup("redis-py")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(info.Description, "adapter (python, redis-py 4.3.4)") || info.SystemName() != locks.SystemRedis {
		t.Errorf("redis-py is listed as %q on %s", info.Description, info.SystemName())
	}
	if _, err := reg.Lookup("minimal"); err != nil {
		t.Error(err)
	}
}

// An adapter whose library no interpreter imports is still listed, saying
// why it cannot run (each interpreter tried, what it said) and what to
// install; a run of it fails with the same words.
func TestShippedWithoutItsLibrary(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python")
	}
	specs, err := adapter.ShippedIn(context.Background(), os.DirFS("testdata/shipped"))
	if err != nil || len(specs) != 1 {
		t.Fatalf("%d specs, %v", len(specs), err)
	}
	why := specs[0].Unavailable
	for _, want := range []string{
		"no interpreter runs it with the Python module lockharness_no_such_module",
		"/nonexistent/python3: not found",
		"/usr/bin/python3: adapter needs-module ended (exit status 1) before answering request 1 (hello)",
		"No module named 'lockharness_no_such_module'",
		"install: apt-get install -y python3-lockharness-no-such-module",
	} {
		if !strings.Contains(why, want) {
			t.Errorf("unavailable %q\nlacks %q", why, want)
		}
	}
	info := adapter.Info(specs[0])
	if !strings.Contains(info.Description, "[cannot run here: ") {
		t.Errorf("listed as %q", info.Description)
	}
	if _, err := info.New(nil, locks.Options{}); err == nil || !strings.Contains(err.Error(), "adapter needs-module cannot run here: no interpreter") {
		t.Errorf("a run of it: %v", err)
	}
}

// --lock-cmd: the command is split as a shell would, asked hello once,
// and named after its answer.
func TestFromCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python")
	}
	requirePython(t)
	info, err := adapter.FromCommand(python + " '../../adapters/minimal/adapter.py'")
	if err != nil {
		t.Fatal(err)
	}
	if info.Name != "cmd-minimal" || info.SystemName() != locks.SystemRedis || !strings.Contains(info.Description, "python") {
		t.Errorf("got %+v", info)
	}
	_, err = adapter.FromCommand(python + " testdata/misbehave.py crash-start")
	if err == nil || !strings.Contains(err.Error(), "ended (exit status 3) before answering request 1 (hello)") {
		t.Errorf("a command that crashes at start: %v", err)
	}
}

func TestSplitCommand(t *testing.T) {
	cases := []struct {
		in   string
		want []string
		err  string
	}{
		{`python3 a.py`, []string{"python3", "a.py"}, ""},
		{`  java -cp 'a b.jar:c' "Main X" \"q\" `, []string{"java", "-cp", "a b.jar:c", "Main X", `"q"`}, ""},
		{`node "it's.js" ''`, []string{"node", "it's.js", ""}, ""},
		{`a\ b`, []string{"a b"}, ""},
		{`'open`, nil, "unclosed ' quote"},
		{`x \`, nil, "lone backslash"},
		{"   ", nil, "empty adapter command"},
	}
	for _, c := range cases {
		got, err := adapter.SplitCommand(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: error %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || strings.Join(got, "|") != strings.Join(c.want, "|") || len(got) != len(c.want) {
			t.Errorf("%q: %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}
