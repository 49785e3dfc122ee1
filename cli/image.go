package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/lockharness/lockharness/sut/docker"
)

func newImageCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "image",
		Short: "the Redis image of the Docker backend: what it holds for the faults",
		Long: `The Docker backend runs every node from one image. The default,
` + docker.DefaultImage + `, is built offline from Debian's packages by
` + "`make image`" + ` or ` + "`harness image build`" + ` (scripts/image.sh, about 40 s). Any Redis image works for
pause, kill, network disconnect and the proxy faults; clock faults need
libfaketime and the malloc shim in it, the native partition (nemesis
native-partition) iptables in it unless the harness runs as root with nsenter
and iptables on the host, the replicated topology redis-sentinel.`,
	}
	cmd.AddCommand(newImageInspectCmd(), newImageBuildCmd())
	return cmd
}

func newImageInspectCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "inspect [NAME]",
		Short:   "say which faults an image supports (default: " + docker.DefaultImage + ")",
		Example: "  harness image inspect\n  harness image inspect redis:7.4",
		Args:    cobra.MaximumNArgs(1),
		RunE:    inspectImage,
	}
}

// inspectImage prints which faults the image named (or the default one)
// supports, and why not where it does not.
func inspectImage(cmd *cobra.Command, args []string) error {
	name := docker.DefaultImage
	if len(args) == 1 {
		name = args[0]
	}
	ctx := cmd.Context()
	if err := docker.Available(ctx); err != nil {
		return &codeError{exitError, err}
	}
	im, err := docker.InspectImage(ctx, name)
	if err != nil {
		if errors.Is(err, docker.ErrNoImage) {
			return &codeError{exitError, err}
		}
		return err
	}
	w := cmd.OutOrStdout()
	fmt.Fprintf(w, "%s\n", im.Name)
	fmt.Fprintf(w, "  %-28s %s\n", "pause, kill, disconnect", "yes (Docker itself)")
	fmt.Fprintf(w, "  %-28s %s\n", "partition, latency (proxy)", "yes (the harness's proxies)")
	for _, c := range []struct {
		what string
		err  error
	}{
		{"clock faults", im.Require(docker.NeedFaketime)},
		{"native partition (iptables)", docker.CanPartitionNodes(im)},
		{"replicated (Sentinel)", im.Require(docker.NeedSentinel)},
	} {
		if c.err != nil {
			fmt.Fprintf(w, "  %-28s no: %v\n", c.what, c.err)
		} else {
			fmt.Fprintf(w, "  %-28s yes\n", c.what)
		}
	}
	return nil
}

func newImageBuildCmd() *cobra.Command {
	var name string
	var force bool
	build := &cobra.Command{
		Use:   "build",
		Short: "build the Redis image from Debian's packages, no registry needed (what `make image` does)",
		Long: `Builds the Docker backend's image the way ` + "`make image`" + ` does, with the same
script (scripts/image.sh, embedded in this binary): a minimal Debian root made by
debootstrap from the Debian mirror, Debian's redis-server and redis-sentinel,
libfaketime with the malloc shim, iptables; then docker import. Needs a Docker
engine, root, debootstrap and gcc; an image that exists is kept unless --force.
About 30 s on an idle machine, a few minutes under load.`,
		Example: "  harness image build\n  harness image build --name lockharness/redis:test --force",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			err := docker.BuildImage(cmd.Context(), docker.BuildOptions{Name: name, Force: force,
				Stdout: cmd.OutOrStdout(), Stderr: cmd.ErrOrStderr()})
			if err != nil {
				return &codeError{exitError, err}
			}
			return nil
		},
	}
	build.Flags().StringVar(&name, "name", docker.DefaultImage, "the image's name")
	build.Flags().BoolVar(&force, "force", false, "rebuild the image when it exists")
	return build
}
