package zookeeper_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/sut/zookeeper"
	"github.com/lockharness/lockharness/sut/zookeeper/zktest"
)

// BenchmarkUp measures the start-up of a three-server ensemble with one
// client's links: from nothing to every server serving with n1 leading
// (and the storage node up), then Down. The s/up metric is the start-up
// alone; /faketime is the same under libfaketime (clock faults).
func BenchmarkUp(b *testing.B) {
	zktest.Require(b)
	for _, ft := range []bool{false, true} {
		name := "plain"
		if ft {
			name = "faketime"
		}
		b.Run(name, func(b *testing.B) {
			var up time.Duration
			for b.Loop() {
				start := time.Now()
				c, err := zookeeper.Up(context.Background(), sut.Config{Clients: 1, Faketime: ft})
				if err != nil {
					b.Fatal(err)
				}
				up += time.Since(start)
				if err := c.Down(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(up.Seconds()/float64(b.N), "s/up")
		})
	}
}
