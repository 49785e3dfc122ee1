package main

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// goEnv is `go env NAME`.
func goEnv(t *testing.T, name string) string {
	t.Helper()
	out, err := exec.Command("go", "env", name).Output()
	if err != nil {
		t.Fatalf("go env %s: %v", name, err)
	}
	return strings.TrimSpace(string(out))
}

// copyCheckout copies this module's files (tracked and untracked, not
// ignored: what a commit of the working tree would hold) to a fresh git
// repository and commits them there, so that the build stamps a revision
// whatever the caller's checkout is (Go stamps nothing in a git worktree,
// whose .git is a file) and the test sees the code as it is now.
func copyCheckout(t *testing.T, root string) (dir, rev string) {
	t.Helper()
	list, err := exec.Command("git", "-C", root, "ls-files", "-z", "-co", "--exclude-standard").Output()
	if err != nil {
		t.Skipf("git ls-files: %v (not a git checkout)", err)
	}
	dir = stableDir(t, root)
	for _, f := range strings.Split(strings.TrimRight(string(list), "\x00"), "\x00") {
		b, err := os.ReadFile(filepath.Join(root, f))
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted, not yet committed
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git(t, dir, "init", "-q")
	git(t, dir, "add", "-A")
	git(t, dir, "-c", "user.name=test", "-c", "user.email=test@example.invalid", "commit", "-q", "-m", "copy")
	return dir, git(t, dir, "rev-parse", "HEAD")
}

// stableDir is an empty directory whose path is the same each time the
// test runs from the checkout at root, and which is removed after the
// test. Go's build cache keys a package built without -trimpath by its
// directory: from a new temporary directory each time, go install
// compiled the module's 30 packages anew on every run (a minute on two
// cores), where at a stable path it compiles only what changed since the
// last run, as a user's repeated go install does. A lock file beside it
// keeps two runs from the same checkout (two go test processes) apart.
func stableDir(t *testing.T, root string) string {
	t.Helper()
	sum := sha256.Sum256([]byte(root))
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("lockharness-install-test-%x", sum[:6]))
	lock, err := os.OpenFile(dir+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		lock.Close()
		t.Fatalf("lock %s: %v", lock.Name(), err)
	}
	t.Cleanup(func() {
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("remove %s: %v", dir, err)
		}
		lock.Close() // and so unlocked
	})
	// A run killed before its cleanup leaves its copy: start afresh.
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// git runs git in dir and returns its trimmed output.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// goInstall runs `go install ./cmd/harness` in dir into an empty GOBIN
// with an empty GOPATH, and returns what the installed binary's version
// and --version print (they must agree).
func goInstall(t *testing.T, dir, modcache string) string {
	t.Helper()
	gobin, gopath := t.TempDir(), t.TempDir()
	cmd := exec.Command("go", "install", "./cmd/harness")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOBIN="+gobin, "GOPATH="+gopath, "GOMODCACHE="+modcache,
		"GOFLAGS=-mod=mod", "GOPROXY=off", "GOTOOLCHAIN=local")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go install ./cmd/harness: %v\n%s", err, out)
	}
	bin := filepath.Join(gobin, "harness")
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatalf("%s version: %v", bin, err)
	}
	flag, err := exec.Command(bin, "--version").Output()
	if err != nil || string(flag) != string(out) {
		t.Errorf("harness --version: %q (%v), want what harness version says, %q", flag, err, out)
	}
	return string(out)
}

// The README's install line, `go install …/cmd/harness@latest`, as far as
// it can run without the network: `go install ./cmd/harness` of this
// module (copied into a fresh git repository) into an empty GOBIN, with an
// empty GOPATH and GOFLAGS=-mod=mod (so neither a vendor directory nor the
// caller's GOFLAGS, which may say -buildvcs=false, shape the build; no
// -trimpath, so that the dependencies come from the build cache the test
// build filled: with it, a cold CI machine compiled every dependency twice,
// minutes more). The
// module cache is the machine's and GOPROXY=off: every module go.sum pins
// must already be in it, which `go mod download` ensures. The installed
// binary names the checkout's revision, and "dirty" once a file changed
// after the commit.
func TestGoInstall(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: go install builds the whole harness (a minute or two on two cores)")
	}
	modcache, root := goEnv(t, "GOMODCACHE"), filepath.Dir(goEnv(t, "GOMOD"))
	dir, rev := copyCheckout(t, root)
	// Go stamps a pseudo-version from the commit (v0.0.0-time-rev12,
	// "+dirty" with edits) where a build outside git says "(devel)".
	pseudo := "harness v0.0.0-"
	stamp := "-" + rev[:12]
	revision := "(github.com/lockharness/lockharness, revision " + rev + " of "
	line := goInstall(t, dir, modcache)
	if !strings.HasPrefix(line, pseudo) || !strings.Contains(line, stamp+" "+revision) || strings.Contains(line, "dirty") {
		t.Errorf("installed from a clean checkout, harness version says %q, want %q…%q and not dirty", line, pseudo, stamp+" "+revision)
	}
	f, err := os.OpenFile(filepath.Join(dir, "README.md"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteString("\nan edit after the commit\n")
	if err := errors.Join(err, f.Close()); err != nil {
		t.Fatal(err)
	}
	line = goInstall(t, dir, modcache)
	if !strings.HasPrefix(line, pseudo) || !strings.Contains(line, stamp+"+dirty "+revision) || !strings.Contains(line, ", dirty, ") {
		t.Errorf("installed from an edited checkout, harness version says %q, want %q…%q and dirty", line, pseudo, stamp+"+dirty "+revision)
	}
}
