package cli

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockharness/lockharness/sut/docker"
	"github.com/lockharness/lockharness/sut/docker/dockertest"
)

// harness image build refuses, exit 2, what it cannot do here, naming the
// package to install; with everything there, an image that exists is kept
// (the build itself is `make image`'s, which CI runs).
func TestImageBuild(t *testing.T) {
	t.Run("no engine", func(t *testing.T) {
		t.Setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
		code, _, stderr := runCLI(t, "image", "build")
		if code != 2 || !(strings.Contains(stderr, "no Docker engine") || strings.Contains(stderr, "apt-get install -y docker.io")) {
			t.Fatalf("exit %d, stderr %q", code, stderr)
		}
	})
	dockerBin, err := exec.LookPath("docker")
	if err != nil || docker.Available(context.Background()) != nil {
		t.Skip("no docker command or engine here: the rest needs one")
	}
	t.Run("no debootstrap", func(t *testing.T) {
		// A PATH with docker alone: debootstrap and gcc are missing.
		dir := t.TempDir()
		if err := os.Symlink(dockerBin, filepath.Join(dir, "docker")); err != nil {
			t.Fatal(err)
		}
		t.Setenv("PATH", dir)
		code, _, stderr := runCLI(t, "image", "build", "--name", "lockharness/redis:never-built")
		if code != 2 || !strings.Contains(stderr, "apt-get install -y debootstrap gcc") {
			t.Fatalf("exit %d, stderr %q", code, stderr)
		}
	})
	t.Run("kept when it exists", func(t *testing.T) {
		dockertest.Require(t)
		if err := docker.BuildPrereqs(context.Background()); errors.Is(err, docker.ErrBuildPrereq) {
			t.Skipf("cannot build here: %v", err)
		}
		code, stdout, stderr := runCLI(t, "image", "build")
		if code != 0 || !strings.Contains(stdout, docker.DefaultImage+" exists") {
			t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
		}
	})
}
