package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// readmeExample is an example of the README that shows a verdict: the
// command whose output the README shows, the shell commands before it in
// its block (setup: `$ mkdir …`), the verdict headline the output starts
// with and the checkers' verdicts it shows.
type readmeExample struct {
	line     int    // the README line of the command
	command  string // as the README writes it, "harness …"
	setup    []string
	headline string   // "INVALID", "AS EXPECTED", …
	checkers []string // "lock-promise invalid", …
}

// headlines are the verdict words a command's output starts with, and
// the exit code each one means (docs/checkers.md, docs/ci.md).
var headlines = map[string]int{"VALID": 0, "INVALID": 1, "UNKNOWN": 2, "AS EXPECTED": 0, "EXPECTATION MISSED": 1}

var (
	headlineRE = regexp.MustCompile(`^(VALID|INVALID|UNKNOWN|AS EXPECTED|EXPECTATION MISSED)\s`)
	checkerRE  = regexp.MustCompile(`^\s+(lock-promise|resource|liveness)\s+(valid|invalid|unknown)\b`)
)

// readmeExamples finds the examples of the README that show a verdict. In
// a block with "$ " prompts, a prompted command whose output (after any
// "…" line) starts with a verdict is an example, and the prompted
// commands above it that are not harness commands are its setup. A block
// without prompts that starts with a verdict is a captured output (make
// demo's): its command is the one on its "reproduce" line.
func readmeExamples(readme string) []readmeExample {
	var out []readmeExample
	lines := strings.Split(readme, "\n")
	for i := 0; i < len(lines); i++ {
		if !strings.HasPrefix(lines[i], "```") {
			continue
		}
		end := i + 1
		for end < len(lines) && !strings.HasPrefix(lines[end], "```") {
			end++
		}
		out = append(out, blockExamples(lines[i+1:end], i+2)...)
		i = end
	}
	return out
}

// blockExamples are the examples of one fenced block, its lines from
// README line first.
func blockExamples(block []string, first int) []readmeExample {
	prompted := false
	for _, l := range block {
		prompted = prompted || strings.HasPrefix(l, "$ ")
	}
	if !prompted {
		ex, ok := shownVerdict(block)
		if !ok {
			return nil
		}
		for j, l := range block {
			if cmd, found := strings.CutPrefix(strings.TrimSpace(l), "reproduce "); found {
				ex.line, ex.command = first+j, strings.TrimSpace(cmd)
				return []readmeExample{ex}
			}
		}
		return nil
	}
	var out []readmeExample
	var setup []string
	for j := 0; j < len(block); j++ {
		cmd, ok := strings.CutPrefix(block[j], "$ ")
		if !ok {
			continue
		}
		k := j + 1
		for k < len(block) && !strings.HasPrefix(block[k], "$ ") {
			k++
		}
		if ex, shown := shownVerdict(block[j+1 : k]); shown {
			ex.line, ex.command, ex.setup = first+j, strings.TrimSpace(cmd), append([]string(nil), setup...)
			out = append(out, ex)
		} else if !strings.HasPrefix(cmd, "harness ") {
			setup = append(setup, cmd)
		}
		j = k - 1
	}
	return out
}

// shownVerdict reads an output as the README shows it: the verdict on its
// first line (after any "…") and the checkers' verdicts under it.
func shownVerdict(output []string) (readmeExample, bool) {
	var ex readmeExample
	for _, l := range output {
		if strings.TrimSpace(l) == "…" && ex.headline == "" {
			continue
		}
		if ex.headline == "" {
			m := headlineRE.FindStringSubmatch(l)
			if m == nil {
				return ex, false
			}
			ex.headline = m[1]
			continue
		}
		if m := checkerRE.FindStringSubmatch(l); m != nil {
			ex.checkers = append(ex.checkers, m[1]+" "+m[2])
		}
	}
	return ex, ex.headline != ""
}

// The README's examples are found: the demo's captured run, the manual
// failover, the matrix, the scenario and the stored history (a change
// to the README that hides one from the parser fails here, not silently).
func TestReadmeExamplesFound(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	exs := readmeExamples(string(b))
	var got []string
	for _, ex := range exs {
		got = append(got, fmt.Sprintf("%s → %s", strings.Join(strings.Fields(ex.command)[:2], " "), ex.headline))
		if _, ok := headlines[ex.headline]; !ok || !strings.HasPrefix(ex.command, "harness ") {
			t.Errorf("README line %d: %q shows %q", ex.line, ex.command, ex.headline)
		}
	}
	want := []string{"harness run → INVALID", "harness run → INVALID", "harness matrix → AS EXPECTED",
		"harness scenario → AS EXPECTED", "harness check → INVALID"}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Errorf("README examples:\n got %q\nwant %q", got, want)
	}
}

// Each README example that shows a verdict, run as a user would (the
// harness binary on PATH, in a directory that holds the checkout's files
// and a fresh store), gives the verdict the README shows, the checkers'
// verdicts under it and the exit code that verdict means. The examples
// strike deterministically (scripted awaits, --nemesis-await, a stored
// history), so a seed is a promise here.
func TestReadmeExamplesReproduce(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: runs the README's examples on redis-server")
	}
	requireRedis(t)
	t.Parallel()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, ex := range readmeExamples(string(b)) {
		t.Run(fmt.Sprintf("line-%d", ex.line), func(t *testing.T) {
			// Each example is a process of its own in a directory of
			// its own, and strikes by its script, not by the clock.
			t.Parallel()
			dir := checkoutCopy(t)
			for _, s := range ex.setup {
				if code, out := shell(t, dir, s); code != 0 {
					t.Fatalf("setup %q: exit %d\n%s", s, code, out)
				}
			}
			code, out := shell(t, dir, ex.command)
			first := strings.TrimSpace(out) // the summary starts after a blank line
			first, _, _ = strings.Cut(first, "\n")
			if !strings.HasPrefix(first, ex.headline+" ") || code != headlines[ex.headline] {
				t.Fatalf("README line %d: %s\nshows %s (exit %d), got exit %d:\n%s", ex.line, ex.command, ex.headline, headlines[ex.headline], code, out)
			}
			for _, c := range ex.checkers {
				f := strings.Fields(c)
				if !regexp.MustCompile(`(?m)^\s+` + regexp.QuoteMeta(f[0]) + `\s+` + f[1] + `\b`).MatchString(out) {
					t.Errorf("README line %d shows %s, the run did not:\n%s", ex.line, c, out)
				}
			}
		})
	}
}

// checkoutCopy is a directory that looks like the checkout to a command
// (each of its top-level files and directories linked, but the store),
// so that the README's relative paths (checker/testdata, matrix/) resolve
// and its runs write to a store of their own.
func checkoutCopy(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, e := range entries {
		if e.Name() == "store" || e.Name() == "bin" || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if err := os.Symlink(filepath.Join(root, e.Name()), filepath.Join(dir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// shell runs a README command line with sh in dir, the harness binary
// first on PATH and node files under dir, bounded; it returns the exit
// code and stdout.
func shell(t *testing.T, dir, line string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", line)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(harnessBin)+string(os.PathListSeparator)+os.Getenv("PATH"), "TMPDIR="+dir)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("%s: %v", line, err)
	}
	if ctx.Err() != nil {
		t.Fatalf("%s: still running after 3 minutes:\n%s\n%s", line, stdout.String(), stderr.String())
	}
	return cmd.ProcessState.ExitCode(), stdout.String()
}
