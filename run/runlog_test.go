package run_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lockharness/lockharness/reports"
	"github.com/lockharness/lockharness/run"
	"github.com/lockharness/lockharness/workloads"
)

// A run keeps its phase log in harness.log, and a failed run the
// servers' last lines there too (not on stderr).
func TestRunKeepsItsLog(t *testing.T) {
	requireRedis(t)
	t.Parallel()
	var stderr bytes.Buffer
	cfg := run.Config{
		Lock: "set-nx-ex", Seed: 7, TimeLimit: 4 * time.Second, Recovery: time.Second, Store: t.TempDir(), Log: &stderr,
		Workload: workloads.Config{Clients: 5, Keys: 1, TTL: time.Second, ClientPause: 1500 * time.Millisecond},
	}
	out, err := run.Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(out.Dir, reports.LogFile))
	if err != nil {
		t.Fatal(err)
	}
	log := string(b)
	if !strings.HasPrefix(log, stderr.String()) {
		t.Errorf("the log does not begin with what went to stderr:\n%s\n---\n%s", log, stderr.String())
	}
	for _, want := range []string{"setup", "run", "heal", "teardown", "check", "report", "the run failed; the servers' last lines", "== "} {
		if !strings.Contains(log, want) {
			t.Errorf("harness.log of an invalid run lacks %q:\n%s", want, log)
		}
	}
	if strings.Contains(stderr.String(), "last lines") {
		t.Error("the servers' last lines went to stderr too")
	}
	page, err := os.ReadFile(filepath.Join(out.Dir, reports.IndexFile))
	if err != nil || !bytes.Contains(page, []byte(`href="`+reports.LogFile+`"`)) {
		t.Errorf("index.html does not link the log (%v)", err)
	}
}

// Every length of time in a run's configuration reads in seconds on its
// report: the report knows it by its JSON key.
func TestReportKnowsTheConfigDurations(t *testing.T) {
	durType := reflect.TypeOf(time.Duration(0))
	var walk func(reflect.Type, string)
	walk = func(ty reflect.Type, path string) {
		for i := 0; i < ty.NumField(); i++ {
			f := ty.Field(i)
			if !f.IsExported() {
				continue
			}
			key, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if key == "-" {
				continue
			}
			if key == "" {
				key = f.Name
			}
			ft := f.Type
			for ft.Kind() == reflect.Slice || ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			switch {
			case ft == durType && !reports.IsDurationKey(key):
				t.Errorf("%s.%s is a time.Duration the report would show in nanoseconds: add %q to reports' durationKeys", path, f.Name, key)
			case ft.Kind() == reflect.Struct && ft.PkgPath() != "time":
				walk(ft, path+"."+f.Name)
			}
		}
	}
	walk(reflect.TypeOf(run.Config{}), "Config")
}
