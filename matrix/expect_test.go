package matrix

import (
	"strings"
	"testing"
)

// testKnown are the names of a small world: its expectations may name
// nothing else.
var testKnown = Known{Locks: []string{"token", "redlock"}, Nemeses: []string{"kill", "partition"},
	Backends: []string{DefaultBackend, DockerBackend}, Scenarios: []string{"redlock-clock-jump"}}

// Issue 22 rows 9 and 10: a second YAML document, an empty file and a name
// that exists nowhere are refused, naming the problem; a glob that matches
// a known name is not.
func TestExpectationsRefuseWhatTheyCannotMean(t *testing.T) {
	for _, c := range []struct{ name, src, want string }{
		{"two documents", "rules:\n  - {lock: token, expect: valid}\n---\nrules:\n  - {lock: token, expect: invalid}\n", "more than one YAML document"},
		{"an empty second document", "rules:\n  - {lock: token, expect: valid}\n---\n", "more than one YAML document"},
		{"empty", "", "no rules"},
		{"comments", "# nothing\n", "no rules"},
		{"an empty list", "rules: []\n", "no rules"},
		{"unknown lock", "rules:\n  - {lock: tokne, expect: valid}\n", `rule 1: lock "tokne" matches no known lock (known: token, redlock)`},
		{"glob of nothing", "rules:\n  - {lock: x*, expect: valid}\n", `lock "x*" matches no known lock`},
		{"unknown backend", "rules:\n  - {lock: token, expect: valid}\n  - {backend: podman, expect: valid}\n", `rule 2: backend "podman" matches no known backend`},
		{"unknown nemesis", "rules:\n  - {nemeses: partition+meteor, expect: valid}\n", `nemesis "meteor" (in nemeses "partition+meteor") matches no known nemesis`},
		{"unknown scenario", "rules:\n  - {scenario: nope, expect: valid}\n", `scenario "nope" matches no known scenario`},
	} {
		e, err := ParseExpectations([]byte(c.src))
		if err == nil {
			err = e.CheckNames(testKnown)
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	ok := "---\nrules:\n  - {lock: tok*, nemeses: kill+*, backend: '*', expect: valid}\n  - {nemeses: none, expect: valid}\n  - {scenario: redlock-*, expect: invalid}\n"
	e, err := ParseExpectations([]byte(ok))
	if err == nil {
		err = e.CheckNames(testKnown)
	}
	if err != nil {
		t.Errorf("globs of known names: %v", err)
	}
}
