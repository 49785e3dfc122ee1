package scenarios

import (
	"context"
	"errors"
	"os"
	"slices"
	"testing"

	"github.com/lockharness/lockharness/cluster/docker"
	"github.com/lockharness/lockharness/cluster/docker/dockertest"
	"github.com/lockharness/lockharness/deploy"
)

// dockerScenarios are the scenarios `go test` runs on the Docker backend,
// one for each fault a container undergoes differently from a process:
// docker kill and start without and with persistence, a clock jump through
// libfaketime inside the container, a Sentinel failover and a manual one
// over the proxies on the network's gateway. The whole catalogue (about
// four minutes more) runs with LOCKHARNESS_DOCKER_CATALOGUE=all, or with
// `harness scenario run --all --backend docker`.
var dockerScenarios = []string{"redlock-crash-restart", "redlock-aof-always", "redlock-clock-jump", "sentinel-split-brain", "failover-lost-lock"}

// The catalogue on containers gives the verdicts it gives on processes.
func TestCatalogueOnDocker(t *testing.T) {
	dockertest.Require(t)
	all := os.Getenv("LOCKHARNESS_DOCKER_CATALOGUE") == "all"
	store := t.TempDir()
	for _, s := range Catalogue() {
		if !all && !slices.Contains(dockerScenarios, s.Name) {
			continue
		}
		t.Run(s.Name, func(t *testing.T) {
			o, err := Run(context.Background(), s, Options{Store: store, Backend: docker.Backend("")})
			if errors.Is(err, deploy.ErrUnsupported) {
				t.Skipf("cannot run on Docker: %v", err)
			}
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			t.Logf("%.1fs, observed %s", o.Elapsed.Seconds(), o.ObservedString())
			if !o.Pass() {
				for _, u := range o.Result.Vacuous {
					t.Logf("  exposure not reached: %s", u)
				}
				for _, v := range o.Result.Violations {
					t.Logf("  %s: %s", v.Checker, v.Description)
				}
				t.Errorf("observed %s, expected %s (history in %s)", o.ObservedString(), s.Expect, o.Dir)
			}
		})
	}
}
