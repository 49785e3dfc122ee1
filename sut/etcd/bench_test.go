package etcd_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/sut/etcd"
	"github.com/lockharness/lockharness/sut/etcd/etcdtest"
)

// BenchmarkUp measures the start-up of a three-member group with one
// client's links: from nothing to every member healthy with n1 leading
// (and the storage node up), then Down. The s/up metric is the start-up
// alone.
func BenchmarkUp(b *testing.B) {
	etcdtest.Require(b)
	var up time.Duration
	for b.Loop() {
		start := time.Now()
		c, err := etcd.Up(context.Background(), sut.Config{Clients: 1})
		if err != nil {
			b.Fatal(err)
		}
		up += time.Since(start)
		if err := c.Down(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(up.Seconds()/float64(b.N), "s/up")
}
