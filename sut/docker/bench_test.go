package docker_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/sut/docker"
	"github.com/lockharness/lockharness/sut/docker/dockertest"
)

// BenchmarkUp is the time to bring each topology up on Docker until it is
// ready (every node answers; replicated: replicas in sync and every
// sentinel knows them), and to take it down, reported apart:
// `go test -run ^$ -bench Up -benchtime 3x ./sut/docker/`.
func BenchmarkUp(b *testing.B) {
	dockertest.Require(b)
	for _, bc := range []struct {
		name string
		cfg  docker.Config
	}{
		{"independent-5", docker.Config{Nodes: 5, Clients: 2}},
		{"master-2-replicas-3-sentinels", docker.Config{Topology: sut.Replicated, Replicas: 2, Sentinels: 3, Clients: 2}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var up, down time.Duration
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				d, err := docker.Up(context.Background(), bc.cfg)
				if err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				if err := d.Down(); err != nil {
					b.Fatal(err)
				}
				up, down = up+t1.Sub(t0), down+time.Since(t1)
			}
			b.ReportMetric(up.Seconds()/float64(b.N), "s-up/op")
			b.ReportMetric(down.Seconds()/float64(b.N), "s-down/op")
		})
	}
}
