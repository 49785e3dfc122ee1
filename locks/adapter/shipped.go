package adapter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/lockharness/lockharness/adapters"
	"github.com/lockharness/lockharness/locks"
)

// manifest is a shipped adapter's manifest.json.
type manifest struct {
	Name        string `json:"name"`
	Language    string `json:"language"`
	Library     string `json:"library"`
	System      string `json:"system"`
	Description string `json:"description"`
	// Program is the adapter's file, run by the first of Interpreters
	// that can (a path, or a name looked up on PATH).
	Program      string   `json:"program"`
	Interpreters []string `json:"interpreters"`
	// Requires says what the interpreter must import; Install how to get
	// it.
	Requires string `json:"requires"`
	Install  string `json:"install"`
	MinNodes int    `json:"min_nodes"`
	MaxNodes int    `json:"max_nodes"`
}

// helloTimeout bounds asking a shipped adapter what it is: as long as a
// start (Spec.StartTimeout's default), since the first hello of the
// Curator adapter also compiles it, and on a loaded machine a JVM alone
// took more than 15s; an adapter wrongly called unavailable says "install"
// to a user who has.
const helloTimeout = 60 * time.Second

// RegisterShipped registers every adapter shipped in package adapters.
// Each is asked hello by the first interpreter that runs it, so the
// version listed is the library's own; one that no interpreter runs is
// still registered, saying why it cannot run and how to install what it
// needs (Spec.Unavailable).
func RegisterShipped(ctx context.Context, reg *locks.Registry) error {
	specs, err := Shipped(ctx)
	if err != nil {
		return err
	}
	for _, s := range specs {
		if err := reg.Register(Info(s)); err != nil {
			return err
		}
	}
	return nil
}

// Shipped returns the specs of the shipped adapters, sorted by folder.
func Shipped(ctx context.Context) ([]Spec, error) { return shippedIn(ctx, adapters.FS) }

// shippedIn returns the specs of the adapters in fsys, one folder each,
// asking them hello in parallel (each is an interpreter's start-up).
func shippedIn(ctx context.Context, fsys fs.FS) ([]Spec, error) {
	dirs, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, err
	}
	var folders []string
	for _, d := range dirs {
		if d.IsDir() {
			folders = append(folders, d.Name())
		}
	}
	specs := make([]Spec, len(folders))
	errs := make([]error, len(folders))
	var wg sync.WaitGroup
	for i, f := range folders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			specs[i], errs[i] = shipped(ctx, fsys, f)
		}()
	}
	wg.Wait()
	return specs, errors.Join(errs...)
}

// shipped reads folder's manifest and finds the interpreter that runs it.
func shipped(ctx context.Context, fsys fs.FS, folder string) (Spec, error) {
	sub, err := fs.Sub(fsys, folder)
	if err != nil {
		return Spec{}, err
	}
	b, err := fs.ReadFile(sub, "manifest.json")
	if err != nil {
		return Spec{}, fmt.Errorf("shipped adapter %s: %w", folder, err)
	}
	var m manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return Spec{}, fmt.Errorf("shipped adapter %s: manifest.json: %w", folder, err)
	}
	if m.Name == "" || m.Program == "" || len(m.Interpreters) == 0 {
		return Spec{}, fmt.Errorf("shipped adapter %s: manifest.json needs name, program and interpreters", folder)
	}
	spec := Spec{Name: m.Name, Language: m.Language, Library: m.Library, System: m.System,
		Description: m.Description, Files: sub, MinNodes: m.MinNodes, MaxNodes: m.MaxNodes}
	var why []string
	for _, interp := range m.Interpreters {
		path, err := exec.LookPath(interp)
		if err != nil {
			why = append(why, interp+": not found")
			continue
		}
		try := spec
		try.Command = []string{path, m.Program}
		hctx, cancel := context.WithTimeout(ctx, helloTimeout)
		about, err := Hello(hctx, try)
		cancel()
		if err != nil {
			why = append(why, fmt.Sprintf("%s: %v", describePath(interp, path), err))
			continue
		}
		return specFrom(try, about), nil
	}
	spec.Command = []string{m.Interpreters[0], m.Program}
	spec.Unavailable = fmt.Sprintf("no interpreter runs it with %s (%s); install: %s", m.Requires, strings.Join(why, "; "), m.Install)
	return spec, nil
}

// describePath names an interpreter and, when it was looked up, where.
func describePath(name, path string) string {
	if filepath.IsAbs(name) || name == path {
		return name
	}
	return name + " (" + path + ")"
}
