package cli

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockharness/lockharness/sut/redis/redistest"
)

// harnessBin is the harness binary built once for the tests that run it as
// a user would (signals, exit codes).
var harnessBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "harness-bin-")
	if err != nil {
		panic(err)
	}
	harnessBin = filepath.Join(dir, "harness")
	out, err := exec.Command("go", "build", "-o", harnessBin, "../cmd/harness").CombinedOutput()
	if err != nil {
		os.Stderr.Write(out)
		os.RemoveAll(dir)
		os.Exit(2)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// runCLI runs the command in-process and returns its exit code and output.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, &stdout, &stderr, Options{})
	return code, stdout.String(), stderr.String()
}

// A busy port is an error that names the port and the way out, exit 2.
func TestBusyPort(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs redis-server on PATH")
	}
	requireRedis(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	// Node n1 goes on base-port+1: make that the busy one.
	store := t.TempDir()
	code, _, stderr := runCLI(t, "run", "--lock", "token", "--base-port", strconv.Itoa(port-1), "--store", store)
	if code != 2 || !strings.Contains(stderr, fmt.Sprintf("127.0.0.1:%d is in use", port)) || !strings.Contains(stderr, "--base-port") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	// Nothing is left in the store by a run that never started.
	if entries, _ := filepath.Glob(filepath.Join(store, "*")); len(entries) != 0 {
		t.Errorf("a failed setup left %v in the store", entries)
	}
}

func TestLocksListsEveryLock(t *testing.T) {
	code, out, _ := runCLI(t, "locks")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, name := range []string{"token", "set-nx-ex", "(etcd) the etcd lock with", "mysql-get-lock", "(mariadb) GET_LOCK"} {
		if !strings.Contains(out, name) {
			t.Errorf("locks output lacks %s:\n%s", name, out)
		}
	}
}

// serversUnder lists the PIDs of processes whose working directory is under
// dir: the redis-servers of a run whose store is dir (redis-server rewrites
// its command line, but not its cwd).
func serversUnder(t *testing.T, dir string) []int {
	t.Helper()
	var pids []int
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		cwd, err := os.Readlink(filepath.Join(p, "cwd"))
		if err != nil || !strings.HasPrefix(cwd, dir) {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(p)); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// redisServersUnder are the redis-server processes among serversUnder.
func redisServersUnder(t *testing.T, dir string) []int {
	t.Helper()
	var pids []int
	for _, pid := range serversUnder(t, dir) {
		comm, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "comm"))
		if err == nil && strings.TrimSpace(string(comm)) == "redis-server" {
			pids = append(pids, pid)
		}
	}
	return pids
}

// No process is left behind after the harness is sent SIGINT, SIGTERM or
// SIGKILL mid-run.
func TestNoProcessLeftAfterSignal(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: runs redis-server")
	}
	requireRedis(t)
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			store, tmp := t.TempDir(), t.TempDir()
			cmd, stderr := startRunning(t, tmp, "run", "--lock", "token", "--nodes", "1", "--time-limit", "60s", "--store", store, "--seed", "3")
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			err := cmd.Wait()
			code := cmd.ProcessState.ExitCode()
			if sig != syscall.SIGKILL && code != 2 {
				t.Errorf("exit code %d after %v, want 2 (err %v); stderr: %s", code, sig, err, stderr.String())
			}
			// Pdeathsig reaps children of a SIGKILLed harness asynchronously.
			deadline := time.Now().Add(5 * time.Second)
			for {
				left := serversUnder(t, tmp)
				if len(left) == 0 {
					break
				}
				if time.Now().After(deadline) {
					for _, pid := range left {
						_ = syscall.Kill(pid, syscall.SIGKILL)
					}
					t.Fatalf("after %v: %d redis-server processes left: %v", sig, len(left), left)
				}
				time.Sleep(20 * time.Millisecond)
			}
			// The record holds no node files, whatever killed the run.
			if debris, _ := filepath.Glob(filepath.Join(store, "*", "*", "*", "*")); len(debris) != 0 {
				t.Errorf("after %v the run directory holds node files: %v", sig, debris)
			}
			if sig == syscall.SIGKILL {
				// Only the next run can clean up after SIGKILL: it sweeps
				// the node directory of the dead process.
				if left, _ := filepath.Glob(filepath.Join(tmp, "lockharness-nodes-*")); len(left) != 1 {
					t.Errorf("node directories after SIGKILL: %v, want the dead run's", left)
				}
				next := exec.Command(harnessBin, "run", "--lock", "token", "--time-limit", "300ms", "--recovery", "100ms", "--store", store, "--seed", "3")
				next.Env = cmd.Env
				if out, err := next.CombinedOutput(); err != nil {
					t.Fatalf("next run: %v: %s", err, out)
				}
				if left, _ := filepath.Glob(filepath.Join(tmp, "lockharness-nodes-*")); len(left) != 0 {
					t.Errorf("the next run left node directories: %v", left)
				}
			}
			if sig != syscall.SIGKILL {
				// An interrupted run still leaves its history and verdict.
				if _, err := os.Stat(filepath.Join(store, "latest", "history.jsonl")); err != nil {
					t.Errorf("no history after %v: %v", sig, err)
				}
			}
		})
	}
}

