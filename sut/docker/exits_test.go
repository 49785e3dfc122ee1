package docker_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/sut/docker"
	"github.com/lockharness/lockharness/sut/docker/dockertest"
)

// A node's redis-server killed from outside the harness (here by docker
// exec) is started again by its container's loop within milliseconds:
// the watch reports the exit. The harness's own kill and start are not
// reported.
func TestWatchExitsSeesAKillFromOutside(t *testing.T) {
	dockertest.Require(t)
	d := up(t, docker.Config{Nodes: 1})
	n := d.Nodes[0]
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	exits := make(chan sut.Exit, 4)
	n.WatchExits(func(e sut.Exit) { exits <- e })
	if err := n.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case e := <-exits:
		t.Fatalf("the harness's own kill reported: %+v", e)
	case <-time.After(500 * time.Millisecond):
	}
	rc := redis.NewClient(&redis.Options{Addr: n.Addr()})
	defer rc.Close()
	pidfile, err := rc.ConfigGet(ctx, "pidfile").Result()
	if err != nil || pidfile["pidfile"] == "" {
		t.Fatalf("pidfile %v: %v", pidfile, err)
	}
	if out, err := exec.CommandContext(ctx, "docker", "exec", n.ID, "sh", "-c", "kill -9 $(cat "+pidfile["pidfile"]+")").CombinedOutput(); err != nil {
		t.Fatalf("docker exec kill: %v: %s", err, out)
	}
	select {
	case e := <-exits:
		if e.Node != "n1" || !strings.HasPrefix(e.How, "signal 9") {
			t.Fatalf("exit %+v", e)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a kill from outside was not reported")
	}
	n.WatchExits(nil)
}

// A node whose server is its container's first process (here the
// storage node) is watched through the engine's die events: the
// harness's own docker kill is not reported, a docker kill from outside
// is.
func TestWatchExitsSeesAContainerKilledFromOutside(t *testing.T) {
	dockertest.Require(t)
	d := up(t, docker.Config{Nodes: 1})
	n := d.Storage
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	exits := make(chan sut.Exit, 4)
	n.WatchExits(func(e sut.Exit) { exits <- e })
	defer n.WatchExits(nil)
	if err := n.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case e := <-exits:
		t.Fatalf("the harness's own kill reported: %+v", e)
	case <-time.After(time.Second):
	}
	if out, err := exec.CommandContext(ctx, "docker", "kill", n.ID).CombinedOutput(); err != nil {
		t.Fatalf("docker kill: %v: %s", err, out)
	}
	select {
	case e := <-exits:
		if e.Node != "storage" || !strings.Contains(e.How, "exit code 137") {
			t.Fatalf("exit %+v", e)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a docker kill from outside was not reported")
	}
}
