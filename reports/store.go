package reports

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// LatestLink is the name of the symlink in a store that points at the
// newest run.
const LatestLink = "latest"

var safeName = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

// CheckName refuses a name that cannot be one directory of a store: a
// test's, a run's or a matrix's. It is one path element of letters,
// digits, '.', '_' and '-', and neither hidden (serve lists no dot
// directory, and "." and ".." leave the store) nor the latest link, which
// a directory of that name would be written through. Every name a store
// path is built from passes here first, whether it came from a flag or a
// file (a shard's matrix.json, a run's results).
func CheckName(kind, name string) error {
	switch {
	case !safeName.MatchString(name):
		return fmt.Errorf("%s name %q: use letters, digits, '.', '_' and '-'", kind, name)
	case strings.HasPrefix(name, "."):
		return fmt.Errorf("%s name %q: a name may not start with '.' (hidden, or outside the store)", kind, name)
	case name == LatestLink:
		return fmt.Errorf("%s name %q is reserved for the link to the newest run: choose another", kind, name)
	}
	return nil
}

// NewRunDir creates store/<test>/<timestamp>/ for a new run. It does not
// touch store/latest: that is pointed at a run only when its report is
// complete (PointLatest), so latest never shows a run without index.html.
// The timestamp has millisecond resolution; a clash (two runs in the same
// millisecond) gets a numeric suffix.
func NewRunDir(store, test string, t time.Time) (string, error) {
	if err := CheckName("test", test); err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Join(store, test), 0o755); err != nil {
		return "", fmt.Errorf("store %s is not writable: %w (choose another with --store)", store, err)
	}
	stamp := t.UTC().Format("20060102T150405.000Z")
	dir := filepath.Join(store, test, stamp)
	for i := 1; ; i++ {
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			break
		}
		if !errors.Is(err, os.ErrExist) {
			return "", fmt.Errorf("create run directory: %w", err)
		}
		dir = filepath.Join(store, test, fmt.Sprintf("%s-%d", stamp, i))
	}
	return dir, nil
}

// PointLatest atomically replaces store/latest with a relative symlink to
// dir (a new link under a temporary name, renamed over the old one). Call
// it once dir's index.html is written.
func PointLatest(store, dir string) error {
	rel, err := filepath.Rel(store, dir)
	if err != nil {
		return fmt.Errorf("link latest run: %w", err)
	}
	tmp := filepath.Join(store, fmt.Sprintf(".latest-%d", os.Getpid()))
	_ = os.Remove(tmp)
	if err := os.Symlink(rel, tmp); err != nil {
		return fmt.Errorf("link latest run: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(store, LatestLink)); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("link latest run: %w", err)
	}
	return nil
}

// DiscardRunDir removes a run directory that holds nothing worth keeping (a
// run whose setup failed) and points store/latest back at the newest
// complete run that remains (one with index.html), or removes the link when
// none does.
func DiscardRunDir(store, dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove run directory: %w", err)
	}
	_ = os.Remove(filepath.Dir(dir)) // the test's directory, if that was its only run
	runs, _ := filepath.Glob(filepath.Join(store, "*", "*"))
	newest, newestAt := "", time.Time{}
	for _, r := range runs {
		st, err := os.Lstat(r)
		if err != nil || !st.IsDir() || filepath.Base(filepath.Dir(r)) == LatestLink {
			continue
		}
		if _, err := os.Stat(filepath.Join(r, IndexFile)); err != nil {
			continue // in progress, or killed before its report
		}
		if st.ModTime().After(newestAt) {
			newest, newestAt = r, st.ModTime()
		}
	}
	if newest == "" {
		if err := os.Remove(filepath.Join(store, LatestLink)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("unlink latest run: %w", err)
		}
		return nil
	}
	return PointLatest(store, newest)
}
