package matrix

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	lockrun "github.com/lockharness/lockharness/run"
)

// twoBackends is testSpec on local processes and on Docker.
func twoBackends() Spec {
	s := testSpec()
	s.Backends = []string{DefaultBackend, DockerBackend}
	s.Image = "lockharness/redis:test"
	return s
}

func TestCellsRunOnEveryBackend(t *testing.T) {
	s := twoBackends()
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	cells := s.Cells()
	if len(cells) != 2*len(testSpec().Cells()) {
		t.Fatalf("%d cells, want twice the one-backend matrix's %d", len(cells), len(testSpec().Cells()))
	}
	byBackend := map[string]int{}
	names := map[string]bool{}
	for _, c := range cells {
		byBackend[c.Backend]++
		if names[c.TestName()] {
			t.Errorf("two cells share the store name %s", c.TestName())
		}
		names[c.TestName()] = true
	}
	if byBackend[DefaultBackend] != 18 || byBackend[DockerBackend] != 18 {
		t.Errorf("cells per backend %v", byBackend)
	}
	d := Cell{Backend: DockerBackend, Lock: "token", Nemeses: []string{"kill"}, Seed: 1}
	l := Cell{Backend: DefaultBackend, Lock: "token", Nemeses: []string{"kill"}, Seed: 1}
	if d.ID() != "docker/token/kill/seed-1" || l.ID() != "token/kill/seed-1" {
		t.Errorf("IDs %s, %s", d.ID(), l.ID())
	}
	if d.TestName() != "matrix.docker.token.kill.seed-1" || l.TestName() != "matrix.token.kill.seed-1" {
		t.Errorf("store names %s, %s", d.TestName(), l.TestName())
	}
	if got := s.Reproduce(d); !strings.HasSuffix(got, " --backend docker --image lockharness/redis:test") {
		t.Errorf("docker cell reproduces with %q", got)
	}
	if got := s.Reproduce(l); strings.Contains(got, "--backend") || strings.Contains(got, "--image") {
		t.Errorf("local cell reproduces with %q", got)
	}
	sc := Cell{Backend: DockerBackend, Lock: "redlock", Scenario: "redlock-clock-jump", Repeat: 2}
	if got := s.Reproduce(sc); got != "harness scenario run redlock-clock-jump --backend docker --image lockharness/redis:test" {
		t.Errorf("docker scenario cell reproduces with %q", got)
	}
	if got := s.RunConfig(d, "store").Command; got != s.Reproduce(d) {
		t.Errorf("the run records %q", got)
	}
	// Scenario cells run on every backend too.
	s.Scenarios, s.Repeat = []ScenarioRef{{Name: "token-pause", Lock: "token"}}, 2
	var scen []string
	for _, c := range s.Cells() {
		if c.Scenario != "" {
			scen = append(scen, c.ID())
		}
	}
	want := []string{"docker/scenario/token-pause/run-1", "docker/scenario/token-pause/run-2",
		"scenario/token-pause/run-1", "scenario/token-pause/run-2"}
	if !slices.Equal(scen, want) {
		t.Errorf("scenario cells %v, want %v", scen, want)
	}
	// A rule can single out a backend.
	e, err := ParseExpectations([]byte("rules:\n  - backend: docker\n    lock: token\n    expect: invalid\n  - lock: token\n    expect: valid\n"))
	if err != nil {
		t.Fatal(err)
	}
	if e.For(d).Expect != ExpectInvalid || e.For(l).Expect != ExpectValid {
		t.Errorf("backend rule: docker %q, local %q", e.For(d).Expect, e.For(l).Expect)
	}
}

func TestBackendsAreValidated(t *testing.T) {
	for _, c := range []struct {
		backends []string
		image    string
		want     string
	}{
		{[]string{"local", "local"}, "", "named twice"},
		{[]string{"Docker"}, "", "not a backend name"},
		{[]string{"docker/x"}, "", "not a backend name"},
		{[]string{""}, "", "not a backend name"},
		{[]string{"local"}, "redis:7", "add docker to --backends"},
	} {
		s := testSpec()
		s.Backends, s.Image = c.backends, c.image
		if err := s.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("backends %q image %q: %v, want %q", c.backends, c.image, err, c.want)
		}
	}
	// A backend the runner was not given stops the matrix before it runs
	// anything: a configuration error.
	var ue *lockrun.UsageError
	if _, err := (Options{}).backend(Cell{Backend: DockerBackend}); !errors.As(err, &ue) {
		t.Errorf("docker cell without a docker backend: %v", err)
	}
	if b, err := (Options{}).backend(Cell{Backend: DefaultBackend}); b != nil || err != nil {
		t.Errorf("local cell: %v, %v", b, err)
	}
	// Run refuses it before the first cell, local ones included.
	store := t.TempDir()
	if _, err := Run(context.Background(), twoBackends(), Shard{}, Options{Store: store}); !errors.As(err, &ue) || !strings.Contains(err.Error(), `backend "docker"`) {
		t.Errorf("Run without a docker backend: %v", err)
	}
	if entries, _ := os.ReadDir(store); len(entries) != 0 {
		t.Errorf("Run without a docker backend left %d entries in the store", len(entries))
	}
}

func TestShardsSplitEveryBackend(t *testing.T) {
	cells := twoBackends().Cells()
	for _, n := range []int{2, 3, 5} {
		seen := map[string]int{}
		for i := 1; i <= n; i++ {
			part := Shard{i, n}.Select(cells)
			backends := map[string]bool{}
			for _, c := range part {
				seen[c.ID()]++
				backends[c.Backend] = true
			}
			if len(backends) != 2 {
				t.Errorf("shard %d/%d holds the cells of %d backend(s): the slow backend's cells pile up on some runners", i, n, len(backends))
			}
		}
		if len(seen) != len(cells) {
			t.Errorf("%d shards cover %d of %d cells", n, len(seen), len(cells))
		}
		for id, k := range seen {
			if k != 1 {
				t.Errorf("%d shards: %s in %d shards", n, id, k)
			}
		}
	}
}

