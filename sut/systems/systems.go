// Package systems lists every system under test and its backends.
package systems

import (
	"context"

	"github.com/lockharness/lockharness/sut"
	redisbackend "github.com/lockharness/lockharness/sut/redis"
	"github.com/lockharness/lockharness/sut/rediscluster"
)

// RedisLocal is the local-process Backend of Redis: a Redis Cluster
// (sut/rediscluster) for the cluster topology, independent or replicated
// redis-servers (sut/redis) for the others.
func RedisLocal(ctx context.Context, cfg sut.Config) (sut.Deployment, error) {
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
