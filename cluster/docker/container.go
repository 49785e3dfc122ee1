package docker

import (
	"context"
	"fmt"

	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
)

// Container is a handle on one container for the faults Docker itself
// causes: pause, kill, start. The Docker backend's nodes use it, and so do
// the nodes of a deployment the harness did not start, where the user
// names the container.
type Container struct {
	// Name is how the container was named (or its id).
	Name string
	// ID is the container's id.
	ID string
	dc *testcontainers.DockerClient
}

// AttachContainer finds the container named name (or with that id) in the
// Docker engine. Close releases the handle; it leaves the container alone.
func AttachContainer(ctx context.Context, name string) (*Container, error) {
	dc, err := newClient(ctx)
	if err != nil {
		return nil, err
	}
	r, err := dc.ContainerInspect(ctx, name, client.ContainerInspectOptions{})
	if err != nil {
		_ = dc.Close()
		if isNotFound(err) {
			return nil, fmt.Errorf("no container %q in the Docker engine (`docker ps -a` lists them)", name)
		}
		return nil, fmt.Errorf("inspect container %s: %w", name, err)
	}
	return &Container{Name: name, ID: r.Container.ID, dc: dc}, nil
}

// Close releases the Docker client.
func (c *Container) Close() error { return c.dc.Close() }

// Pause freezes every process in the container (docker pause).
func (c *Container) Pause(ctx context.Context) error {
	if _, err := c.dc.ContainerPause(ctx, c.ID, client.ContainerPauseOptions{}); err != nil {
		return fmt.Errorf("pause container %s: %w", c.Name, err)
	}
	return nil
}

// Resume thaws it (docker unpause).
func (c *Container) Resume(ctx context.Context) error {
	if _, err := c.dc.ContainerUnpause(ctx, c.ID, client.ContainerUnpauseOptions{}); err != nil {
		return fmt.Errorf("resume container %s: %w", c.Name, err)
	}
	return nil
}

// Kill sends SIGKILL to its main process (docker kill).
func (c *Container) Kill(ctx context.Context) error {
	if _, err := c.dc.ContainerKill(ctx, c.ID, client.ContainerKillOptions{Signal: "KILL"}); err != nil {
		return fmt.Errorf("kill container %s: %w", c.Name, err)
	}
	return nil
}

// Start starts it again (docker start) with the file system it had.
func (c *Container) Start(ctx context.Context) error {
	if _, err := c.dc.ContainerStart(ctx, c.ID, client.ContainerStartOptions{}); err != nil {
		return fmt.Errorf("start container %s: %w", c.Name, err)
	}
	return nil
}
