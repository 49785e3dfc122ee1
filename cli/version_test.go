package cli

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// `harness version` and `harness --version` print the same line: the
// module, its version ("(devel)" from a checkout) and, when the build
// stamped one, the revision. The revision itself is tested on an
// installed binary (cmd/harness TestGoInstall): a test binary has none.
func TestVersionCommandAndFlag(t *testing.T) {
	code, out, errOut := runCLI(t, "version")
	if code != 0 || !strings.HasPrefix(out, "harness ") || !strings.Contains(out, "github.com/lockharness/lockharness") {
		t.Fatalf("harness version: exit %d, %q %q", code, out, errOut)
	}
	code2, out2, errOut2 := runCLI(t, "--version")
	if code2 != 0 || out2 != out {
		t.Fatalf("harness --version: exit %d, %q %q; want %q", code2, out2, errOut2, out)
	}
}

// The version line says what the build info says.
func TestVersionLine(t *testing.T) {
	for _, c := range []struct {
		v    buildVersion
		want string
	}{
		{buildVersion{Module: "m", Version: "v1.2.3", GoVersion: "go1.26.8"}, "harness v1.2.3 (m, go1.26.8)"},
		{buildVersion{Module: "m", Version: "(devel)", Revision: "abc", Time: "2026-11-27T12:00:00Z", Modified: true, GoVersion: "go1.26.8"},
			"harness (devel) (m, revision abc of 2026-11-27T12:00:00Z, dirty, go1.26.8)"},
	} {
		if got := c.v.String(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.v, got, c.want)
		}
	}
}

// walk calls f on cmd and every command under it.
func walk(cmd *cobra.Command, f func(*cobra.Command)) {
	f(cmd)
	for _, c := range cmd.Commands() {
		walk(c, f)
	}
}

// No flag's usage holds a backtick: pflag takes the first `quoted` word
// of a usage as the flag's value name, so "built by `make image`" showed
// as "--image make image" in --help.
func TestFlagUsagesHaveNoBackticks(t *testing.T) {
	root := newRoot(io.Discard, io.Discard, &app{})
	n := 0
	walk(root, func(c *cobra.Command) {
		c.InitDefaultHelpFlag()
		for _, fs := range []*pflag.FlagSet{c.LocalFlags(), c.PersistentFlags()} {
			fs.VisitAll(func(f *pflag.Flag) {
				n++
				if strings.Contains(f.Usage, "`") {
					name, _ := pflag.UnquoteUsage(f)
					t.Errorf("%s --%s: its usage has a backtick, so --help shows it as --%s %s: %q", c.CommandPath(), f.Name, f.Name, name, f.Usage)
				}
			})
		}
	})
	if n < 50 {
		t.Fatalf("walked only %d flags: the walk misses commands", n)
	}
}

// Every harness command line in the README and in the manual pages on CI
// and Docker names a command that exists with flags it accepts.
func TestDocCommandLinesParse(t *testing.T) {
	n := 0
	for _, file := range []string{"../README.md", "../docs/ci.md", "../docs/docker.md"} {
		for _, line := range docCommandLines(t, file) {
			n++
			args := shellWords(line)
			root := newRoot(io.Discard, io.Discard, &app{})
			cmd, rest, err := root.Find(args)
			if err != nil || (cmd == root && len(args) > 0 && !strings.HasPrefix(args[0], "-")) {
				t.Errorf("%s: %q: no such command (%v)", filepath.Base(file), line, err)
				continue
			}
			if err := cmd.ParseFlags(rest); err != nil {
				t.Errorf("%s: %q: %v", filepath.Base(file), line, err)
			}
		}
	}
	if n < 10 {
		t.Fatalf("found only %d command lines: the extraction is broken", n)
	}
}

// docCommandLines returns the arguments of every `harness …` command line
// inside a fenced code block of file: in a block with "$ " prompts only the
// prompted lines (the others are output, which may start with "harness"
// too), in a block without, every line; trailing comments and "; echo $?"
// removed.
func docCommandLines(t *testing.T, file string) []string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	blocks := strings.Split(string(b), "```")
	for i := 1; i < len(blocks); i += 2 { // the odd parts are inside fences
		block := strings.Split(blocks[i], "\n")
		prompted := strings.Contains(blocks[i], "\n$ ")
		for _, l := range block[1:] { // block[0] is the fence's info string
			l = strings.TrimSpace(l)
			if prompted && !strings.HasPrefix(l, "$ ") {
				continue
			}
			l = strings.TrimPrefix(l, "$ ")
			if !strings.HasPrefix(l, "harness ") {
				continue
			}
			if i := strings.Index(l, " #"); i >= 0 {
				l = l[:i]
			}
			if i := strings.Index(l, ";"); i >= 0 {
				l = l[:i]
			}
			lines = append(lines, strings.TrimSpace(strings.TrimPrefix(l, "harness ")))
		}
	}
	return lines
}

// shellWords splits a command line as sh would for the simple quoting
// the manual uses ('…' and "…").
func shellWords(s string) []string {
	var words []string
	var cur strings.Builder
	var quote rune
	inWord := false
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

// `harness locks` names each lock's failpoints, the names --failpoints
// takes (the README's manual table promised them; the list had none).
func TestLocksListsFailpoints(t *testing.T) {
	code, out, _ := runCLI(t, "locks")
	if code != 0 {
		t.Fatalf("harness locks: exit %d", code)
	}
	n := 0
	for _, l := range (Options{}).registry().All() {
		if len(l.Failpoints) == 0 {
			continue
		}
		n++
		want := "failpoints: " + strings.Join(l.Failpoints, ", ")
		found := false
		for _, line := range strings.Split(out, "\n") {
			found = found || (strings.HasPrefix(line, l.Name+" ") && strings.HasSuffix(line, want))
		}
		if !found {
			t.Errorf("harness locks: %s's line does not end with %q\n%s", l.Name, want, out)
		}
	}
	if n < 2 {
		t.Fatalf("only %d locks have failpoints: redlock and setnx-expire do", n)
	}
}
