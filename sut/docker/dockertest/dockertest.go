// Package dockertest holds what tests that need a Docker engine share: skip
// with the reason when no engine is reachable (as -short skips the Redis
// tests), fail with how to build it when the image is missing.
package dockertest

import (
	"context"
	"testing"

	"github.com/lockharness/lockharness/sut/docker"
)

// Require skips t under -short or when no Docker engine answers, and fails
// it when the default image is missing (`make image` builds it).
func Require(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: skipping a test that runs Docker containers")
	}
	ctx := context.Background()
	if err := docker.Available(ctx); err != nil {
		t.Skipf("skipping: %v", err)
	}
	if _, err := docker.InspectImage(ctx, docker.DefaultImage); err != nil {
		t.Fatalf("%v", err)
	}
}
