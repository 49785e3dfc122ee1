package mariadb_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/sut/mariadb"
	"github.com/lockharness/lockharness/sut/mariadb/mariadbtest"
)

// BenchmarkUp measures the start-up of the MariaDB deployment with one
// client's link: from nothing to the server answering the locks' query
// (the template data directory copied, mariadbd started) and the storage
// node up, then Down. The template is built before the timer starts (once
// per machine: mariadb-install-db takes seconds). The s/up metric is the
// start-up alone.
func BenchmarkUp(b *testing.B) {
	mariadbtest.Require(b)
	warm, err := mariadb.Up(context.Background(), sut.Config{})
	if err != nil {
		b.Fatal(err)
	}
	if err := warm.Down(); err != nil {
		b.Fatal(err)
	}
	var up time.Duration
	for b.Loop() {
		start := time.Now()
		c, err := mariadb.Up(context.Background(), sut.Config{Clients: 1})
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
