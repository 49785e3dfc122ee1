package run

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// A reproduce line pasted into a shell gives the shell back the very
// arguments it was made of (issue 22 row 14: a --store with a space, ';'
// or non-ASCII broke it, and with ';' ran a second command).
func TestCommandLineRoundTrips(t *testing.T) {
	args := []string{"harness", "run", "--lock", "token", "--nemesis", "", "--store", "my store",
		"--store", "x;touch pwned", "--store", "ünïcode/日本", "--store", "it's", "--store", `a"b$c` + "`d`\\e",
		"--store", "~/x", "--store", "*", "--store", "-", "--store", "a\nb", "--ttl", "1s", "--seed", "7"}
	line := CommandLine(args...)
	if !strings.HasPrefix(line, "harness run --lock token --nemesis '' --store 'my store' --store 'x;touch pwned'") {
		t.Errorf("line %s", line)
	}
	if !strings.HasSuffix(line, "--ttl 1s --seed 7") {
		t.Errorf("safe words are quoted: %s", line)
	}
	// The shell splits it back: printf prints each argument on a line of
	// its own, NUL-terminated to keep the newline one.
	out, err := exec.Command("sh", "-c", `printf '%s\0' `+line).Output()
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	if !slices.Equal(got, args) {
		t.Errorf("the shell read back\n%q\nwant\n%q", got, args)
	}
}
