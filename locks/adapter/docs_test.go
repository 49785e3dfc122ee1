package adapter_test

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/locks/adapter"
	"github.com/lockharness/lockharness/scenarios"
	"github.com/lockharness/lockharness/schedule"
)

// Every "reproduce" command of docs/real-libraries.md is a harness
// command a user runs, naming a shipped adapter; a scenario it names is
// in the catalogue and applies to that adapter's lock (its kinds).
func TestRealLibrariesPageCommands(t *testing.T) {
	page, err := os.ReadFile("../../docs/real-libraries.md")
	if err != nil {
		t.Fatal(err)
	}
	reg := locks.Builtin()
	if err := adapter.RegisterShipped(context.Background(), reg); err != nil {
		t.Fatal(err)
	}
	cmds := regexp.MustCompile("`((?:[A-Z0-9_]+=\\S+ )*harness [^`]+)`").FindAllStringSubmatch(string(page), -1)
	if len(cmds) < 10 {
		t.Fatalf("only %d harness commands on the page", len(cmds))
	}
	for _, row := range strings.Split(string(page), "\n") {
		if strings.Contains(row, "go test -run") {
			t.Errorf("a reproduce command is a Go test, not a harness command: %s", row)
		}
	}
	lockFlag := regexp.MustCompile(`--lock (\S+)`)
	scenario := regexp.MustCompile(`harness scenario run (\S+)`)
	file := regexp.MustCompile(`harness scenario run (scenarios/upstream/\S+\.yaml)$`)
	for _, m := range cmds {
		cmd := m[1]
		if f := file.FindStringSubmatch(cmd); f != nil {
			checkScenarioFile(t, f[1], reg)
			continue
		}
		l := lockFlag.FindStringSubmatch(cmd)
		if l == nil {
			t.Errorf("%s: no --lock", cmd)
			continue
		}
		if _, err := reg.Lookup(l[1]); err != nil {
			t.Errorf("%s: %v", cmd, err)
			continue
		}
		if s := scenario.FindStringSubmatch(cmd); s != nil {
			sc, err := scenarios.Lookup(s[1])
			if err != nil {
				t.Errorf("%s: %v", cmd, err)
				continue
			}
			if _, err := sc.WithLock(l[1], reg); err != nil {
				t.Errorf("%s: %v", cmd, err)
			}
		}
	}
}

// checkScenarioFile checks that the scenario file at path (from the
// repository's root) reads, and that the lock it names is a shipped
// adapter.
func checkScenarioFile(t *testing.T, path string, reg *locks.Registry) {
	t.Helper()
	f, err := os.Open("../../" + path)
	if err != nil {
		t.Errorf("%s: %v", path, err)
		return
	}
	defer f.Close()
	sch, err := schedule.Parse(f, schedule.Env{Locks: reg})
	if err != nil {
		t.Errorf("%s: %v", path, err)
		return
	}
	if _, err := reg.Lookup(sch.Lock); err != nil {
		t.Errorf("%s: %v", path, err)
	} else if _, err := locks.Builtin().Lookup(sch.Lock); err == nil {
		t.Errorf("%s: lock %q is built in, not a shipped adapter", path, sch.Lock)
	}
}
