package checker

import (
	"compress/gzip"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/lockharness/lockharness/history"
)

func readFixture(t *testing.T, name string) []history.Op {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name+".jsonl.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	res, err := history.Read(zr)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res.Ops
}

// TestRealHistories checks the fixtures recorded from real runs (see
// testdata/README.md).
func TestRealHistories(t *testing.T) {
	cases := []struct {
		name     string
		verdict  Verdict
		checkers map[string]Verdict
		fatal    []string // kinds of fatal violations, sorted
		nonFatal []string
	}{
		{"token", Valid, map[string]Verdict{LockPromise: Valid, Resource: Valid, Liveness: Valid}, nil, nil},
		{"fenced", Valid, map[string]Verdict{LockPromise: Valid, Resource: Valid, Liveness: Valid}, nil, []string{KindStaleWrite}},
		{"set-nx-ex", Invalid, map[string]Verdict{LockPromise: Invalid, Resource: Invalid, Liveness: Valid},
			[]string{KindFinalCount, KindForeignRelease, KindLostUpdate, KindOverlap}, []string{KindStaleWrite}},
		{"setnx", Invalid, map[string]Verdict{LockPromise: Valid, Resource: Valid, Liveness: Invalid}, []string{KindUnavailable}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ops := readFixture(t, c.name)
			r := checkOps(ctx, ops, Config{Timeout: time.Minute})
			want(t, r, c.verdict, c.checkers)
			if got := kinds(r.Violations, true); !slices.Equal(got, c.fatal) {
				t.Errorf("fatal kinds %v, want %v", got, c.fatal)
			}
			if got := kinds(r.Violations, false); !slices.Equal(got, c.nonFatal) {
				t.Errorf("non-fatal kinds %v, want %v", got, c.nonFatal)
			}
			if c.verdict == Invalid && c.checkers[LockPromise] == Invalid && len(r.NonLinearizableKeys) == 0 {
				t.Error("porcupine did not refute the lease-mutex history")
			}
		})
	}
}
