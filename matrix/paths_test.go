package matrix

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockharness/lockharness/reports"
)

// Every path the harness builds from data stays under its root, whatever
// the data says: '..', an absolute path, a separator, a hidden name or the
// latest link as a name, and a symbolic link planted where a file is
// written. This test walks the places of the store not walked elsewhere:
// a run's directory (reports.NewRunDir, from a test name), a matrix's
// outputs (WriteOutputs, from its name) and every file written into a
// directory through a temporary file (results, the cell marker,
// matrix.json, JUnit, the summary, the heat map, the --junit copy). The
// others have their own: a shard's run directories in
// TestMergeRefusesPathsOutsideTheShard, the report's figures and page in
// reports' TestAtomicWritesStayInTheirDirectory, and serve's request paths
// in serve's TestRefusesPathsOutsideTheStore.
func TestPathsFromDataStayUnderTheirRoot(t *testing.T) {
	hostile := []string{"..", "../x", "../../etc", "/etc", "/tmp/x", "a/b", "a/../..", ".hidden", ".", "", "latest", "x\x00y"}
	t.Run("run and matrix directories", func(t *testing.T) {
		base := t.TempDir()
		store := filepath.Join(base, "store")
		if err := os.Mkdir(store, 0o755); err != nil {
			t.Fatal(err)
		}
		before := treeOf(t, base)
		m := testMatrix(t)
		for _, name := range hostile {
			if dir, err := reports.NewRunDir(store, name, time.Now()); err == nil {
				t.Errorf("run directory of test %q made: %s", name, dir)
			}
			m.Spec.Name = name
			if dir, err := WriteOutputs(store, m); err == nil {
				t.Errorf("outputs of matrix %q written to %s", name, dir)
			}
		}
		if after := treeOf(t, base); !slices.Equal(before, after) {
			t.Errorf("refused names changed the tree:\nbefore %v\nafter  %v", before, after)
		}
	})
	t.Run("symbolic links at temporary names", func(t *testing.T) {
		base := t.TempDir()
		store, outside := filepath.Join(base, "store"), filepath.Join(base, "outside")
		m := testMatrix(t)
		run := filepath.Join(store, "t", "run")
		dir := filepath.Join(store, m.Spec.Name)
		for _, d := range []string{run, dir, outside} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		secret := filepath.Join(outside, "secret")
		if err := os.WriteFile(secret, []byte("secret"), 0o600); err != nil {
			t.Fatal(err)
		}
		// The temporary names the writers used: a link there was written
		// through.
		plant := func(dir string, names ...string) {
			for _, n := range names {
				for _, tmp := range []string{"." + n + ".tmp", "." + n + ".tmp" + filepath.Ext(n)} {
					if err := os.Symlink(secret, filepath.Join(dir, tmp)); err != nil && !os.IsExist(err) {
						t.Fatal(err)
					}
				}
			}
		}
		plant(run, reports.ResultsFile, CellMarker)
		plant(dir, JSONFile, JUnitFile, SummaryFile, HeatmapPNG, HeatmapSVG)
		plant(base, "junit-copy.xml")
		if err := reports.WriteJSON(run, reports.ResultsFile, reports.Results{}); err != nil {
			t.Fatal(err)
		}
		if err := MarkDone(run, m.Cells[0].Cell); err != nil {
			t.Fatal(err)
		}
		if _, err := WriteOutputs(store, m); err != nil {
			t.Fatal(err)
		}
		if err := WriteFileAtomic(filepath.Join(base, "junit-copy.xml"), []byte("<x/>")); err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(secret); err != nil || string(b) != "secret" {
			t.Errorf("a file outside the store was written through a link: %q, %v", b, err)
		}
		for _, f := range []string{filepath.Join(run, reports.ResultsFile), filepath.Join(run, CellMarker), filepath.Join(dir, JSONFile),
			filepath.Join(dir, JUnitFile), filepath.Join(dir, SummaryFile), filepath.Join(dir, HeatmapPNG), filepath.Join(dir, HeatmapSVG),
			filepath.Join(base, "junit-copy.xml")} {
			if st, err := os.Lstat(f); err != nil || !st.Mode().IsRegular() || st.Mode().Perm() != 0o644 {
				t.Errorf("%s: %v: want a regular file of mode 0644", f, modeOf(st, err))
			}
		}
		for _, p := range treeOf(t, base) {
			if strings.HasSuffix(p, ".tmp") && !isLink(p) {
				t.Errorf("a temporary file was left: %s", p)
			}
		}
	})
}

func modeOf(st os.FileInfo, err error) any {
	if err != nil {
		return err
	}
	return st.Mode()
}

func isLink(p string) bool {
	st, err := os.Lstat(p)
	return err == nil && st.Mode()&os.ModeSymlink != 0
}
