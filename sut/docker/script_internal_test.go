package docker

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// The cut and uncut scripts, run in a network namespace of their own on
// the host (needs root, unshare and iptables; skipped otherwise): the cut
// installs exactly its rules and hooks, again without duplicating them,
// and the uncut leaves nothing, also when a hook is already gone.
func TestCutScripts(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for a network namespace")
	}
	for _, c := range []string{"unshare", "iptables", "iptables-restore"} {
		if _, err := exec.LookPath(c); err != nil {
			t.Skipf("needs %s", c)
		}
	}
	rules := []string{"-s 10.0.0.11 -j DROP", "-d 10.0.0.11 -j DROP", "-d 10.0.0.1 -p tcp --dport 4000 -j DROP"}
	run := func(script string) string {
		t.Helper()
		out, err := exec.Command("unshare", "-n", "sh", "-c", script+"\niptables -S").CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		return string(out)
	}
	once := run(cutScript(rules))
	twice := run(cutScript(rules) + "\n" + cutScript(rules))
	if once != twice {
		t.Errorf("the cut applied twice differs:\n%s\n%s", once, twice)
	}
	for _, want := range []string{"-A INPUT -j " + cutChain, "-A OUTPUT -j " + cutChain, "-A " + cutChain + " -s 10.0.0.11/32 -j DROP", "--dport 4000 -j DROP"} {
		if strings.Count(once, want) != 1 {
			t.Errorf("cut: %q %d times in\n%s", want, strings.Count(once, want), once)
		}
	}
	if got := run(cutScript(rules) + "\n" + uncutScript); strings.Contains(got, cutChain) {
		t.Errorf("uncut left:\n%s", got)
	}
	if got := run(cutScript(rules) + "\niptables -D OUTPUT -j " + cutChain + "\n" + uncutScript); strings.Contains(got, cutChain) {
		t.Errorf("uncut with a hook gone left:\n%s", got)
	}
	if got := run(uncutScript); strings.Contains(got, cutChain) {
		t.Errorf("uncut of nothing: %s", got)
	}
}
