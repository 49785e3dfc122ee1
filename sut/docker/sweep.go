package docker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/lockharness/lockharness/sut/local"
)

// Sweep removes the containers and networks that harness processes on this
// host left behind when they were killed (SIGKILL runs no cleanup), and
// returns how many containers it removed. Resources of a process that still
// runs (another run, a parallel test) are left alone. Up calls it first,
// so a killed run's containers are gone by the next start.
func Sweep(ctx context.Context) (int, error) {
	dc, err := newClient(ctx)
	if err != nil {
		return 0, err
	}
	defer dc.Close()
	return sweep(ctx, dc.Client, func(pid int) bool { return pid != os.Getpid() && local.ProcessGone(pid) })
}

// sweep removes resources labelled with this host whose LabelPID satisfies
// dead.
func sweep(ctx context.Context, dc *client.Client, dead func(pid int) bool) (int, error) {
	f := make(client.Filters).Add("label", LabelHost+"="+hostname())
	ctrs, err := dc.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return 0, fmt.Errorf("sweep: list containers: %w", err)
	}
	var errs []error
	n := 0
	for _, c := range ctrs.Items {
		if !deadLabel(c.Labels, dead) {
			continue
		}
		if _, err := dc.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err != nil && !isNotFound(err) {
			errs = append(errs, fmt.Errorf("sweep: remove container %.12s: %w", c.ID, err))
			continue
		}
		n++
	}
	nets, err := dc.NetworkList(ctx, client.NetworkListOptions{Filters: f})
	if err != nil {
		return n, errors.Join(append(errs, fmt.Errorf("sweep: list networks: %w", err))...)
	}
	for _, nw := range nets.Items {
		if !deadLabel(nw.Labels, dead) {
			continue
		}
		if _, err := dc.NetworkRemove(ctx, nw.ID, client.NetworkRemoveOptions{}); err != nil && !isNotFound(err) {
			errs = append(errs, fmt.Errorf("sweep: remove network %s: %w", nw.Name, err))
		}
	}
	return n, errors.Join(errs...)
}

// removeRun removes every container and then every network labelled with
// run (LabelRun): whatever the engine made for it, whether or not the
// harness heard the answer. A create whose answer was lost (the request
// cancelled by Ctrl-C, the connection cut) is done by the engine all the
// same, and its container, in state Created, is known to nobody else.
func removeRun(ctx context.Context, dc *client.Client, run string) error {
	f := make(client.Filters).Add("label", LabelRun+"="+run)
	ctrs, err := dc.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return fmt.Errorf("list the containers of run %s: %w", run, err)
	}
	var errs []error
	for _, c := range ctrs.Items {
		if _, err := dc.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err != nil && !isNotFound(err) {
			errs = append(errs, fmt.Errorf("remove container %s (%.12s): %w", c.Labels[LabelNode], c.ID, err))
		}
	}
	nets, err := dc.NetworkList(ctx, client.NetworkListOptions{Filters: f})
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("list the networks of run %s: %w", run, err))...)
	}
	for _, nw := range nets.Items {
		if _, err := dc.NetworkRemove(ctx, nw.ID, client.NetworkRemoveOptions{}); err != nil && !isNotFound(err) {
			errs = append(errs, fmt.Errorf("remove network %s: %w", nw.Name, err))
		}
	}
	return errors.Join(errs...)
}

func deadLabel(labels map[string]string, dead func(int) bool) bool {
	pid, err := strconv.Atoi(labels[LabelPID])
	return err == nil && pid > 0 && dead(pid)
}

// isNotFound reports an engine error about a resource that is already gone
// (removed concurrently, or by the engine itself).
func isNotFound(err error) bool {
	return cerrdefs.IsNotFound(err)
}
