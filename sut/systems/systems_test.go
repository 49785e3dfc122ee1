package systems_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/sut/systems"
)

// Every system a built-in lock runs on is registered, Redis first, and
// the names are the locks'.
func TestBuiltinHasEveryLocksSystem(t *testing.T) {
	r := systems.Builtin()
	want := []string{locks.SystemRedis, locks.SystemEtcd, locks.SystemMariaDB, locks.SystemZooKeeper}
	if got := r.Names(); !reflect.DeepEqual(got, want) {
		t.Errorf("systems %v, want %v", got, want)
	}
	for _, info := range locks.Builtin().All() {
		if _, err := r.Lookup(info.SystemName()); err != nil {
			t.Errorf("lock %s: %v", info.Name, err)
		}
	}
}

// Redis has its docker and target backends besides its local one; the
// target backend reads its file when it is made.
func TestRedisBackends(t *testing.T) {
	redis, err := systems.Builtin().Lookup(systems.Redis)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := redis.Backend(systems.Docker, ""); err != nil || b == nil {
		t.Errorf("docker: %v", err)
	}
	if _, err := redis.Backend(systems.Target, "no-such.target.yml"); err == nil || !strings.Contains(err.Error(), "target file no-such.target.yml") {
		t.Errorf("target without a file: %v", err)
	}
	etcd, err := systems.Builtin().Lookup(systems.Etcd)
	if err != nil {
		t.Fatal(err)
	}
	var ue *sut.UnknownError
	if _, err := etcd.Backend(systems.Docker, ""); !errors.As(err, &ue) {
		t.Errorf("etcd in docker: %v", err)
	}
}

// What only Redis judges of a config: a Redis Cluster's shape, before the
// generic rules.
func TestRedisValidatesItsCluster(t *testing.T) {
	redis, err := systems.Builtin().Lookup(systems.Redis)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		cfg  sut.Config
		want string
	}{
		{sut.Config{Topology: sut.RedisCluster, Masters: 2}, "at least 3 masters"},
		{sut.Config{Topology: sut.RedisCluster, Masters: 2, Clients: -1}, "at least 3 masters"},
		{sut.Config{Topology: sut.RedisCluster, Failover: sut.FailoverManual}, "fails over by itself"},
		{sut.Config{Topology: sut.Independent, Masters: 3}, "shape a Redis Cluster"},
		{sut.Config{Topology: sut.RedisCluster}, ""},
	} {
		err := redis.Check(tc.cfg.WithDefaults())
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: %v, want %q", tc.cfg, err, tc.want)
		}
	}
}
