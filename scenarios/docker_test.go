package scenarios

import (
	"context"
	"errors"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/nemesis"
	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/sut/docker"
	"github.com/lockharness/lockharness/sut/docker/dockertest"
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
			if info, err := locks.Builtin().Lookup(s.Lock); err == nil && info.SystemName() != locks.SystemRedis {
				t.Skipf("lock %s runs on %s, started as local processes only", s.Lock, info.SystemName())
			}
			o, err := Run(context.Background(), s, Options{Store: store, Backend: docker.Backend("")})
			if errors.Is(err, sut.ErrUnsupported) {
				t.Skipf("cannot run on Docker: %v", err)
			}
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			checkOutcome(t, s, o)
		})
	}
}

// Sentinel's split brain with the master cut off natively (iptables in the
// containers) instead of by the harness's proxy in front of it: the same
// verdict as sentinel-split-brain, so the anomaly is Sentinel's, not an
// artefact of how the partition is made. Only the partition steps change (and the cut begins earlier):
// the native partition leaves the clients' paths to n1 open, as the
// scenario's proxy cut does.
func TestSentinelSplitBrainNativePartition(t *testing.T) {
	dockertest.Require(t)
	s, err := Lookup("sentinel-split-brain")
	if err != nil {
		t.Fatal(err)
	}
	s.Name += "-native"
	script := make([]nemesis.Step, 0, len(s.Run.Script))
	replaced := 0
	for _, st := range s.Run.Script {
		if st.Nemesis == "partition" {
			st.Nemesis, st.Targets, replaced = "native-partition", []string{"n1"}, replaced+1
			st.Params = map[string]string{"pattern": nemesis.PatternIsolate}
			if st.Action == "start" {
				// iptables in six containers' namespaces takes 0.03–0.4 s
				// from the host (nsenter; docker exec, without root, up
				// to a second) where a proxy cut is instant: begin 0.3 s
				// earlier, so the cut is in force before X's grant at
				// 1.0 s. The heal stays at 6.8 s: earlier, its work would
				// compete on a loaded machine with B's acquire at 6.5 s,
				// which must be answered before X's lease ends at 7.4 s.
				st.At -= 300 * time.Millisecond
			}
		}
		script = append(script, st)
	}
	if replaced != 2 {
		t.Fatalf("sentinel-split-brain has %d partition steps, want its start and stop", replaced)
	}
	s.Run.Script = script
	store := t.TempDir()
	if d := os.Getenv("LOCKHARNESS_KEEP"); d != "" {
		store = d
	}
	o, err := Run(context.Background(), s, Options{Store: store, Backend: docker.Backend("")})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	checkOutcome(t, s, o)
}
