// Package systems is the one place that lists every system under test and
// its backends: a new system is one folder under sut/ (its Backend) and
// one line in Builtin.
package systems

import (
	"context"

	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/sut/docker"
	"github.com/lockharness/lockharness/sut/etcd"
	"github.com/lockharness/lockharness/sut/mariadb"
	redisbackend "github.com/lockharness/lockharness/sut/redis"
	"github.com/lockharness/lockharness/sut/rediscluster"
	"github.com/lockharness/lockharness/sut/target"
	"github.com/lockharness/lockharness/sut/zookeeper"
)

// Names of the built-in systems, as the locks name them (locks.Info.System).
const (
	Redis     = "redis"
	Etcd      = "etcd"
	MariaDB   = "mariadb"
	ZooKeeper = "zookeeper"
)

// Names of Redis's backends besides its local one.
const (
	// Docker runs the nodes as containers of an image (the argument,
	// docker.DefaultImage when empty).
	Docker = "docker"
	// Target runs against a deployment the user runs, described by a
	// file (the argument).
	Target = "target"
)

// Builtin returns a new registry holding every system of this harness,
// Redis first. The systems other than Redis start their servers as local
// processes with every link a proxy, and a Redis storage node for the
// protected resource (sut.Deployment.StorageAddr).
func Builtin() *sut.Registry {
	r := sut.NewRegistry()
	for _, s := range []sut.System{
		{Name: Redis, Local: redisLocal, Validate: validateRedis,
			Backends: map[string]sut.BackendFactory{Docker: dockerBackend, Target: targetBackend}},
		{Name: Etcd, Local: etcd.Local, Aftermath: etcd.Aftermath()},
		{Name: MariaDB, Local: mariadb.Local},
		{Name: ZooKeeper, Local: zookeeper.Local, Aftermath: zookeeper.Aftermath()},
	} {
		if err := r.Register(s); err != nil {
			panic(err) // a programming error in this list, caught by its tests
		}
	}
	return r
}

// redisLocal is the local-process Backend of Redis: a Redis Cluster
// (sut/rediscluster) for the cluster topology, independent or replicated
// redis-servers (sut/redis) for the others.
func redisLocal(ctx context.Context, cfg sut.Config) (sut.Deployment, error) {
	if cfg.Topology == sut.RedisCluster {
		rc, err := rediscluster.Up(ctx, cfg)
		if err != nil {
			return nil, err
		}
		return rc, nil
	}
	c, err := redisbackend.Up(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// validateRedis judges what only Redis can: the shape of a Redis Cluster.
func validateRedis(cfg sut.Config) error {
	if cfg.Topology == sut.RedisCluster {
		return rediscluster.Validate(cfg)
	}
	return nil
}

// dockerBackend runs Redis in containers of image (docker.DefaultImage
// when empty).
func dockerBackend(image string) (sut.Backend, error) { return docker.Backend(image), nil }

// targetBackend runs against the deployment the target file at path
// describes.
func targetBackend(path string) (sut.Backend, error) {
	f, err := target.Load(path)
	if err != nil {
		return nil, err
	}
	return target.Backend(f), nil
}
