package zookeeper_test

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/sut/zookeeper"
	"github.com/lockharness/lockharness/sut/zookeeper/zktest"
)

// The first ensemble builds the class archive from n1's classes, the JVM
// accepts it (-Xshare:on fails on an archive it cannot map), and the next
// ensemble's servers start with it.
func TestClassArchiveIsBuiltOnceAndUsed(t *testing.T) {
	zktest.Require(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	ctx := context.Background()
	java, err := exec.LookPath("java")
	if err != nil {
		t.Fatal(err)
	}
	path, err := zookeeper.ClassArchivePath(java)
	if err != nil {
		t.Fatal(err)
	}
	for round := 0; round < 2; round++ {
		c, err := zookeeper.Up(ctx, sut.Config{Clients: 1, Dir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		uses := slices.ContainsFunc(c.Servers[0].Args, func(a string) bool { return strings.HasPrefix(a, "-XX:SharedArchiveFile=") })
		if err := c.Down(); err != nil {
			t.Fatal(err)
		}
		if uses != (round == 1) {
			t.Fatalf("round %d: n1 started with the archive: %v", round, uses)
		}
		if _, err := os.Stat(path); err != nil {
			t.Fatalf("round %d: no archive: %v", round, err)
		}
	}
	out, err := exec.Command(java, "-Xshare:on", "-XX:SharedArchiveFile="+path, "-cp", zookeeper.ClassPath,
		"-version").CombinedOutput()
	if err != nil {
		t.Fatalf("java -Xshare:on with the archive: %v: %s", err, out)
	}
}
