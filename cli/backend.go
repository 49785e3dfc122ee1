package cli

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/sut/docker"
	"github.com/lockharness/lockharness/sut/systems"
)

// Backends a run can test.
const (
	backendLocal  = "local"
	backendDocker = "docker"
)

// backendFlags choose where the system under test runs.
type backendFlags struct {
	backend string
	image   string
	target  string
}

func addBackendFlags(f *pflag.FlagSet, b *backendFlags) {
	f.StringVar(&b.backend, "backend", backendLocal, "where the Redis nodes run: local (redis-server processes) or docker (containers, see --image)")
	f.StringVar(&b.image, "image", "", "with --backend docker: the Redis image of every node (default "+docker.DefaultImage+", built by make image; harness image inspect NAME says which faults it supports)")
	f.StringVar(&b.target, "target", "", "run against a deployment the harness did not start, described by this file (addresses, roles, optional containers; see compose/*.target.yml)")
}

// resolve turns the flags into the run's backend (nil: local processes),
// refusing contradictions before anything starts.
func (b backendFlags) resolve() (sut.Backend, error) {
	switch b.backend {
	case backendLocal, backendDocker:
	default:
		return nil, fmt.Errorf("unknown --backend %q: use local or docker", b.backend)
	}
	if b.image != "" && b.backend != backendDocker {
		return nil, fmt.Errorf("--image %s needs --backend docker", b.image)
	}
	if b.target != "" {
		if b.backend != backendLocal {
			return nil, fmt.Errorf("--target runs against a deployment that is already running: leave out --backend %s", b.backend)
		}
		return redisBackend(systems.Target, b.target)
	}
	if b.backend == backendDocker {
		return redisBackend(systems.Docker, b.image)
	}
	return nil, nil
}

// redisBackend is Redis's backend called name (sut/systems), made from arg.
func redisBackend(name, arg string) (sut.Backend, error) {
	redis, err := systems.Builtin().Lookup(systems.Redis)
	if err != nil {
		return nil, err
	}
	return redis.Backend(name, arg)
}
