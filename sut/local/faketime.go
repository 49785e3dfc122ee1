package local

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// glibcMallocSource routes the malloc family to glibc's allocator. Debian's
// redis-server links the system jemalloc; libfaketime's lazy initialisation
// allocates while jemalloc holds its init lock inside clock_gettime, and the
// server deadlocks at start-up. Preloading this shim before libfaketime
// avoids it (see shim/glibcmalloc.c).
//
//go:embed shim/glibcmalloc.c
var glibcMallocSource []byte

// ShimSource is the malloc shim's C source, for an image build that runs
// outside a checkout (`harness image build`).
func ShimSource() []byte { return append([]byte(nil), glibcMallocSource...) }

// FaketimeHint says how to get what clock faults need.
const FaketimeHint = "install them with `apt-get install -y libfaketime gcc`"

// libfaketimePaths are where Debian and Ubuntu put libfaketime.so.1
// (`dpkg -L libfaketime`).
var libfaketimePaths = []string{
	"/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
	"/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1",
	"/usr/lib/faketime/libfaketime.so.1",
	"/usr/local/lib/faketime/libfaketime.so.1",
}

// Libfaketime returns the path of libfaketime.so.1 (LIBFAKETIME overrides
// the search), or an error wrapping ErrMissingBinary that says how to
// install it.
func Libfaketime() (string, error) {
	paths := libfaketimePaths
	if p := os.Getenv("LIBFAKETIME"); p != "" {
		paths = []string{p}
	}
	for _, p := range paths {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: libfaketime.so.1 not found (looked in %v); clock faults need it: %s", ErrMissingBinary, paths, FaketimeHint)
}

// BuildMallocShim compiles the malloc shim (see glibcMallocSource) and
// returns the path of the shared object (see buildShim).
func BuildMallocShim(fallback string) (string, error) {
	return buildShim("glibcmalloc", glibcMallocSource, "the malloc shim libfaketime needs with Debian's redis-server: "+FaketimeHint, fallback)
}

// buildShim compiles a preloadable C shim named name with gcc into a cache
// directory (under os.UserCacheDir, or fallback when that is unavailable),
// keyed by a hash of its source so a changed shim is rebuilt, and returns
// the path of the shared object. why says what needs it, for the error
// when gcc is missing. Concurrent builds are safe: each writes a temporary
// file and renames it into place.
func buildShim(name string, source []byte, why, fallback string) (string, error) {
	sum := sha256.Sum256(source)
	key := hex.EncodeToString(sum[:8])
	base, err := os.UserCacheDir()
	if err != nil || base == "" {
		base = fallback
	}
	dir := filepath.Join(base, "lockharness", "shim-"+key)
	so := filepath.Join(dir, name+".so")
	if _, err := os.Stat(so); err == nil {
		return so, nil
	}
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		return "", fmt.Errorf("%w: gcc not found on PATH; it builds %s", ErrMissingBinary, why)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("build %s shim: %w", name, err)
	}
	src := filepath.Join(dir, name+".c")
	if err := os.WriteFile(src, source, 0o644); err != nil {
		return "", fmt.Errorf("build %s shim: %w", name, err)
	}
	tmp, err := os.CreateTemp(dir, name+"-*.so")
	if err != nil {
		return "", fmt.Errorf("build %s shim: %w", name, err)
	}
	_ = tmp.Close()
	defer os.Remove(tmp.Name())
	out, err := exec.Command(gcc, "-shared", "-fPIC", "-O2", "-o", tmp.Name(), src, "-ldl").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("build %s shim with gcc: %w: %s", name, err, out)
	}
	if err := os.Rename(tmp.Name(), so); err != nil && !errors.Is(err, os.ErrExist) {
		return "", fmt.Errorf("build %s shim: %w", name, err)
	}
	return so, nil
}

// FaketimeEnv is the environment that runs a server under libfaketime
// reading its offset and rate from clockFile, with preload (the malloc
// shim a redis-server needs first, then libfaketime itself) in
// LD_PRELOAD. FAKETIME_NO_CACHE makes a change visible at once (with the
// cache a jump takes ≈1.7 s to be seen); FAKETIME_DONT_FAKE_MONOTONIC
// keeps the server's timers on real time, without which a backward jump
// stops Redis's housekeeping.
func FaketimeEnv(clockFile string, preload ...string) []string {
	return []string{
		"LD_PRELOAD=" + strings.Join(preload, ":"),
		"FAKETIME_TIMESTAMP_FILE=" + clockFile,
		"FAKETIME_NO_CACHE=1",
		"FAKETIME_DONT_FAKE_MONOTONIC=1",
	}
}
