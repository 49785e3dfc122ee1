package lockharness

import (
	"errors"
	"strings"
	"testing"

	"github.com/lockharness/lockharness/nemesis"
	"github.com/lockharness/lockharness/sut"
)

// A Redis Cluster is chosen by --topology cluster or by the
// cluster-failover nemesis, and what cannot run on it is refused before
// anything starts, saying what to do instead.
func TestRedisClusterTopologyChoice(t *testing.T) {
	cfg := Config{Lock: "token", Nemesis: nemesis.Config{Names: []string{"cluster-failover"}}}.WithDefaults()
	if cfg.Cluster.Topology != sut.RedisCluster {
		t.Fatalf("the cluster-failover nemesis got topology %q", cfg.Cluster.Topology)
	}
	if _, nodes, err := cfg.resolve(); err != nil || nodes != 1 {
		t.Fatalf("token on a Redis Cluster: %d nodes, %v", nodes, err)
	}
	rc := sut.Config{Topology: sut.RedisCluster}
	for _, c := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"multi-node lock", Config{Lock: "redlock", Cluster: rc}, "does not run on a Redis Cluster"},
		{"two-key lock", Config{Lock: "fenced", Cluster: rc}, "token, set-nx-ex"},
		{"nodes", Config{Lock: "token", Nodes: 3, Cluster: rc}, "leave --nodes out"},
		{"single-master failover", Config{Lock: "token", Cluster: rc, Nemesis: nemesis.Config{Names: []string{"failover"}}}, "--nemesis cluster-failover"},
		{"cluster fault elsewhere", Config{Lock: "token", Cluster: sut.Config{Topology: sut.Independent},
			Nemesis: nemesis.Config{Names: []string{"cluster-failover"}}}, "--topology cluster"},
	} {
		_, _, err := c.cfg.WithDefaults().resolve()
		var ue *UsageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want a usage error saying %q", c.name, err, c.want)
		}
	}
	if err := (Config{Lock: "token", Cluster: sut.Config{Topology: sut.Independent, Masters: 3}}).WithDefaults().checkStartable(1); err == nil {
		t.Error("--masters without --topology cluster was accepted")
	}
}
