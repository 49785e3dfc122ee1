package docker_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"

	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/sut/docker"
	"github.com/lockharness/lockharness/sut/docker/dockertest"
	redisbackend "github.com/lockharness/lockharness/sut/redis"
)

func up(t *testing.T, cfg docker.Config) *docker.Deployment {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	t0 := time.Now()
	d, err := docker.Up(ctx, cfg)
	if err != nil {
		t.Fatalf("up: %v", err)
	}
	t.Logf("up %s with %d nodes, %d sentinels in %v", cfg.WithDefaults().Topology, len(d.Nodes), len(d.Sentinels), time.Since(t0).Round(time.Millisecond))
	t.Cleanup(func() {
		t0 := time.Now()
		if err := d.Down(); err != nil {
			t.Errorf("down: %v", err)
		}
		t.Logf("down in %v", time.Since(t0).Round(time.Millisecond))
		assertNoContainers(t, d.RunID())
	})
	return d
}

// assertNoContainers fails when any container or network of run exists.
func assertNoContainers(t *testing.T, run string) {
	t.Helper()
	dc, err := testcontainers.NewDockerClientWithOpts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer dc.Close()
	f := make(client.Filters).Add("label", docker.LabelRun+"="+run)
	cs, err := dc.ContainerList(context.Background(), client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	ns, err := dc.NetworkList(context.Background(), client.NetworkListOptions{Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	if len(cs.Items) != 0 || len(ns.Items) != 0 {
		t.Errorf("run %s left %d containers and %d networks", run, len(cs.Items), len(ns.Items))
	}
}

func TestImageRequire(t *testing.T) {
	full := docker.Image{Name: "x", Shell: true, Sentinel: true, Libfaketime: "/l", Shim: "/s", Iptables: true}
	for _, need := range []string{docker.NeedFaketime, docker.NeedIptables, docker.NeedSentinel} {
		if err := full.Require(need); err != nil {
			t.Errorf("full image, %s: %v", need, err)
		}
		err := docker.Image{Name: "redis:7.4", Shell: true}.Require(need)
		if err == nil || !strings.Contains(err.Error(), "redis:7.4 lacks") || !strings.Contains(err.Error(), "make image") {
			t.Errorf("bare image, %s: got %v, want an error naming what it lacks and the fix", need, err)
		}
	}
	if err := (docker.Image{Name: "x", Libfaketime: "/l", Shell: true}).Require(docker.NeedFaketime); err == nil || !strings.Contains(err.Error(), "shim") {
		t.Errorf("libfaketime without the shim: got %v, want the shim named", err)
	}
	if err := full.Require("teleport"); err == nil {
		t.Error("an unknown capability was accepted")
	}
}

func TestDefaultImageHasEverything(t *testing.T) {
	dockertest.Require(t)
	t0 := time.Now()
	im, err := docker.InspectImage(context.Background(), docker.DefaultImage)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("inspected %s in %v: %+v", im.Name, time.Since(t0).Round(time.Millisecond), im)
	for _, need := range []string{docker.NeedFaketime, docker.NeedIptables, docker.NeedSentinel} {
		if err := im.Require(need); err != nil {
			t.Error(err)
		}
	}
	if _, err := docker.InspectImage(context.Background(), "lockharness/no-such-image:0"); !errors.Is(err, docker.ErrNoImage) || !strings.Contains(err.Error(), "make image") {
		t.Errorf("missing image: got %v, want ErrNoImage saying how to build it", err)
	}
}

// An image without libfaketime and iptables (the default one, stripped)
// is refused for clock faults and the iptables partition before anything
// starts, with the reason and the fix.
func TestImageWithoutFaketimeRefused(t *testing.T) {
	dockertest.Require(t)
	const bare = "lockharness/redis:test-bare"
	dir := t.TempDir()
	df := "FROM " + docker.DefaultImage + "\nRUN rm -rf /usr/lib/x86_64-linux-gnu/faketime /usr/sbin/iptables* /usr/sbin/xtables*\n"
	if err := os.WriteFile(dir+"/Dockerfile", []byte(df), 0o644); err != nil {
		t.Fatal(err)
	}
	build := exec.Command("docker", "build", "-q", "-t", bare, dir)
	build.Env = append(os.Environ(), "DOCKER_BUILDKIT=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("docker build: %v\n%s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("docker", "rmi", "-f", bare).Run() })
	for _, c := range []struct {
		cfg  docker.Config
		want string
	}{
		{docker.Config{Image: bare, Faketime: true}, "lacks libfaketime"},
		{docker.Config{Image: bare, NetAdmin: true}, "lacks iptables"},
	} {
		d, err := docker.Up(context.Background(), c.cfg)
		if err == nil {
			_ = d.Down()
			t.Fatalf("%+v started", c.cfg)
		}
		if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "make image") {
			t.Errorf("%+v: %v, want %q and the fix", c.cfg, err, c.want)
		}
	}
	d := up(t, docker.Config{Image: bare, Nodes: 1})
	if d.Image().Libfaketime != "" || d.Image().Iptables {
		t.Errorf("stripped image inspected as %+v", d.Image())
	}
}

// client dials node n1 through client slot 0's proxy, as a lock client
// does, with a short deadline.
func client0(t *testing.T, d *docker.Deployment, node string) *redisClient {
	t.Helper()
	addr, err := d.ClientAddr(0, node)
	if err != nil {
		t.Fatal(err)
	}
	c := redisbackend.NewRedisClient(addr, sut.ClientOptions{Timeout: 300 * time.Millisecond, PoolSize: 1})
	t.Cleanup(func() { _ = c.Close() })
	return &redisClient{c}
}

// Every fault of a node, one after the other on one deployment, each with
// its effect measured through the client's proxy.
func TestNodeFaults(t *testing.T) {
	dockertest.Require(t)
	d := up(t, docker.Config{Nodes: 1, Clients: 1, Faketime: true, NetAdmin: true, Persistence: sut.PersistAOFAlways})
	ctx := context.Background()
	n1 := d.Nodes[0]
	c := client0(t, d, "n1")
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET before any fault: %v", err)
	}

	t.Run("pause", func(t *testing.T) {
		t0 := time.Now()
		if err := n1.Pause(ctx); err != nil {
			t.Fatal(err)
		}
		took := time.Since(t0)
		err := c.Get(ctx, "k").Err()
		if !isTimeout(err) {
			t.Fatalf("GET while paused: %v, want a timeout", err)
		}
		t1 := time.Now()
		if err := n1.Resume(ctx); err != nil {
			t.Fatal(err)
		}
		t.Logf("pause took %v, resume %v; GET while paused: %v", took.Round(time.Millisecond), time.Since(t1).Round(time.Millisecond), err)
		if err := eventually(ctx, func() error { return c.Get(ctx, "k").Err() }); err != nil {
			t.Fatalf("GET after resume: %v", err)
		}
	})

	t.Run("kill and start keep the AOF and the address", func(t *testing.T) {
		t0 := time.Now()
		if err := n1.Kill(ctx); err != nil {
			t.Fatal(err)
		}
		killed := time.Since(t0)
		if err := c.Get(ctx, "k").Err(); err == nil {
			t.Fatal("GET answered by a killed node")
		}
		t1 := time.Now()
		if err := n1.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Logf("kill took %v, start until PING %v", killed.Round(time.Millisecond), time.Since(t1).Round(time.Millisecond))
		var v string
		err := eventually(ctx, func() (err error) { v, err = c.Get(ctx, "k").Result(); return err })
		if err != nil || v != "v" {
			t.Fatalf("GET after restart with appendfsync always: %q, %v; want the value back", v, err)
		}
	})

	t.Run("docker kill and start of a whole container", func(t *testing.T) {
		// The storage node is not supervised: its container is killed.
		st, err := d.Container("storage")
		if err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		if err := st.Kill(ctx); err != nil {
			t.Fatal(err)
		}
		killed := time.Since(t0)
		if up, err := st.ContainerRunning(ctx); err != nil || up {
			t.Fatalf("container running after docker kill: %v, %v", up, err)
		}
		t1 := time.Now()
		if err := st.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Logf("docker kill took %v, docker start until PING %v", killed.Round(time.Millisecond), time.Since(t1).Round(time.Millisecond))
	})

	t.Run("clock jump expires a lease", func(t *testing.T) {
		if err := c.Set(ctx, "lease", "x", time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		if err := n1.SetClock(2*time.Hour, 1); err != nil {
			t.Fatal(err)
		}
		obs, err := n1.ConfirmClock(ctx, 100*time.Millisecond, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		seen := time.Since(t0)
		var ex int64
		if err := eventually(ctx, func() (err error) {
			if ex, err = c.Exists(ctx, "lease").Result(); err == nil && ex != 0 {
				err = errors.New("lease still there")
			}
			return err
		}); err != nil {
			t.Fatalf("a 60 s lease after a +2h jump: %v", err)
		}
		t.Logf("+2h seen as %v after %v; the 60 s lease expired %v after the jump", obs.Round(time.Millisecond), seen.Round(time.Millisecond), time.Since(t0).Round(time.Millisecond))
		if err := n1.SetClock(0, 1); err != nil {
			t.Fatal(err)
		}
		if _, err := n1.ConfirmClock(ctx, 100*time.Millisecond, 5*time.Second); err != nil {
			t.Fatal(err)
		}
	})

	partition := func(t *testing.T, cut, heal func(context.Context) error) {
		t0 := time.Now()
		if err := cut(ctx); err != nil {
			t.Fatal(err)
		}
		took := time.Since(t0)
		err := c.Ping(ctx).Err()
		if err == nil {
			t.Fatal("PING answered across the partition")
		}
		t1 := time.Now()
		if err := heal(ctx); err != nil {
			t.Fatal(err)
		}
		healed := time.Since(t1)
		if err := eventually(ctx, func() error { return c.Ping(ctx).Err() }); err != nil {
			t.Fatalf("PING after heal: %v", err)
		}
		t.Logf("cut in %v (PING: %v), healed in %v, answering again %v after the heal", took.Round(time.Millisecond), err, healed.Round(time.Millisecond), time.Since(t1).Round(time.Millisecond))
	}
	t.Run("network disconnect", func(t *testing.T) { partition(t, n1.Disconnect, n1.Connect) })
	t.Run("iptables", func(t *testing.T) {
		partition(t, func(ctx context.Context) error { return n1.Isolate(ctx, false) }, n1.Unisolate)
	})
	t.Run("heal undoes everything", func(t *testing.T) {
		if err := n1.Pause(ctx); err != nil {
			t.Fatal(err)
		}
		if err := n1.Isolate(ctx, true); err == nil {
			t.Fatal("isolating a paused container worked") // exec needs a running container
		}
		if err := n1.SetClock(time.Hour, 1); err != nil {
			t.Fatal(err)
		}
		did, err := d.Heal(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("heal: %s", did)
		if err := d.Healthy(ctx); err != nil {
			t.Fatalf("healthy after heal: %v", err)
		}
		if err := eventually(ctx, func() error { return c.Ping(ctx).Err() }); err != nil {
			t.Fatalf("PING after heal: %v", err)
		}
		if _, err := n1.ConfirmClock(ctx, 100*time.Millisecond, 5*time.Second); err != nil || !n1.Clock().Real() {
			t.Fatalf("clock after heal: %v, %v", n1.Clock(), err)
		}
	})
}

// The seam: a deployment without libfaketime refuses a clock fault with the
// reason, and one with it offers it on every lock node.
func TestSeamCapabilities(t *testing.T) {
	dockertest.Require(t)
	d := up(t, docker.Config{Nodes: 2})
	err := sut.Check(d, "the clock nemesis", sut.Needs{Capabilities: []sut.Capability{sut.CanSetClock}})
	var ue *sut.UnsupportedError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "libfaketime") {
		t.Fatalf("clock without faketime: %v, want an UnsupportedError that says how", err)
	}
	if err := sut.Check(d, "the pause nemesis", sut.Needs{Capabilities: []sut.Capability{sut.CanPause, sut.CanKill, sut.CanCutLinks}}); err != nil {
		t.Fatal(err)
	}
	if err := sut.Check(d, "failover", sut.Needs{Replicated: true}); !errors.Is(err, sut.ErrUnsupported) {
		t.Fatalf("failover on independent nodes: %v", err)
	}
	if eps := d.Endpoints(0); len(eps) != 2 || !strings.HasPrefix(eps[0].Addr, "127.0.0.1:") {
		t.Fatalf("endpoints of client 0: %v", eps)
	}
	if did, err := d.Heal(context.Background()); err != nil || did != "nothing to heal" {
		t.Fatalf("heal of a healthy deployment: %q, %v", did, err)
	}
}

// Master + 2 replicas + 3 sentinels: replicas follow the master through the
// proxies on the gateway, and Sentinel promotes a replica when the master
// is paused.
func TestSentinelFailover(t *testing.T) {
	dockertest.Require(t)
	d := up(t, docker.Config{Topology: sut.Replicated, Clients: 1})
	ctx := context.Background()
	for _, n := range d.Nodes[1:] {
		l, _ := d.Link(docker.SentinelsFrom, "n1")
		if !strings.HasPrefix(l.Addr(), d.Gateway().String()+":") {
			t.Fatalf("replication link %s listens on %s, want the gateway %s", l.Name(), l.Addr(), d.Gateway())
		}
		if r, err := n.ReplicationRole(ctx); err != nil || r != "slave" {
			t.Fatalf("%s: role %q, %v", n.Name(), r, err)
		}
	}
	nodes := d.ClientNodes(0, sut.ClientOptions{Timeout: 300 * time.Millisecond})
	defer sut.CloseClientNodes(nodes)
	if len(nodes) != 1 || nodes[0].Name != redisbackend.MasterNodeName {
		t.Fatalf("client nodes of a replicated topology: %v", nodes)
	}
	if err := nodes[0].Client.Set(ctx, "k", "before", 0).Err(); err != nil {
		t.Fatalf("SET through Sentinel's master, before the failover: %v", err)
	}
	t0 := time.Now()
	if err := d.Nodes[0].Pause(ctx); err != nil {
		t.Fatal(err)
	}
	var promoted string
	err := eventuallyFor(ctx, 30*time.Second, func() error {
		for _, n := range d.Nodes[1:] {
			if r, err := n.ReplicationRole(ctx); err == nil && r == "master" {
				promoted = n.Name()
				return nil
			}
		}
		return errors.New("no replica promoted")
	})
	if err != nil {
		t.Fatalf("after pausing the master: %v", err)
	}
	t.Logf("Sentinel promoted %s %v after the master was paused (down-after 1s)", promoted, time.Since(t0).Round(time.Millisecond))
	if err := eventuallyFor(ctx, 10*time.Second, func() error {
		el, err := d.Elected(ctx)
		if err == nil && el != promoted {
			err = fmt.Errorf("sentinels name %s", el)
		}
		return err
	}); err != nil {
		t.Fatalf("elected after failover: %v, want %s", err, promoted)
	}
	t.Logf("the sentinels name %s %v after the pause", promoted, time.Since(t0).Round(time.Millisecond))
	// The failover client asks the sentinels again and reaches the new
	// master through its own link.
	if err := eventually(ctx, func() error { return nodes[0].Client.Set(ctx, "k", "after", 0).Err() }); err != nil {
		t.Fatalf("SET after the failover: %v", err)
	}
	if v, err := nodes[0].Client.Get(ctx, "k").Result(); err != nil || v != "after" {
		t.Fatalf("GET after the failover: %q, %v", v, err)
	}
	t.Logf("the client wrote to the new master %v after the pause", time.Since(t0).Round(time.Millisecond))
	l, err := d.Link("c0", promoted)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Cut(); err != nil {
		t.Fatal(err)
	}
	if err := nodes[0].Client.Set(ctx, "k", "cut", 0).Err(); err == nil {
		t.Fatalf("SET succeeded with c0->%s cut: the client bypasses its link", promoted)
	}
}

// A harness killed with SIGKILL runs no cleanup: its containers stay until
// the next start's sweep removes them.
func TestSweepAfterKill9(t *testing.T) {
	if os.Getenv("LOCKHARNESS_DOCKER_CHILD") == "1" {
		d, err := docker.Up(context.Background(), docker.Config{Nodes: 2})
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println("run", d.RunID())
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	dockertest.Require(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestSweepAfterKill9$", "-test.count=1")
	cmd.Env = append(os.Environ(), "LOCKHARNESS_DOCKER_CHILD=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	var run string
	for sc.Scan() {
		if r, ok := strings.CutPrefix(sc.Text(), "run "); ok {
			run = r
			break
		}
		if strings.HasPrefix(sc.Text(), "error") {
			break
		}
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	if run == "" {
		t.Fatal("the child started no deployment")
	}
	if n := countContainers(t, run); n != 3 {
		t.Fatalf("the killed child left %d containers, want its 3 (2 nodes, storage) before the sweep", n)
	}
	t0 := time.Now()
	n, err := docker.Sweep(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("sweep removed %d containers in %v", n, time.Since(t0).Round(time.Millisecond))
	assertNoContainers(t, run)
}

func countContainers(t *testing.T, run string) int {
	dc, err := testcontainers.NewDockerClientWithOpts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer dc.Close()
	f := make(client.Filters).Add("label", docker.LabelRun+"="+run)
	cs, err := dc.ContainerList(context.Background(), client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	return len(cs.Items)
}
