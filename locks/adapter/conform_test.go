package adapter_test

import (
	"context"
	"strings"
	"testing"

	"github.com/lockharness/lockharness/locks/adapter"
)

func TestShippedAdaptersConform(t *testing.T) {
	for _, name := range []string{"minimal", "redis-py"} {
		t.Run(name, func(t *testing.T) {
			nodes := redisNodes(t)
			spec := shipped(t, name)
			rep := adapter.Conform(context.Background(), spec, adapter.ConformOptions{Nodes: nodes, Dir: t.TempDir()})
			var b strings.Builder
			rep.Write(&b)
			if !rep.OK() {
				t.Fatalf("not conformant:\n%s", b.String())
			}
			t.Logf("\n%s", b.String())
		})
	}
}
