package cli

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/lockharness/lockharness/reports"
)

// harness check reads a history file event by event (checker.Check, in windows)
// and a pipe whole, once: both give the same verdict, findings,
// explanations and exit code.
func TestCheckOfAFileIsTheCheckOfAPipe(t *testing.T) {
	for _, name := range []string{"token", "set-nx-ex"} {
		t.Run(name, func(t *testing.T) {
			path := gunzip(t, filepath.Join("..", "checker", "testdata", name+".jsonl.gz"))
			fromFile, fileCode := checkJSON(t, path, nil)
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			// An io.Reader that is not an *os.File: exec gives the
			// harness a pipe.
			fromPipe, pipeCode := checkJSON(t, "/dev/stdin", struct{ io.Reader }{f})
			if fileCode != pipeCode {
				t.Errorf("exit %d from the file, %d from a pipe", fileCode, pipeCode)
			}
			if fromFile.Verdict != fromPipe.Verdict || !reflect.DeepEqual(fromFile.Violations, fromPipe.Violations) ||
				!reflect.DeepEqual(fromFile.Why, fromPipe.Why) || !reflect.DeepEqual(fromFile.Coverage, fromPipe.Coverage) {
				t.Errorf("the file and the pipe disagree:\nfile: %s %+v\npipe: %s %+v", fromFile.Verdict, fromFile.Violations, fromPipe.Verdict, fromPipe.Violations)
			}
			t.Logf("%s: %s, %d findings, exit %d", name, fromFile.Verdict, len(fromFile.Violations), fileCode)
		})
	}
}

func gunzip(t *testing.T, gz string) string {
	t.Helper()
	f, err := os.Open(gz)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "history.jsonl")
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

func checkJSON(t *testing.T, path string, stdin io.Reader) (reports.Results, int) {
	t.Helper()
	cmd := exec.Command(harnessBin, "check", "--json", path)
	cmd.Stdin = stdin
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	var r reports.Results
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatalf("check %s: exit %d, %v: %s %s", path, code, err, stdout.String(), stderr.String())
	}
	return r, code
}
