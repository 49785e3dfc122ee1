package adapter

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"unicode"

	"github.com/lockharness/lockharness/locks"
)

// Hello starts spec's adapter, asks it what it is (the hello request,
// which opens no connection) and ends it. Its error names the adapter and
// what it sent or why it ended.
func Hello(ctx context.Context, spec Spec) (About, error) {
	spec = spec.withDefaults()
	dir, err := os.MkdirTemp("", "lockharness-hello-")
	if err != nil {
		return About{}, err
	}
	defer os.RemoveAll(dir)
	workDir := ""
	if spec.Files != nil {
		workDir = dir
		if err := writeFiles(spec.Files, dir); err != nil {
			return About{}, fmt.Errorf("adapter %s: %w", spec.Name, err)
		}
	}
	log, _ := openLog("")
	p, err := startProc(spec.Name, spec.Command, workDir, spec.Env, log)
	if err != nil {
		return About{}, err
	}
	l := &Lock{spec: spec, p: p, log: log}
	defer l.Close()
	return l.hello(ctx, request{Op: opHello, Version: Version})
}

// storeName is a name the store accepts as a directory (reports.CheckName).
var storeName = regexp.MustCompile(`^[A-Za-z0-9_-][A-Za-z0-9._-]*$`)

// FromCommand is the registry entry of an adapter given as a command line
// (`--lock-cmd 'CMD ARGS'`), split as a shell splits words (quotes and
// backslashes; no variables, globs or pipes: no shell runs). The adapter is
// asked hello once: its answer names the lock ("cmd-" + its name, so it
// cannot shadow a built-in or shipped lock, and a name that can name the
// run's directory in the store) and gives its language,
// library, version and system. An adapter that cannot answer is an error
// naming what it sent or why it ended, before any run starts.
func FromCommand(cmdline string) (locks.Info, error) {
	argv, err := SplitCommand(cmdline)
	if err != nil {
		return locks.Info{}, err
	}
	spec := Spec{Name: "cmd", Command: argv}
	about, err := Hello(context.Background(), spec)
	if err != nil {
		return locks.Info{}, fmt.Errorf("--lock-cmd %q: %w", cmdline, err)
	}
	if !storeName.MatchString(about.Name) {
		return locks.Info{}, fmt.Errorf("--lock-cmd %q: hello names the adapter %q: a name is letters, digits, '.', '_' and '-', not starting with '.' (it names the run's directory)", cmdline, about.Name)
	}
	spec = specFrom(spec, about)
	spec.Name = "cmd-" + about.Name
	spec.Description = "the command " + cmdline
	return Info(spec), nil
}

// specFrom completes spec with an adapter's description of itself.
func specFrom(spec Spec, a About) Spec {
	spec.Language, spec.Library, spec.Version = a.Language, a.Library, a.Version
	spec.System, spec.Fenced = a.System, a.Fenced
	if spec.System == "" {
		spec.System = locks.SystemRedis
	}
	return spec
}

// SplitCommand splits a command line into words as a POSIX shell does for
// plain words, single and double quotes and backslashes, and nothing else.
func SplitCommand(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	var quote rune
	escaped := false
	for _, r := range s {
		switch {
		case escaped:
			cur.WriteRune(r)
			escaped = false
		case quote == '\'':
			if r == '\'' {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\\' && quote != '\'':
			escaped, inWord = true, true
		case quote == '"':
			if r == '"' {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case unicode.IsSpace(r):
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
	switch {
	case escaped:
		return nil, fmt.Errorf("command %q ends with a lone backslash", s)
	case quote != 0:
		return nil, fmt.Errorf("command %q has an unclosed %c quote", s, quote)
	}
	if inWord {
		words = append(words, cur.String())
	}
	if len(words) == 0 {
		return nil, errors.New("empty adapter command: give the program and its arguments, e.g. --lock-cmd '/usr/bin/python3 my_adapter.py'")
	}
	return words, nil
}