func TestTwoBackendShardsMerge(t *testing.T) {
	s := twoBackends()
	e, err := ParseExpectations([]byte(testRules))
	if err != nil {
		t.Fatal(err)
	}
	s.Expect = e
	whole := Build(s, Shard{}, fakeResults(s))
	var dirs []string
	for i := 1; i <= 2; i++ {
		sh := Shard{i, 2}
		var part []CellResult
		for _, c := range sh.Select(s.Cells()) {
			for _, r := range whole.Cells {
				if r.ID() == c.ID() {
					part = append(part, r)
				}
			}
		}
		store := filepath.Join(t.TempDir(), fmt.Sprintf("shard-%d", i))
		writeStore(t, store, Build(s, sh, part))
		dirs = append(dirs, store)
	}
	merged, err := Merge(filepath.Join(t.TempDir(), "merged"), "matrix", dirs, nil)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := whole.Canonical()
	b, _ := merged.Canonical()
	if !bytes.Equal(a, b) {
		t.Errorf("merged two-backend matrix differs from the whole:\n%s\n---\n%s", a, b)
	}
	if merged.Tally.Cells != 36 || merged.Tally.NotRun != 0 {
		t.Errorf("merged tally %+v", merged.Tally)
	}
	// The same locks, nemeses and seeds on local alone are another matrix,
	// and so is the same matrix on another image.
	local := s
	local.Backends, local.Image = []string{DefaultBackend}, ""
	localStore := filepath.Join(t.TempDir(), "local")
	writeStore(t, localStore, Build(local, Shard{}, fakeResults(local)))
	if _, err := Merge(filepath.Join(t.TempDir(), "m2"), "matrix", []string{dirs[0], localStore}, nil); err == nil || !strings.Contains(err.Error(), "backends local,docker ≠ local") {
		t.Errorf("merging a two-backend shard with a local matrix: %v", err)
	}
	other := s
	other.Image = "redis:7"
	otherStore := filepath.Join(t.TempDir(), "other")
	writeStore(t, otherStore, Build(other, Shard{}, fakeResults(other)))
	if _, err := Merge(filepath.Join(t.TempDir(), "m3"), "matrix", []string{dirs[0], otherStore}, nil); err == nil || !strings.Contains(err.Error(), "docker image") {
		t.Errorf("merging shards of two images: %v", err)
	}
	// The order the backends were named in does not make another matrix.
	swapped := s
	swapped.Backends = []string{DockerBackend, DefaultBackend}
	if err := sameMatrix(s, swapped); err != nil {
		t.Errorf("--backends docker,local vs local,docker: %v", err)
	}
}

// A matrix.json from before --backends (one "backend") reads as a local
// matrix of today, and merges with one.
func TestOldMatrixJSONStillReads(t *testing.T) {
	m := testMatrix(t)
	dir := t.TempDir()
	if err := m.WriteJSON(dir); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, JSONFile)
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	old := bytes.Replace(b, []byte(`"backends": [
      "local"
    ],`), []byte(`"backend": "local",`), 1)
	if bytes.Equal(old, b) {
		t.Fatalf("matrix.json has no backends list to replace:\n%s", b)
	}
	if err := os.WriteFile(file, old, 0o644); err != nil {
		t.Fatal(err)
	}
	back, err := ReadJSON(file)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(back.Spec.Backends, []string{DefaultBackend}) || back.Spec.Backend != "" {
		t.Errorf("old spec read as backends %q, backend %q", back.Spec.Backends, back.Spec.Backend)
	}
	if err := sameMatrix(back.Spec, m.Spec); err != nil {
		t.Errorf("old and new matrix.json of one matrix: %v", err)
	}
}

func TestGridRowsPerBackend(t *testing.T) {
	s := twoBackends()
	m := Build(s, Shard{}, fakeResults(s))
	g := NewGrid(m)
	want := []string{"redlock (docker)", "redlock (local)", "set-nx-ex (docker)", "set-nx-ex (local)", "token (docker)", "token (local)"}
	if !slices.Equal(g.Rows, want) {
		t.Errorf("rows %q, want %q", g.Rows, want)
	}
	if gc := g.Cells[2][0]; gc.Cells != 3 || gc.Verdicts() != "× × ×" {
		t.Errorf("set-nx-ex (docker) × clock+kill: %+v", gc)
	}
	var md strings.Builder
	if err := WriteMarkdown(&md, m); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"on local and docker", "| token (docker) |", "| token (local) |"} {
		if !strings.Contains(md.String(), w) {
			t.Errorf("summary lacks %q:\n%s", w, md.String())
		}
	}
	dir := t.TempDir()
	if err := WriteHeatMap(dir, m); err != nil {
		t.Fatal(err)
	}
	if svg, err := os.ReadFile(filepath.Join(dir, HeatmapSVG)); err != nil || !bytes.Contains(svg, []byte("token (docker)")) {
		t.Errorf("heatmap.svg lacks the row token (docker): %v", err)
	}
	// One backend: the rows are the locks, as before.
	if rows := NewGrid(testMatrix(t)).Rows; !slices.Equal(rows, []string{"redlock", "set-nx-ex", "token"}) {
		t.Errorf("one-backend rows %q", rows)
	}
}