func requireRedis(t *testing.T) { redistest.Require(t) }

// startRunning starts the harness binary and returns once its run's
// servers (lock node + storage) are up under store and the workload has
// run a little.
func startRunning(t *testing.T, tmp string, args ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(harnessBin, args...)
	// Node files go under TMPDIR, outside the store: count servers there.
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	deadline := time.Now().Add(20 * time.Second)
	// The run's redis-servers, not any process there: the stock harness
	// first asks its shipped adapters what they are, from TMPDIR too.
	for len(redisServersUnder(t, tmp)) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("servers never came up; stderr: %s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The workload has run a little once its history has a line: a fixed
	// sleep after the servers came up was not enough on a loaded machine,
	// where the signal then ended the run before its record began.
	for !historyStarted(storeArg(args)) {
		if time.Now().After(deadline) {
			t.Fatalf("no history line recorded; stderr: %s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return cmd, &stderr
}

// storeArg is the value of --store in args ("" when none).
func storeArg(args []string) string {
	for i, a := range args {
		if a == "--store" && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

// historyStarted tells whether a run under store has recorded an event: a
// non-empty history.jsonl anywhere below it (a run's, or a matrix cell's).
func historyStarted(store string) bool {
	found := false
	_ = filepath.WalkDir(store, func(path string, d fs.DirEntry, err error) error {
		if err != nil || found {
			return nil
		}
		if d.Name() == "history.jsonl" {
			if fi, err := d.Info(); err == nil && fi.Size() > 0 {
				found = true
			}
		}
		return nil
	})
	return found
}

// `harness report` re-checks a stored run from its history and draws the
// report the run drew: the same results.json, index.html, figures and
// porcupine views, byte for byte; of a valid run and of an invalid one
// whose report explains its overlap and draws porcupine's view.
func TestReportReproducesResults(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: runs redis-server")
	}
	requireRedis(t)
	t.Parallel()
	for _, c := range []struct {
		name string
		args []string
		code int // the report's: the verdict's (a scenario run exits 0 when it meets its expectation)
	}{
		{"run", []string{"run", "--lock", "token", "--clients", "3", "--time-limit", "2s", "--recovery", "500ms", "--seed", "5"}, 0},
		{"scenario", []string{"scenario", "run", "redlock-clock-jump"}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			store := t.TempDir()
			code, _, stderr := runCLI(t, append(c.args, "--store", store)...)
			if code != 0 {
				t.Fatalf("%s: exit %d: %s", c.name, code, stderr)
			}
			dir, err := filepath.EvalSymlinks(filepath.Join(store, "latest"))
			if err != nil {
				t.Fatal(err)
			}
			drawn := map[string][]byte{}
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				if drawn[e.Name()], err = os.ReadFile(filepath.Join(dir, e.Name())); err != nil {
					t.Fatal(err)
				}
			}
			if c.code == 1 && drawn["porcupine-lock-0.html"] == nil {
				t.Errorf("the run drew no porcupine view: %v", entries)
			}
			if err := os.Remove(filepath.Join(dir, "results.json")); err != nil {
				t.Fatal(err)
			}
			code, out, stderr := runCLI(t, "report", dir)
			if code != c.code {
				t.Fatalf("report: exit %d: %s %s", code, out, stderr)
			}
			for name, before := range drawn {
				after, err := os.ReadFile(filepath.Join(dir, name))
				if err != nil || !sameDrawing(name, before, after) {
					t.Errorf("%s differs after `harness report`:\nbefore %d bytes, after %d bytes (%v)", name, len(before), len(after), err)
				}
			}
		})
	}
}

// sameDrawing reports whether two drawings of the file name are the same:
// byte for byte, but for porcupine's views, whose partial linearizations
// porcupine lists in the order of a map (it varies from one drawing to the
// next, what is drawn does not): those have the same size.
func sameDrawing(name string, a, b []byte) bool {
	if strings.HasPrefix(name, "porcupine-") {
		return len(a) == len(b)
	}
	return bytes.Equal(a, b)
}

func TestServeRefusesBusyAddress(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	code, _, stderr := runCLI(t, "serve", "--store", t.TempDir(), "--addr", ln.Addr().String())
	if code != 2 || !strings.Contains(stderr, "choose another with --addr") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	code, _, stderr = runCLI(t, "serve", "--store", filepath.Join(t.TempDir(), "none"))
	if code != 2 || !strings.Contains(stderr, "store") {
		t.Fatalf("missing store: exit %d, stderr %q", code, stderr)
	}
}
