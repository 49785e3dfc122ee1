// Package adapter runs lock clients written in any language as the locks
// under test: one adapter process per client, speaking the lock-client
// protocol (docs/protocol.md) as JSON lines over its stdin and stdout. Its
// Lock implements locks.Lock, Renewer, Closer and Process, so a workload
// drives it, and faults it, as it does an in-process lock: the adapter
// dials the client's own links, a client pause stops its process group,
// a crash kills it.
package adapter

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/sut"
)

// Spec describes one adapter: what it is and how to start it.
type Spec struct {
	// Name is the lock's name in the registry and in runs.
	Name string
	// Language, Library and Version say what the adapter tests ("python",
	// "redis-py", "4.3.4"), as `harness locks` lists it.
	Language, Library, Version string
	// Command is the program and its arguments. With Files, it runs in
	// the directory the files are written to (a relative program path is
	// one of the files).
	Command []string
	// System is the system the library locks on (locks.SystemRedis, …);
	// empty means Redis.
	System string
	// Description says in words what the lock is.
	Description string
	// Files, when set, is the adapter's program: it is written into the
	// run's directory (adapters/<Name>/), so the run records the exact
	// adapter it tested, and started from there.
	Files fs.FS
	// Env is added to the adapter's environment (KEY=VALUE).
	Env []string
	// Unavailable, when set, says why the adapter cannot run here (its
	// interpreter or library is missing, and how to install it): it is
	// listed, but a run of it fails with this.
	Unavailable string
	// MinNodes and MaxNodes bound the nodes the library uses (default 1
	// and 1).
	MinNodes, MaxNodes int
	// Fenced is true when the library's grants carry a fencing token.
	Fenced bool
	// KeyPrefix is sent to the adapter with init: a prefix its library
	// puts before the workload's keys (empty: keys as given).
	KeyPrefix string
	// StartTimeout bounds the start and the answer to init (default 60s:
	// a JVM starting Curator takes about 1s of CPU, and 20s at a load of
	// 37 on two cores, measured 2026-11-27; a start that hangs is still
	// caught, it only waits longer to say so).
	StartTimeout time.Duration
	// RequestTimeout bounds a request whose context has no deadline, and
	// is added to an acquire's wait (default 10s).
	RequestTimeout time.Duration
}

// withDefaults fills in unset fields.
func (s Spec) withDefaults() Spec {
	if s.MinNodes == 0 {
		s.MinNodes = 1
	}
	if s.MaxNodes == 0 {
		s.MaxNodes = 1
	}
	if s.StartTimeout == 0 {
		s.StartTimeout = 60 * time.Second
	}
	if s.RequestTimeout == 0 {
		s.RequestTimeout = 10 * time.Second
	}
	return s
}

// Info is the registry entry of the adapter spec describes; its Factory
// starts one adapter process per client.
func Info(spec Spec) locks.Info {
	spec = spec.withDefaults()
	return locks.Info{
		Name: spec.Name, Description: describe(spec), System: spec.System,
		MinNodes: spec.MinNodes, MaxNodes: spec.MaxNodes, Fenced: spec.Fenced,
		New: Factory(spec),
	}
}

// describe is the line `harness locks` shows for spec.
func describe(spec Spec) string {
	var what []string
	for _, s := range []string{spec.Language, strings.TrimSpace(spec.Library + " " + spec.Version)} {
		if s != "" {
			what = append(what, s)
		}
	}
	d := "adapter"
	if len(what) > 0 {
		d = "adapter (" + strings.Join(what, ", ") + ")"
	}
	if spec.Description != "" {
		d += ": " + spec.Description
	}
	if spec.Unavailable != "" {
		d += " [cannot run here: " + spec.Unavailable + "]"
	}
	return d
}

// Factory returns the factory of spec's lock: each call starts an adapter
// process for one client and initializes it over the client's nodes. A
// spec with Files writes them into Options.Dir/adapters/<Name>/ once.
func Factory(spec Spec) locks.Factory {
	spec = spec.withDefaults()
	f := &factory{spec: spec, written: map[string]bool{}}
	return f.new
}

type factory struct {
	spec    Spec
	mu      sync.Mutex
	written map[string]bool // program directories already written
}

func (f *factory) new(nodes []sut.ClientNode, opts locks.Options) (locks.Lock, error) {
	spec := f.spec
	if spec.Unavailable != "" {
		return nil, fmt.Errorf("adapter %s cannot run here: %s", spec.Name, spec.Unavailable)
	}
	opts = opts.WithDefaults()
	dir, tmp, err := runDir(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("adapter %s: %w", spec.Name, err)
	}
	l, err := f.start(spec, dir, nodes, opts)
	if err != nil {
		if tmp {
			_ = os.RemoveAll(dir)
		}
		return nil, err
	}
	if tmp {
		l.tmpDir = dir
	}
	if l.about.Renew {
		return &renewingLock{l}, nil
	}
	return l, nil
}

// runDir is the directory an adapter writes into: dir, or a new temporary
// one (tmp) when dir is empty.
func runDir(dir string) (string, bool, error) {
	if dir != "" {
		return dir, false, nil
	}
	d, err := os.MkdirTemp("", "lockharness-adapter-")
	return d, true, err
}

// start writes the program if needed and starts one client's adapter.
func (f *factory) start(spec Spec, dir string, nodes []sut.ClientNode, opts locks.Options) (*Lock, error) {
	base := filepath.Join(dir, "adapters")
	if err := os.MkdirAll(base, 0o755); err != nil {
		return nil, fmt.Errorf("adapter %s: %w", spec.Name, err)
	}
	workDir := ""
	if spec.Files != nil {
		workDir = filepath.Join(base, safeName(spec.Name))
		if err := f.writeOnce(spec, workDir); err != nil {
			return nil, err
		}
	}
	logPath := filepath.Join(base, fmt.Sprintf("%s-c%d.log", safeName(spec.Name), opts.Client))
	return open(spec, workDir, logPath, nodes, opts)
}

// writeOnce writes spec.Files into dir the first time a client needs it.
func (f *factory) writeOnce(spec Spec, dir string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.written[dir] {
		return nil
	}
	if err := writeFiles(spec.Files, dir); err != nil {
		return fmt.Errorf("adapter %s: writing its program into %s: %w", spec.Name, dir, err)
	}
	f.written[dir] = true
	return nil
}

// writeFiles copies fsys into dir (created), keeping every path under it.
func writeFiles(fsys fs.FS, dir string) error {
	return fs.WalkDir(fsys, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !fs.ValidPath(path) {
			return fmt.Errorf("path %q leaves the adapter's directory", path)
		}
		dst := filepath.Join(dir, filepath.FromSlash(path))
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := fs.ReadFile(fsys, path)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o755)
	})
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// safeName makes a name a single path element.
func safeName(name string) string {
	s := unsafeChars.ReplaceAllString(name, "_")
	if s == "" || s == "." || s == ".." {
		return "adapter"
	}
	return s
}
