package target_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/sut/redis/redistest"
	"github.com/lockharness/lockharness/sut/target"
)

// A target is opened only when its servers are what the file says (issue
// 22 row 12: a replicated target whose replica was in fact a master was
// accepted, and the run said VALID). Real redis-server and redis-sentinel
// processes: a master with a replica and three sentinels, and two
// independent masters.
func TestOpenVerifiesRoles(t *testing.T) {
	ctx := context.Background()
	// Sentinel's down-after of 30 s: on a loaded machine its default of 1 s
	// may fail the master over by itself, and this test needs the roles
	// to stay as they started.
	rep := redistest.Up(t, sut.Config{Topology: sut.Replicated, Replicas: 1, SentinelDownAfter: 30 * time.Second})
	ind := redistest.Up(t, sut.Config{Nodes: 2})
	// The nodes at the address Sentinel knows them by (the harness's
	// "sentinels->nI" proxy, which each node announces), as a target file
	// names them.
	addr := func(name string) string {
		l, err := rep.Network().Link(sut.SentinelsFrom, name)
		if err != nil {
			t.Fatal(err)
		}
		return l.Addr()
	}
	var sentinels []target.NodeSpec
	for _, s := range rep.Sentinels {
		sentinels = append(sentinels, target.NodeSpec{Name: s.Name, Addr: s.Addr()})
	}
	replicated := func(master, replica string) target.File {
		return target.File{Topology: sut.Replicated, Flush: true, Storage: rep.StorageAddr(), Sentinels: sentinels,
			Nodes: []target.NodeSpec{{Name: "n1", Addr: addr("n1"), Role: master}, {Name: "n2", Addr: addr("n2"), Role: replica}}}
	}
	good := replicated("master", "replica")
	d, err := target.Open(ctx, good, 1)
	if err != nil {
		t.Fatalf("the true roles: %v", err)
	}
	if err := d.Down(); err != nil {
		t.Fatal(err)
	}

	wrongName := good
	wrongName.MasterName = "othermaster"
	noSentinels := func(f target.File) target.File { f.Sentinels = nil; return f }
	indNodes := []target.NodeSpec{{Name: "n1", Addr: ind.Nodes[0].Addr(), Role: "master"}, {Name: "n2", Addr: ind.Nodes[1].Addr(), Role: "replica"}}
	for _, c := range []struct {
		name string
		f    target.File
		want string
	}{
		{"roles swapped", replicated("replica", "master"), "node n1 at " + addr("n1") + " reports role:master in INFO replication, and the target file makes it a replica"},
		{"roles swapped, no sentinels", noSentinels(replicated("replica", "master")), "reports role:master"},
		{"a replica that is a master", target.File{Topology: sut.Replicated, Flush: true, Storage: ind.StorageAddr(), Nodes: indNodes},
			"node n2 at " + ind.Nodes[1].Addr() + " reports role:master in INFO replication, and the target file makes it a replica"},
		{"an independent node that is a replica", target.File{Flush: true, Storage: rep.StorageAddr(), Nodes: []target.NodeSpec{{Name: "n1", Addr: addr("n2")}}},
			"reports role:slave in INFO replication, and the target file makes it a master (every node of an independent target is one)"},
		{"sentinels that know no such master", wrongName, `the sentinels cannot name the master "othermaster"`},
	} {
		d, err := target.Open(ctx, c.f, 1)
		if err == nil {
			_ = d.Down()
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}
