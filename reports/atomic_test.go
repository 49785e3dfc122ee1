package reports

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// The report's figures and page are written through temporary files of
// their own: a symbolic link planted in a run directory under the name a
// temporary file once had (".index.html.tmp", in a run directory from
// elsewhere) is not written through to a file outside it. See matrix's
// TestPathsFromDataStayUnderTheirRoot for the other places.
func TestAtomicWritesStayInTheirDirectory(t *testing.T) {
	base := t.TempDir()
	dir, secret := filepath.Join(base, "run"), filepath.Join(base, "secret")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(secret, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{IndexFile, "timeline.png", ResultsFile} {
		if err := os.Symlink(secret, filepath.Join(dir, "."+n+".tmp")); err != nil {
			t.Fatal(err)
		}
	}
	if err := writeAtomic(filepath.Join(dir, IndexFile), bytes.NewReader([]byte("<html></html>"))); err != nil {
		t.Fatal(err)
	}
	if err := writeAtomic(filepath.Join(dir, "timeline.png"), bytes.NewReader([]byte("png"))); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(dir, ResultsFile, Results{}); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(secret); err != nil || string(b) != "secret" {
		t.Errorf("written through a link: %q, %v", b, err)
	}
	for _, n := range []string{IndexFile, "timeline.png", ResultsFile} {
		if st, err := os.Lstat(filepath.Join(dir, n)); err != nil || !st.Mode().IsRegular() || st.Mode().Perm() != 0o644 {
			t.Errorf("%s: %v, %v", n, st, err)
		}
	}
}
