// Package docker runs Redis topologies as Docker containers, started and
// removed with testcontainers-go, on a private network with static IP
// addresses. Every link a client, a replica or a sentinel uses goes through
// the harness's own toxiproxy on the host, as with local processes; the
// faults Docker adds are its own: docker pause, docker kill and start,
// libfaketime inside the container, and partitions by network disconnect or
// by iptables in the container's network namespace.
//
// Nothing leaks: every container and network carries the labels of its run
// and of the harness process that made it; Down removes them on every exit
// path, and Sweep, called by every Up, removes what killed harnesses left.
package docker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
)

// Labels every container and network of the Docker backend carries.
const (
	// LabelRun is the run id: Down removes everything with it.
	LabelRun = "org.lockharness.run"
	// LabelPID is the harness process that made the resource; Sweep removes
	// resources whose process is gone.
	LabelPID = "org.lockharness.pid"
	// LabelHost is the host name of that process, so a sweep never judges
	// the processes of another machine sharing the engine.
	LabelHost = "org.lockharness.host"
	// LabelNode is the node's name in its topology (n1, s1, storage).
	LabelNode = "org.lockharness.node"
)

var configureOnce sync.Once

// configure sets up testcontainers-go for this process, before its first
// use (it reads its configuration once):
//   - Ryuk, its reaper, is an image pulled from a registry, which is not
//     reachable everywhere (nowhere here); the harness removes its own
//     containers by label instead (Down, Sweep);
//   - a host with a /.dockerenv file makes testcontainers-go believe it
//     runs inside a container and dial the gateway: the harness dials
//     container IPs itself, and 127.0.0.1 is right for everything else.
//
// A value the user set is kept.
func configure() {
	configureOnce.Do(func() {
		if os.Getenv("TESTCONTAINERS_RYUK_DISABLED") == "" {
			_ = os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
		}
		if os.Getenv("TESTCONTAINERS_HOST_OVERRIDE") == "" {
			_ = os.Setenv("TESTCONTAINERS_HOST_OVERRIDE", "127.0.0.1")
		}
		tclog.SetDefault(tclog.NewNoopLogger())
	})
}

// ErrNoEngine is wrapped when no Docker engine answers.
var ErrNoEngine = errors.New("no Docker engine reachable")

// EngineHint says how to get a Docker engine.
const EngineHint = "start one (Debian: `apt-get install -y docker.io && service docker start`) or point DOCKER_HOST at one"

// Available reports whether a Docker engine answers, with an error wrapping
// ErrNoEngine that says why when it does not. It takes at most a few
// seconds.
func Available(ctx context.Context) error {
	configure()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	p, err := testcontainers.NewDockerProvider(testcontainers.WithLogger(tclog.NewNoopLogger()))
	if err != nil {
		return fmt.Errorf("%w: %v; %s", ErrNoEngine, err, EngineHint)
	}
	defer p.Close()
	if err := p.Health(ctx); err != nil {
		return fmt.Errorf("%w: %v; %s", ErrNoEngine, err, EngineHint)
	}
	return nil
}

// newClient is a Docker client for what testcontainers-go has no method
// for (pause, kill, network connect, listing by label).
func newClient(ctx context.Context) (*testcontainers.DockerClient, error) {
	configure()
	c, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %v; %s", ErrNoEngine, err, EngineHint)
	}
	return c, nil
}

// hostname is this machine's name for LabelHost.
func hostname() string {
	h, err := os.Hostname()
	if err != nil {
		return "unknown"
	}
	return h
}
