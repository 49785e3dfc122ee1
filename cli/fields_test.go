package cli

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	lockrun "github.com/lockharness/lockharness/run"
)

// Every field a run's messages name is named by the command line as
// fieldFlags says, each of its flags is one `harness run` has, and each
// entry names a field of the configuration.
func TestFieldFlags(t *testing.T) {
	src, err := filepath.Glob(filepath.Join("..", "run", "*.go"))
	if err != nil || len(src) == 0 {
		t.Fatalf("the run package's sources: %v", err)
	}
	named := regexp.MustCompile(`\{([A-Z][A-Za-z]*(?:\.[A-Z][A-Za-z]*)*)[ }]`)
	for _, file := range src {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "//") {
				continue // a comment's {Path} is no message's
			}
			for _, m := range named.FindAllStringSubmatch(line, -1) {
				if fieldFlags[m[1]] == "" {
					t.Errorf("%s names field %s, which fieldFlags does not map", filepath.Base(file), m[1])
				}
			}
		}
	}
	// Each duration of the configuration, negative, is refused naming a
	// field the command line names, or by its part's own validation (the
	// workload's, the deployment's), whose messages are their own; some
	// (Sentinel's timings) nothing checks.
	for _, path := range durationFields(reflect.TypeFor[lockrun.Config](), "") {
		cfg := lockrun.Config{Lock: "token"}
		v := reflect.ValueOf(&cfg).Elem()
		for _, name := range strings.Split(path, ".") {
			v = v.FieldByName(name)
		}
		v.SetInt(-1)
		var fe *lockrun.FieldError
		err := cfg.Validate()
		if err == nil {
			continue
		}
		if !errors.As(err, &fe) || (fieldFlags[fe.Field] == "" && fe.Field != "Workload" && fe.Field != "Cluster") {
			t.Errorf("%s negative: %v, want a field error of a field fieldFlags maps", path, err)
		}
	}
	run := newRunCmd(&app{}).Flags()
	for field, name := range fieldFlags {
		if got := (&lockrun.FieldError{Problem: "{" + field + "}"}).Text(func(f string) string { return fieldFlags[f] }); got != name {
			t.Errorf("%s is not a field of the configuration (rendered %q)", field, got)
		}
		if flag, ok := strings.CutPrefix(name, "--"); ok && run.Lookup(flag) == nil {
			t.Errorf("%s maps to %s, which harness run does not have", field, name)
		}
	}
}

// What cannot run on a Redis Cluster is refused naming the flags, and a
// matrix validates every cell before the first one runs: a cell that
// cannot run stops it before any other ran, named; a setting every lock
// cell shares is named by its flag alone.
func TestFlagsInFieldErrors(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	store := t.TempDir()
	before, latest := storeState(t, store)
	tok := func(a ...string) []string { return append([]string{"run", "--store", store, "--lock", "token"}, a...) }
	matrixArgs := func(a ...string) []string {
		return append([]string{"matrix", "--store", store, "--seeds", "1", "--time-limit", "1s", "--nemesis-interval", "500ms"}, a...)
	}
	for _, c := range []badCase{
		{"redlock on a Redis Cluster", []string{"run", "--store", store, "--lock", "redlock", "--topology", "cluster"}, "does not run on a Redis Cluster (--topology cluster)", "use one of token"},
		{"nodes on a Redis Cluster", tok("--topology", "cluster", "--nodes", "3"), "got --nodes 3", "leave --nodes out (--masters and --replicas shape the cluster)"},
		{"failover on a Redis Cluster", tok("--topology", "cluster", "--nemesis", "failover"), "elects its own", "use --nemesis cluster-failover, or --topology replicated"},
		{"cluster fault elsewhere", tok("--topology", "independent", "--nemesis", "cluster-failover"), "the topology is independent", "use --topology cluster (or leave --topology out)"},
		{"failpoints without a client fault", tok("--failpoints", "x"), "failpoints x are armed only by a client fault", "add --nemesis client-pause or client-crash"},
		{"negative nemesis client pause", tok("--nemesis-client-pause", "-1s"), "--nemesis-client-pause must not be negative", "give a duration"},
		{"matrix cell that cannot run", matrixArgs("--locks", "token,redlock", "--nemeses", "failover"), "cell redlock/failover/seed-1: lock redlock runs on independent nodes", "--topology independent"},
		{"matrix zero clients", matrixArgs("--locks", "token", "--nemeses", "kill", "--clients", "0"), "harness: --clients must be at least 1, got 0", "--clients 5"},
		{"matrix negative hold", matrixArgs("--locks", "token", "--nemeses", "kill", "--hold", "-1s"), "harness: --hold must not be negative, got -1s", "give a duration"},
		{"matrix zero client pause", matrixArgs("--locks", "token", "--nemeses", "kill", "--nemesis-client-pause", "0s"), "--nemesis-client-pause must be positive, got 0s", "--nemesis-client-pause 1.5s"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, c.args...)
			if code != exitError || !strings.Contains(stderr, c.problem) || !strings.Contains(stderr, c.fix) {
				t.Errorf("exit %d, stderr %q; want 2, %q and %q", code, stderr, c.problem, c.fix)
			}
			assertNothingLeft(t, store, tmp, before, latest)
		})
	}
}

// durationFields are the paths of the time.Duration fields of t.
func durationFields(t reflect.Type, prefix string) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		switch {
		case !f.IsExported():
		case f.Type == reflect.TypeFor[time.Duration]():
			out = append(out, prefix+f.Name)
		case f.Type.Kind() == reflect.Struct:
			out = append(out, durationFields(f.Type, prefix+f.Name+".")...)
		}
	}
	return out
}
