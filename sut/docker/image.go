package docker

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
	"github.com/testcontainers/testcontainers-go/wait"
)

// DefaultImage is the image `make image` (scripts/image.sh) builds from
// Debian's packages: redis-server, redis-sentinel, libfaketime with the
// malloc shim, iptables.
const DefaultImage = "lockharness/redis:bookworm"

// ImageHint says how to get the default image.
const ImageHint = "build it with `make image` (scripts/image.sh: Debian's Redis with libfaketime and iptables, no registry needed), or name an image you have with --image"

// ErrNoImage is wrapped when the image is not present in the engine.
var ErrNoImage = errors.New("image not found")

// shimLabel names the malloc shim's path in an image built by
// scripts/image.sh.
const shimLabel = "org.lockharness.shim"

// defaultShim is where scripts/image.sh puts the malloc shim.
const defaultShim = "/usr/local/lib/lockharness/glibcmalloc.so"

// libfaketimePaths are where Debian-based images keep libfaketime.
var libfaketimePaths = []string{
	"/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
	"/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1",
	"/usr/lib/faketime/libfaketime.so.1",
}

// Image is what an image holds that the faults need. Pause, kill and
// restart, network disconnect and every toxiproxy fault need nothing from
// it; the others do.
type Image struct {
	Name string
	// Shell: the image has /bin/sh (the probe could look inside).
	Shell bool
	// Sentinel: redis-sentinel is on PATH (the replicated topology).
	Sentinel bool
	// Libfaketime and Shim are the paths of libfaketime.so.1 and of the
	// malloc shim Debian's jemalloc-linked Redis needs under it; both
	// empty when missing. Clock faults need both.
	Libfaketime, Shim string
	// Iptables: iptables is on PATH (partitions from inside the
	// container's network namespace).
	Iptables bool
}

// Capabilities a fault may need from the image.
const (
	NeedFaketime = "faketime"
	NeedIptables = "iptables"
	NeedSentinel = "sentinel"
)

// Require returns an error naming what the image lacks for need and how to
// get an image that has it; nil when it has it.
func (im Image) Require(need string) error {
	var missing string
	switch need {
	case NeedFaketime:
		switch {
		case im.Libfaketime == "":
			missing = "libfaketime (clock faults run the server under it)"
		case im.Shim == "":
			missing = "the malloc shim libfaketime needs with Debian's jemalloc Redis (" + defaultShim + ")"
		}
	case NeedIptables:
		if !im.Iptables {
			missing = "iptables (the iptables partition runs it in the container)"
		}
	case NeedSentinel:
		if !im.Sentinel {
			missing = "redis-sentinel (the replicated topology's failover)"
		}
	default:
		return fmt.Errorf("unknown image capability %q", need)
	}
	if missing == "" {
		return nil
	}
	if !im.Shell {
		missing += "; it has no /bin/sh, so nothing in it could be checked"
	}
	return fmt.Errorf("image %s lacks %s: use the default image (%s; `make image` builds it) or one that has it", im.Name, missing, DefaultImage)
}

// InspectImage checks that the image is present (a missing one fails with
// ErrNoImage and how to build it; nothing is pulled unless the engine has a
// registry and the name is not local) and looks inside it, in a throwaway
// container, for what the faults need. It takes about a second.
func InspectImage(ctx context.Context, name string) (Image, error) {
	dc, err := newClient(ctx)
	if err != nil {
		return Image{}, err
	}
	defer dc.Close()
	ii, err := dc.ImageInspect(ctx, name)
	if err != nil {
		if isNotFound(err) {
			return Image{}, fmt.Errorf("%w: %s is not in the Docker engine: %s", ErrNoImage, name, ImageHint)
		}
		return Image{}, fmt.Errorf("inspect image %s: %w", name, err)
	}
	shim := defaultShim
	if ii.Config != nil && ii.Config.Labels[shimLabel] != "" {
		shim = ii.Config.Labels[shimLabel]
	}
	script := fmt.Sprintf(`for f in %s %s; do [ -e "$f" ] && echo "file $f"; done; `+
		`for c in iptables redis-sentinel; do command -v "$c" >/dev/null 2>&1 && echo "cmd $c"; done; echo ok`,
		shim, strings.Join(libfaketimePaths, " "))
	out, err := runOnce(ctx, dc, name, []string{"/bin/sh", "-c", script})
	im := Image{Name: name}
	if ctx.Err() != nil {
		return im, fmt.Errorf("inspect image %s: %w", name, ctx.Err())
	}
	if err != nil {
		// No shell (a scratch image): nothing can be checked, and the
		// faults that need something inside are refused.
		return im, nil
	}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		kind, what, _ := strings.Cut(strings.TrimSpace(sc.Text()), " ")
		switch {
		case kind == "ok":
			im.Shell = true
		case kind == "file" && what == shim:
			im.Shim = what
		case kind == "file":
			if im.Libfaketime == "" {
				im.Libfaketime = what
			}
		case kind == "cmd" && what == "iptables":
			im.Iptables = true
		case kind == "cmd" && what == "redis-sentinel":
			im.Sentinel = true
		}
	}
	return im, nil
}

// runOnce runs cmd in a throwaway container of image (its entrypoint
// replaced) and returns its output. The container has a run id of its
// own, and whatever carries it is removed on the way out, through dc:
// the probe's create may have failed after the engine made it.
func runOnce(ctx context.Context, dc *testcontainers.DockerClient, image string, cmd []string) (string, error) {
	run := newRunID()
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		_ = removeRun(rctx, dc.Client, run)
	}()
	// Not cancelled half way, as a node's create (Node.create): it takes
	// about a second.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	c, err := testcontainers.GenericContainer(ctx, testcontainers.GenericContainerRequest{
		ContainerRequest: testcontainers.ContainerRequest{
			Image:          image,
			Labels:         ownLabels(run, "probe"),
			ConfigModifier: func(cfg *container.Config) { cfg.Entrypoint = cmd[:1]; cfg.Cmd = cmd[1:] },
			WaitingFor:     wait.ForExit().WithExitTimeout(20 * time.Second),
		},
		Started: true,
		Logger:  tclog.NewNoopLogger(),
	})
	if c != nil {
		defer func() { _ = testcontainers.TerminateContainer(c) }()
	}
	if err != nil {
		return "", fmt.Errorf("run %v in %s: %w", cmd, image, err)
	}
	rc, err := c.Logs(ctx)
	if err != nil {
		return "", fmt.Errorf("logs of %v in %s: %w", cmd, image, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		return "", fmt.Errorf("logs of %v in %s: %w", cmd, image, err)
	}
	return string(b), nil
}
