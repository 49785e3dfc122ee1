package main

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
	src, err := filepath.Glob(filepath.Join("..", "..", "run", "*.go"))
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
	run := newRunCmd().Flags()
	for field, name := range fieldFlags {
		if got := (&lockrun.FieldError{Problem: "{" + field + "}"}).Text(func(f string) string { return fieldFlags[f] }); got != name {
			t.Errorf("%s is not a field of the configuration (rendered %q)", field, got)
		}
		if flag, ok := strings.CutPrefix(name, "--"); ok && run.Lookup(flag) == nil {
			t.Errorf("%s maps to %s, which harness run does not have", field, name)
		}
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
