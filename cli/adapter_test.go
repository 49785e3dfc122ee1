package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// docsAdapter writes the minimal adapter docs/protocol.md quotes, with
// each edit (old → new) made, and returns the command that runs it.
func docsAdapter(t *testing.T, edits ...string) string {
	t.Helper()
	page, err := os.ReadFile("../docs/protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(page), "## A minimal adapter")
	_, code, ok2 := strings.Cut(rest, "```python\n")
	code, _, ok3 := strings.Cut(code, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal("docs/protocol.md has no minimal adapter in a python block")
	}
	for i := 0; i+1 < len(edits); i += 2 {
		if !strings.Contains(code, edits[i]) {
			t.Fatalf("the page's adapter has no %q to edit", edits[i])
		}
		code = strings.Replace(code, edits[i], edits[i+1], 1)
	}
	path := filepath.Join(t.TempDir(), "adapter.py")
	if err := os.WriteFile(path, []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
	return "/usr/bin/python3 " + path
}

// The adapter the protocol's page quotes passes `harness adapter check`
// through the command line (exit 0); the same adapter broken fails,
// naming the line it sent: an answer to the wrong id mid-way is a failed
// check (exit 1), a stray print before hello means nothing could be
// tested (exit 2).
func TestAdapterCheckOfTheDocsAdapter(t *testing.T) {
	integration(t)
	if err := exec.Command("/usr/bin/python3", "-c", "import redis").Run(); err != nil {
		t.Fatalf("/usr/bin/python3 cannot import redis (%v): apt-get install -y python3-redis", err)
	}
	cases := []struct {
		name  string
		edits []string
		code  int
		want  string
	}{
		{"as quoted", nil, 0, "all 20 checks passed"},
		{"wrong id on release", []string{`answer["id"] = request["id"]`, `answer["id"] = request["id"] + (1000 if request["op"] == "release" else 0)`},
			exitInvalid, `an answer to nothing: no request has id 1005`},
		{"stray print", []string{`    op = m["op"]`, `    print("handling", m)` + "\n" + `    op = m["op"]`},
			exitError, `line 1 "handling {'id': 1, 'op': 'hello', 'version': 1}": not a JSON object`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel() // each check starts an adapter and a server of its own
			code, stdout, stderr := runCLI(t, "adapter", "check", docsAdapter(t, c.edits...), "--logs", t.TempDir())
			if code != c.code || !strings.Contains(stdout, c.want) {
				t.Errorf("exit %d, want %d and %q in:\n%s%s", code, c.code, c.want, stdout, stderr)
			}
		})
	}
}
