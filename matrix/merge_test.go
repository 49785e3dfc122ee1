package matrix

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// treeOf lists every path under dir (nil when dir does not exist).
func treeOf(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// A shard's matrix.json is data from outside: a run directory it names
// that is not one of its cell's own runs inside the shard is refused
// before anything is copied, whatever shape the escape takes (a relative
// climb, an absolute path, another cell's test, a deeper path, a symbolic
// link out of the shard), and the merged store is left as it was.
func TestMergeRefusesPathsOutsideTheShard(t *testing.T) {
	whole := testMatrix(t)
	cases := []struct {
		name string
		// edit changes the shard (its store and its first finished cell)
		// before the merge; outside is a directory next to the shard.
		edit func(t *testing.T, store, outside string, c *CellResult)
		want string
	}{
		{"climb", func(t *testing.T, store, outside string, c *CellResult) { c.Dir = "../../x" }, "not one of its own runs"},
		{"climb after the test", func(t *testing.T, store, outside string, c *CellResult) { c.Dir = c.Test + "/../../outside" }, "use letters, digits"},
		{"absolute", func(t *testing.T, store, outside string, c *CellResult) { c.Dir = outside }, "not one of its own runs"},
		{"another cell's test", func(t *testing.T, store, outside string, c *CellResult) {
			c.Dir = "matrix.other.none.seed-1/20260101T000000.000Z"
		}, "not one of its own runs"},
		{"deeper", func(t *testing.T, store, outside string, c *CellResult) { c.Dir += "/sub" }, "use letters, digits"},
		{"the latest link", func(t *testing.T, store, outside string, c *CellResult) { c.Dir = c.Test + "/latest" }, "reserved"},
		{"hidden", func(t *testing.T, store, outside string, c *CellResult) { c.Dir = c.Test + "/.x" }, "may not start with '.'"},
		{"lock name that climbs", func(t *testing.T, store, outside string, c *CellResult) {}, "use letters, digits"},
		{"run linked outside", func(t *testing.T, store, outside string, c *CellResult) {
			run := filepath.Join(store, filepath.FromSlash(c.Dir))
			if err := os.RemoveAll(run); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(outside, run); err != nil {
				t.Fatal(err)
			}
		}, "escapes"},
		{"test linked outside", func(t *testing.T, store, outside string, c *CellResult) {
			test := filepath.Join(store, c.Test)
			if err := os.Rename(test, filepath.Join(outside, c.Test)); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join(outside, c.Test), test); err != nil {
				t.Fatal(err)
			}
		}, "escapes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			store, outside, out := filepath.Join(base, "shard"), filepath.Join(base, "outside"), filepath.Join(base, "merged")
			if err := os.MkdirAll(filepath.Join(outside, "secret"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(outside, "secret", "key"), []byte("secret"), 0o600); err != nil {
				t.Fatal(err)
			}
			m := whole
			m.Cells = slices.Clone(whole.Cells)
			writeStore(t, store, m)
			if tc.name == "lock name that climbs" {
				m.Spec.Locks = append(slices.Clone(m.Spec.Locks), "../../x")
			}
			// The last finished cell: the cells before it must not be
			// copied either.
			last := len(m.Cells) - 1
			tc.edit(t, store, outside, &m.Cells[last])
			if err := m.WriteJSON(filepath.Join(store, m.Spec.Name)); err != nil {
				t.Fatal(err)
			}
			outsideBefore := treeOf(t, base)
			_, err := Merge(out, "matrix", []string{store}, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("merge: %v, want an error saying %q", err, tc.want)
			}
			if got := treeOf(t, out); len(got) > 1 {
				t.Errorf("the merged store was written: %v", got)
			}
			for _, p := range treeOf(t, base) {
				if !slices.Contains(outsideBefore, p) && !strings.HasPrefix(p, out) {
					t.Errorf("merge created %s", p)
				}
			}
		})
	}
}
