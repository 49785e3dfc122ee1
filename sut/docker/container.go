package docker

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"sync"

	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
)

// Container is a handle on one container for the faults Docker itself
// causes: pause, kill, start. It remembers what it did (Paused, Killed),
// which is what a sut.Pauser and a sut.Killer report: the Docker
// backend's nodes use it, and so do the nodes of a deployment the harness
// did not start, where the user names the container.
type Container struct {
	// Name is how the container was named (or its id).
	Name string
	// ID is the container's id.
	ID string
	dc *testcontainers.DockerClient

	mu        sync.Mutex
	paused    bool // paused by Pause, not yet resumed
	killed    bool // killed by Kill, not yet started
	dying     int  // exits Kill caused that no watch has taken yet (plannedDie)
	cachedPID int  // see pid
}

// newContainer is a handle on the container id, through dc.
func newContainer(name, id string, dc *testcontainers.DockerClient) *Container {
	return &Container{Name: name, ID: id, dc: dc}
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
	return newContainer(name, r.Container.ID, dc), nil
}

// Close releases the Docker client.
func (c *Container) Close() error { return c.dc.Close() }

// Pause freezes every process in the container (docker pause).
func (c *Container) Pause(ctx context.Context) error {
	if _, err := c.dc.ContainerPause(ctx, c.ID, client.ContainerPauseOptions{}); err != nil {
		return fmt.Errorf("pause container %s: %w", c.Name, err)
	}
	c.set(func() { c.paused = true })
	return nil
}

// Resume thaws it (docker unpause); a container Pause did not pause is
// left alone.
func (c *Container) Resume(ctx context.Context) error {
	if !c.Paused() {
		return nil
	}
	if _, err := c.dc.ContainerUnpause(ctx, c.ID, client.ContainerUnpauseOptions{}); err != nil {
		return fmt.Errorf("resume container %s: %w", c.Name, err)
	}
	c.set(func() { c.paused = false })
	return nil
}

// Paused reports whether Pause is in effect (false on a nil handle: no
// container, nothing paused).
func (c *Container) Paused() bool {
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.paused
}

// Kill sends SIGKILL to its main process (docker kill); a paused
// container is killed too, and is no longer paused.
func (c *Container) Kill(ctx context.Context) error {
	c.set(func() { c.dying++ }) // before: the engine's die event may come before the answer
	if _, err := c.dc.ContainerKill(ctx, c.ID, client.ContainerKillOptions{Signal: "KILL"}); err != nil {
		c.set(func() { c.dying-- })
		return fmt.Errorf("kill container %s: %w", c.Name, err)
	}
	c.set(func() { c.killed, c.paused = true, false })
	return nil
}

// Start starts it again (docker start) with the file system it had; a
// container Kill did not kill is left alone.
func (c *Container) Start(ctx context.Context) error {
	if !c.Killed() {
		return nil
	}
	if _, err := c.dc.ContainerStart(ctx, c.ID, client.ContainerStartOptions{}); err != nil {
		return fmt.Errorf("start container %s: %w", c.Name, err)
	}
	c.set(func() { c.killed = false })
	return nil
}

// Killed reports whether Kill is in effect (false on a nil handle).
func (c *Container) Killed() bool {
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.killed
}

// NetExec runs a shell script in the container's network namespace from
// the host (nsenter, as root, with the host's commands): what iptables
// does there applies to the container, whatever its image holds. A
// container this handle paused is refused, as docker exec refuses it.
func (c *Container) NetExec(ctx context.Context, script string) error {
	if c.Paused() {
		return fmt.Errorf("container %s is paused: its network is not changed", c.Name)
	}
	pid, err := c.pid(ctx)
	if err != nil {
		return err
	}
	out, err := exec.CommandContext(ctx, "nsenter", "-t", strconv.Itoa(pid), "-n", "--", "/bin/sh", "-c", script).CombinedOutput()
	if err != nil {
		return fmt.Errorf("nsenter container %s: %w: %s", c.Name, err, bytes.TrimSpace(out))
	}
	return nil
}

// pid is the host's process id of the container's first process. It is
// kept while /proc says that process is still in the container's cgroup
// (asking the engine takes up to half a second on a loaded machine, and a
// partition must land on time), and asked again after a restart.
func (c *Container) pid(ctx context.Context) (int, error) {
	c.mu.Lock()
	pid := c.cachedPID
	c.mu.Unlock()
	if pid > 0 {
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid)); err == nil && bytes.Contains(b, []byte(c.ID)) {
			return pid, nil
		}
	}
	r, err := c.dc.ContainerInspect(ctx, c.ID, client.ContainerInspectOptions{})
	if err != nil {
		return 0, fmt.Errorf("inspect container %s: %w", c.Name, err)
	}
	st := r.Container.State
	if st == nil || !st.Running || st.Pid == 0 {
		return 0, fmt.Errorf("container %s is not running: its network cannot be changed", c.Name)
	}
	c.set(func() { c.cachedPID = st.Pid })
	return st.Pid, nil
}

// IPs are the container's addresses on its networks.
func (c *Container) IPs(ctx context.Context) ([]netip.Addr, error) {
	r, err := c.dc.ContainerInspect(ctx, c.ID, client.ContainerInspectOptions{})
	if err != nil {
		return nil, fmt.Errorf("inspect container %s: %w", c.Name, err)
	}
	var out []netip.Addr
	if ns := r.Container.NetworkSettings; ns != nil {
		for _, ep := range ns.Networks {
			if ep != nil && ep.IPAddress.IsValid() {
				out = append(out, ep.IPAddress)
			}
		}
	}
	return out, nil
}

// plannedDie takes one exit Kill caused, if one is pending: the die event
// a watch sees is then the harness's own.
func (c *Container) plannedDie() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dying == 0 {
		return false
	}
	c.dying--
	return true
}

func (c *Container) set(f func()) {
	c.mu.Lock()
	f()
	c.mu.Unlock()
}
