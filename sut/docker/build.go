package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/lockharness/lockharness/scripts"
	"github.com/lockharness/lockharness/sut/local"
)

// BuildOptions is what BuildImage builds and where it reports.
type BuildOptions struct {
	// Name of the image (DefaultImage when empty).
	Name string
	// Force rebuilds an image that exists; otherwise it is kept.
	Force bool
	// Stdout and Stderr receive the script's output (discarded when nil).
	Stdout, Stderr io.Writer
}

// ErrBuildPrereq is wrapped when something the build needs is missing
// from this machine (not a failure of the build itself).
var ErrBuildPrereq = errors.New("cannot build the image here")

// BuildPrereqs checks what the image build needs of this machine, before
// anything is started, and says how to get what is missing: a Docker
// engine and its CLI (docker import), root (debootstrap), debootstrap, gcc
// and the C headers (the malloc shim).
func BuildPrereqs(ctx context.Context) error {
	var missing []string
	if _, err := osexec.LookPath("docker"); err != nil {
		missing = append(missing, "docker.io (the docker command imports the image)")
	} else if err := dockerCLIEngine(ctx); err != nil {
		return fmt.Errorf("%w: %w; %s", ErrBuildPrereq, err, EngineHint)
	}
	if _, err := osexec.LookPath("debootstrap"); err != nil {
		missing = append(missing, "debootstrap (it makes the Debian root of the image)")
	}
	if _, err := osexec.LookPath("gcc"); err != nil {
		missing = append(missing, "gcc (it compiles the malloc shim)")
	}
	if _, err := os.Stat("/usr/include/dlfcn.h"); err != nil {
		missing = append(missing, "libc6-dev (the C headers of the malloc shim)")
	}
	if len(missing) > 0 {
		pkgs := make([]string, len(missing))
		for i, m := range missing {
			pkgs[i], _, _ = strings.Cut(m, " ")
		}
		return fmt.Errorf("%w: missing %s; on Debian: apt-get install -y %s", ErrBuildPrereq, strings.Join(missing, ", "), strings.Join(pkgs, " "))
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: debootstrap needs root: run it as root (or with sudo)", ErrBuildPrereq)
	}
	return nil
}

// dockerCLIEngine checks that the docker command reaches an engine: the
// build imports the image with it (testcontainers-go, which the backend
// uses, may find an engine the command does not).
func dockerCLIEngine(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	out, err := osexec.CommandContext(ctx, "docker", "version", "--format", "{{.Server.Version}}").CombinedOutput()
	if err != nil {
		return fmt.Errorf("%w: `docker version`: %s", ErrNoEngine, strings.TrimSpace(string(out)))
	}
	return nil
}

// BuildImage builds the Docker backend's image from Debian's packages,
// offline from a registry's point of view (debootstrap from the Debian
// mirror, then docker import), by running scripts/image.sh, the same
// script `make image` runs, from the copy embedded in this binary. It
// checks BuildPrereqs first. It takes 30 s to a few minutes.
func BuildImage(ctx context.Context, o BuildOptions) error {
	if err := BuildPrereqs(ctx); err != nil {
		return err
	}
	if o.Name == "" {
		o.Name = DefaultImage
	}
	dir, err := os.MkdirTemp("", "lockharness-build-*")
	if err != nil {
		return fmt.Errorf("build image: %w", err)
	}
	defer os.RemoveAll(dir)
	// The script goes to the directory's scripts/, as in a checkout: it
	// changes to its parent, which holds nothing else.
	script := filepath.Join(dir, "scripts", "image.sh")
	shim := filepath.Join(dir, "glibcmalloc.c")
	if err := os.MkdirAll(filepath.Dir(script), 0o755); err != nil {
		return fmt.Errorf("build image: %w", err)
	}
	if err := os.WriteFile(script, scripts.ImageBuild, 0o755); err != nil {
		return fmt.Errorf("build image: %w", err)
	}
	if err := os.WriteFile(shim, local.ShimSource(), 0o644); err != nil {
		return fmt.Errorf("build image: %w", err)
	}
	cmd := osexec.CommandContext(ctx, "bash", script, o.Name)
	cmd.Env = append(os.Environ(), "SHIM_SRC="+shim, "FORCE=")
	if o.Force {
		cmd.Env = append(cmd.Env, "FORCE=1")
	}
	cmd.Stdout, cmd.Stderr = o.Stdout, o.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("build image %s: scripts/image.sh: %w", o.Name, err)
	}
	return nil
}
