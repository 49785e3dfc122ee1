package run

import (
	"errors"
	"strings"
	"testing"

	"github.com/lockharness/lockharness/nemesis"
	"github.com/lockharness/lockharness/sut"
)

// A Redis Cluster is chosen by --topology cluster or by the
// cluster-failover nemesis, and what cannot run on it is refused before
// anything starts, saying what to do instead: each refusal names the
// field to change, and says so in its message (where the command line
// names the field by its flag).
func TestRedisClusterTopologyChoice(t *testing.T) {
	cfg := Config{Lock: "token", Nemesis: nemesis.Config{Names: []string{"cluster-failover"}}}.WithDefaults()
	if cfg.Cluster.Topology != sut.RedisCluster {
		t.Fatalf("the cluster-failover nemesis got topology %q", cfg.Cluster.Topology)
	}
	if p, err := NewPlan(cfg); err != nil || p.Nodes != 1 {
		t.Fatalf("token on a Redis Cluster: %+v, %v", p, err)
	}
	rc := sut.Config{Topology: sut.RedisCluster}
	for _, c := range []struct {
		name        string
		cfg         Config
		field, want string
	}{
		{"multi-node lock", Config{Lock: "redlock", Cluster: rc}, "Lock", "does not run on a Redis Cluster"},
		{"two-key lock", Config{Lock: "fenced", Cluster: rc}, "Lock", "token, set-nx-ex"},
		{"nodes", Config{Lock: "token", Nodes: 3, Cluster: rc}, "Nodes", "leave Nodes out"},
		{"single-master failover", Config{Lock: "token", Cluster: rc, Nemesis: nemesis.Config{Names: []string{"failover"}}}, "Nemesis.Names", "Nemesis.Names=cluster-failover"},
		{"cluster fault elsewhere", Config{Lock: "token", Cluster: sut.Config{Topology: sut.Independent},
			Nemesis: nemesis.Config{Names: []string{"cluster-failover"}}}, "Cluster.Topology", "Cluster.Topology=cluster"},
	} {
		err := c.cfg.Validate()
		var ue *UsageError
		var fe *FieldError
		if !errors.As(err, &ue) || !errors.As(err, &fe) || fe.Field != c.field || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want a usage error of field %s saying %q", c.name, err, c.field, c.want)
		}
	}
	if err := (Config{Lock: "token", Cluster: sut.Config{Topology: sut.Independent, Masters: 3}}).Validate(); err == nil {
		t.Error("--masters without --topology cluster was accepted")
	}
}
