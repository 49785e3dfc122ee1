package target_test

import (
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/sut/target"
)

// FuzzParse feeds the target file parser arbitrary bytes. It must never
// panic, and a file it accepts is one a run can trust as written: nodes
// with names and host:port addresses used once, a known topology with the
// roles it needs, and a storage of its own.
//
// go test runs the seeds; by hand: go test -fuzz FuzzParse ./sut/target/
func FuzzParse(f *testing.F) {
	for _, name := range []string{"redlock.target.yml", "sentinel.target.yml"} {
		if b, err := os.ReadFile(filepath.Join("..", "..", "compose", name)); err == nil {
			f.Add(b)
		}
	}
	for _, s := range []string{
		"", "nodes: []\n", "nodes: [{name: n1, addr: 127.0.0.1:1}]\nstorage: 127.0.0.1:2\n",
		"nodes: [{name: n1, addr: 127.0.0.1:1}]\nstorage: 127.0.0.1:1\n",
		"topology: replicated\nnodes: [{name: n1, addr: '[::1]:1', role: master}, {name: n2, addr: 'h:2', role: replica}]\nsentinels: [{name: s1, addr: 'h:3'}]\nstorage: 'h:4'\n",
		"nodes: [{name: n1, addr: 127.0.0.1:1}]\nstorage: 127.0.0.1:2\n---\nnodes: []\n",
		"&a {nodes: *a}\n", "nodes: [{name: n1, addr: ':1'}]\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := target.Parse(data)
		if err != nil {
			return
		}
		if len(file.Nodes) == 0 || file.Storage == "" {
			t.Fatalf("accepted %+v", file)
		}
		if file.Topology != sut.Independent && file.Topology != sut.Replicated {
			t.Fatalf("accepted topology %q", file.Topology)
		}
		addrs := map[string]bool{file.Storage: true}
		for _, n := range append(append([]target.NodeSpec(nil), file.Nodes...), file.Sentinels...) {
			if n.Name == "" || addrs[n.Addr] {
				t.Fatalf("accepted node %+v (addresses %v)", n, addrs)
			}
			addrs[n.Addr] = true
			if h, _, err := net.SplitHostPort(n.Addr); err != nil || h == "" {
				t.Fatalf("accepted address %q", n.Addr)
			}
		}
	})
}
