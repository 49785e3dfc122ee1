package zookeeper_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/sut/zookeeper"
)

func TestTmpProbe(t *testing.T) {
	start := time.Now()
	c, err := zookeeper.Up(context.Background(), sut.Config{Clients: 1, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("up %v", time.Since(start))
	c.Down()
}
