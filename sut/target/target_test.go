package target_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/sut/docker"
	"github.com/lockharness/lockharness/sut/docker/dockertest"
	redisbackend "github.com/lockharness/lockharness/sut/redis"
	"github.com/lockharness/lockharness/sut/target"
)

func TestLoadRejectsBadFiles(t *testing.T) {
	for _, c := range []struct{ name, text, want string }{
		{"empty", "", "no nodes"},
		{"unknown field", "nodez: []\n", "field nodez not found"},
		{"bad addr", "nodes: [{name: n1, addr: nowhere}]\nstorage: 127.0.0.1:1\n", `"nowhere" is not host:port`},
		{"no name", "nodes: [{addr: 127.0.0.1:1}]\nstorage: 127.0.0.1:2\n", "has no name"},
		{"dup addr", "nodes: [{name: n1, addr: 127.0.0.1:1}, {name: n2, addr: 127.0.0.1:1}]\nstorage: 127.0.0.1:2\n", "used twice"},
		{"no storage", "nodes: [{name: n1, addr: 127.0.0.1:1}]\n", "no storage"},
		{"storage is a node", "nodes: [{name: n1, addr: 127.0.0.1:1}]\nstorage: 127.0.0.1:1\n", "also a lock node"},
		{"two masters", "topology: replicated\nnodes: [{name: n1, addr: 127.0.0.1:1, role: master}, {name: n2, addr: 127.0.0.1:2, role: master}]\nstorage: 127.0.0.1:3\n", "2 masters"},
		{"replica role in independent", "nodes: [{name: n1, addr: 127.0.0.1:1, role: replica}]\nstorage: 127.0.0.1:3\n", "independent topology"},
		{"sentinels without replication", "nodes: [{name: n1, addr: 127.0.0.1:1}]\nsentinels: [{name: s1, addr: 127.0.0.1:2}]\nstorage: 127.0.0.1:3\n", "topology: replicated"},
		{"bad topology", "topology: ring\nnodes: [{name: n1, addr: 127.0.0.1:1}]\nstorage: 127.0.0.1:3\n", `unknown topology "ring"`},
		{"dup name", "nodes: [{name: n1, addr: 127.0.0.1:1}, {name: n1, addr: 127.0.0.1:2}]\nstorage: 127.0.0.1:3\n", `nodes[1]: name "n1" used twice`},
		{"no role in replicated", "topology: replicated\nnodes: [{name: n1, addr: 127.0.0.1:1, role: master}, {name: n2, addr: 127.0.0.1:2}]\nstorage: 127.0.0.1:3\n", `node n2: role "", want master or replica`},
		{"sentinel with a role", "topology: replicated\nnodes: [{name: n1, addr: 127.0.0.1:1, role: master}]\nsentinels: [{name: s1, addr: 127.0.0.1:2, role: master}]\nstorage: 127.0.0.1:3\n", `sentinel s1: role "master" (leave it out)`},
		{"sentinel named as a node", "topology: replicated\nnodes: [{name: n1, addr: 127.0.0.1:1, role: master}]\nsentinels: [{name: n1, addr: 127.0.0.1:2}]\nstorage: 127.0.0.1:3\n", `sentinels[0]: name "n1" used twice`},
		{"sentinel at a node's address", "topology: replicated\nnodes: [{name: n1, addr: 127.0.0.1:1, role: master}]\nsentinels: [{name: s1, addr: 127.0.0.1:1}]\nstorage: 127.0.0.1:3\n", "sentinels s1: address 127.0.0.1:1 used twice"},
		{"bad storage addr", "nodes: [{name: n1, addr: 127.0.0.1:1}]\nstorage: 127.0.0.1:0\n", "storage: "},
		// Issue 22 row 11: one server under two addresses.
		{"node twice by name and address", "nodes: [{name: n1, addr: 127.0.0.1:27101}, {name: n2, addr: localhost:27101}]\nstorage: 127.0.0.1:3\n",
			"node n1 (127.0.0.1:27101) and node n2 (localhost:27101) are one server (both reach 127.0.0.1:27101): list each server once"},
		{"node twice by port", "nodes: [{name: n1, addr: 127.0.0.1:027101}, {name: n2, addr: 127.0.0.1:27101}]\nstorage: 127.0.0.1:3\n", "are one server"},
		{"node twice by mapped address", "nodes: [{name: n1, addr: 127.0.0.1:1}, {name: n2, addr: \"[::ffff:127.0.0.1]:1\"}]\nstorage: 127.0.0.1:3\n", "are one server"},
		{"storage as a node", "nodes: [{name: n1, addr: 127.0.0.1:27101}]\nstorage: localhost:27101\n",
			"storage localhost:27101 is the server of node n1 (127.0.0.1:27101): both reach 127.0.0.1:27101; the storage must be a Redis of its own"},
		{"sentinel at a node", "topology: replicated\nnodes: [{name: n1, addr: 127.0.0.1:1, role: master}]\nsentinels: [{name: s1, addr: localhost:01}]\nstorage: 127.0.0.1:3\n", "are one server"},
		{"unresolvable host", "nodes: [{name: n1, addr: no-such-host.invalid:1}]\nstorage: 127.0.0.1:3\n", `host "no-such-host.invalid" does not resolve`},
		// The first problem in the file's order is the one named.
		{"nodes before topology", "topology: ring\nnodes: [{addr: 127.0.0.1:1}]\n", "nodes[0] has no name"},
		{"topology before sentinels", "topology: replicated\nnodes: [{name: n1, addr: 127.0.0.1:1, role: replica}]\nsentinels: [{name: s1, addr: nowhere}]\n", "0 masters"},
		{"sentinels before storage", "topology: replicated\nnodes: [{name: n1, addr: 127.0.0.1:1, role: master}]\nsentinels: [{name: s1, addr: nowhere}]\n", `sentinels s1: address "nowhere" is not host:port`},
	} {
		p := filepath.Join(t.TempDir(), "t.yml")
		if err := os.WriteFile(p, []byte(c.text), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := target.Load(p)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", c.name, err, c.want)
		}
	}
	for _, f := range []string{"redlock.target.yml", "sentinel.target.yml"} {
		if _, err := target.Load(filepath.Join("..", "..", "compose", f)); err != nil {
			t.Errorf("compose/%s: %v", f, err)
		}
	}
}

// Against the compose Sentinel set, started by docker-compose as a user
// would: client faults through the harness's proxies, pause through the
// named container, Sentinel's election read back, and Down leaves the set
// as it found it.
func TestTargetComposeSentinel(t *testing.T) {
	dockertest.Require(t)
	dc, err := exec.LookPath("docker-compose")
	if err != nil {
		t.Skip("skipping: docker-compose is not installed")
	}
	// Names and subnet of this test process's own: another test run on
	// the same engine (a second checkout) must not take them down.
	project := fmt.Sprintf("lh-targettest-%d", os.Getpid())
	net := fmt.Sprintf("10.216.%d", os.Getpid()%250+1)
	env := append(os.Environ(), "PREFIX="+project, "NET="+net, "DOWN_AFTER=1000")
	compose := func(args ...string) {
		cmd := exec.Command(dc, append([]string{"-f", "../../compose/sentinel.yml", "-p", project}, args...)...)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("docker-compose %v: %v\n%s", args, err, out)
		}
	}
	t.Cleanup(func() { compose("down", "--timeout", "1") })
	compose("up", "-d")

	b, err := os.ReadFile("../../compose/sentinel.target.yml")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.NewReplacer("10.214.2.", net+".", "lh-sentinel-", project+"-").Replace(string(b))
	p := filepath.Join(t.TempDir(), "target.yml")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := target.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// A target holding keys is refused unless the file lets the harness
	// empty it: the verdicts assume a fresh counter.
	if err := eventually(30*time.Second, func() error { return redisbackend.Ping(ctx, f.Storage, time.Second) }); err != nil {
		t.Fatal(err)
	}
	st := redisbackend.NewRedisClient(f.Storage, sut.ClientOptions{})
	defer st.Close()
	if err := st.Set(ctx, "lock-0", 41, 0).Err(); err != nil {
		t.Fatal(err)
	}
	noFlush := f
	noFlush.Flush = false
	var d *target.Deployment
	if err := eventually(30*time.Second, func() (err error) {
		d, err = target.Open(ctx, noFlush, 1)
		if err == nil {
			_ = d.Down()
			return errors.New("a target holding keys was opened without flush")
		}
		if !strings.Contains(err.Error(), "holds 1 keys") || !strings.Contains(err.Error(), "flush: true") {
			return err
		}
		return nil
	}); err != nil {
		t.Fatalf("open without flush: %v", err)
	}
	if err := eventually(30*time.Second, func() (err error) { d, err = target.Open(ctx, f, 1); return err }); err != nil {
		t.Fatalf("open: %v", err)
	}
	if n, err := st.DBSize(ctx).Result(); err != nil || n != 0 {
		t.Fatalf("storage after open with flush: %d keys, %v", n, err)
	}
	t.Cleanup(func() { _ = d.Down() })
	if err := sut.Check(d, "the clock nemesis", sut.Needs{Capabilities: []sut.Capability{sut.CanSetClock}}); !errors.Is(err, sut.ErrUnsupported) {
		t.Errorf("clock faults on a target: %v, want refused", err)
	}
	// The native partition needs every member's container (and a harness
	// that may enter their network namespaces): without them it is
	// refused, saying so.
	native := sut.Needs{Capabilities: []sut.Capability{sut.CanPartitionNodes}}
	if err := sut.Check(d, "the native-partition nemesis", native); docker.HostNetns() && err != nil {
		t.Errorf("native partition on a target with every container named: %v", err)
	}
	bare := f
	bare.Nodes = append([]target.NodeSpec(nil), f.Nodes...)
	bare.Nodes[1].Container = ""
	if db, err := target.Open(ctx, bare, 1); err != nil {
		t.Fatalf("open without n2's container: %v", err)
	} else {
		err := sut.Check(db, "the native-partition nemesis", native)
		_ = db.Down()
		var ue *sut.UnsupportedError
		if !errors.As(err, &ue) || ue.Capability != sut.CanPartitionNodes || !strings.Contains(err.Error(), "container: NAME") && !strings.Contains(err.Error(), "root") {
			t.Errorf("native partition on a target without n2's container: %v, want an UnsupportedError that says how", err)
		}
	}
	if err := sut.Check(d, "the pause nemesis", sut.Needs{Capabilities: []sut.Capability{sut.CanPause, sut.CanKill, sut.CanCutLinks}}); err != nil {
		t.Errorf("pause, kill and partition on a target with containers: %v", err)
	}

	// A client's link, cut and healed.
	ep := d.Endpoints(0)[0]
	c := redisbackend.NewRedisClient(ep.Addr, sut.ClientOptions{Timeout: 300 * time.Millisecond, PoolSize: 1})
	defer c.Close()
	l, err := d.Network().Link("c0", ep.Node)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Cut(); err != nil {
		t.Fatal(err)
	}
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatal("PING answered through a cut link")
	}
	if did, err := d.Heal(ctx); err != nil || !strings.Contains(did, "healed link c0->n1") {
		t.Fatalf("heal: %q, %v", did, err)
	}
	if err := eventually(5*time.Second, func() error { return c.Ping(ctx).Err() }); err != nil {
		t.Fatalf("PING after heal: %v", err)
	}

	// Sentinel fails the master over when its container is paused.
	if err := eventually(30*time.Second, func() error {
		el, err := d.Elected(ctx)
		if err == nil && el != "n1" {
			err = fmt.Errorf("sentinels name %s", el)
		}
		return err
	}); err != nil {
		t.Fatalf("elected before any fault: %v", err)
	}
	// Sentinels learn the replicas from the master's INFO (every 10 s) and
	// each other from hello messages: fail over only once they know all.
	if err := eventually(30*time.Second, func() error {
		for _, s := range []string{".21", ".22", ".23"} {
			sc := redis.NewSentinelClient(&redis.Options{Addr: net + s + ":26379", MaxRetries: -1})
			m, err := sc.Master(ctx, "mymaster").Result()
			_ = sc.Close()
			if err != nil {
				return err
			}
			if m["num-slaves"] != "2" || m["num-other-sentinels"] != "2" {
				return fmt.Errorf("sentinel %s knows %s replicas, %s sentinels", s, m["num-slaves"], m["num-other-sentinels"])
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if docker.HostNetns() {
		// s1 cut off from n1 inside the compose network, where the
		// harness has no proxy: s1 alone sees n1 down (subjectively; the
		// quorum of 2 is not reached, no failover), s2 still sees it up,
		// and the heal gives it back.
		flags := func(s string) string {
			sc := redis.NewSentinelClient(&redis.Options{Addr: net + s + ":26379", MaxRetries: -1})
			defer sc.Close()
			m, err := sc.Master(ctx, "mymaster").Result()
			if err != nil {
				return err.Error()
			}
			return m["flags"]
		}
		t0 := time.Now()
		if err := d.PartitionNodes(ctx, [][2]string{{"s1", "n1"}}); err != nil {
			t.Fatal(err)
		}
		if err := eventually(10*time.Second, func() error {
			if f := flags(".21"); !strings.Contains(f, "s_down") {
				return fmt.Errorf("s1 flags n1 %q", f)
			}
			return nil
		}); err != nil {
			t.Fatalf("s1 cut off from n1 natively: %v", err)
		}
		t.Logf("s1 cut off from n1: n1 subjectively down for s1 %v after the cut; s2 flags %q", time.Since(t0).Round(time.Millisecond), flags(".22"))
		if f := flags(".22"); strings.Contains(f, "s_down") {
			t.Fatalf("s2, not cut, flags n1 %q", f)
		}
		if did, err := d.Heal(ctx); err != nil || !strings.Contains(did, "rejoined n1, s1") {
			t.Fatalf("heal: %q, %v", did, err)
		}
		if err := eventually(10*time.Second, func() error {
			if f := flags(".21"); strings.Contains(f, "s_down") {
				return fmt.Errorf("s1 flags n1 %q", f)
			}
			return d.Healthy(ctx)
		}); err != nil {
			t.Fatalf("after heal: %v", err)
		}
	}
	nodes := d.ClientNodes(0, sut.ClientOptions{Timeout: 300 * time.Millisecond})
	defer sut.CloseClientNodes(nodes)
	if err := nodes[0].Client.Set(ctx, "k", "before", 0).Err(); err != nil {
		t.Fatalf("SET through the target's Sentinel: %v", err)
	}
	n1, _ := d.Node("n1")
	pauser, err := sut.As[sut.Pauser](n1, sut.CanPause)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	if err := pauser.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	var el string
	if err := eventually(30*time.Second, func() (err error) {
		if el, err = d.Elected(ctx); err == nil && el == "n1" {
			err = errors.New("still n1")
		}
		return err
	}); err != nil {
		t.Fatalf("no failover after pausing n1's container: %v", err)
	}
	t.Logf("the sentinels elected %s %v after n1's container was paused (down-after 1s)", el, time.Since(t0).Round(time.Millisecond))
	if err := eventually(10*time.Second, func() error { return nodes[0].Client.Set(ctx, "k", "after", 0).Err() }); err != nil {
		t.Fatalf("SET after the failover, through the client's own link to %s: %v", el, err)
	}
	// It does go through the client's own link: cut it and the SET fails.
	nl, err := d.Network().Link("c0", el)
	if err != nil {
		t.Fatal(err)
	}
	if err := nl.Cut(); err != nil {
		t.Fatal(err)
	}
	if err := nodes[0].Client.Set(ctx, "k", "cut", 0).Err(); err == nil {
		t.Fatalf("SET succeeded with c0->%s cut: the client bypasses its link", el)
	}
	if err := nl.Uncut(ctx); err != nil {
		t.Fatal(err)
	}
	if err := d.Down(); err != nil {
		t.Fatal(err)
	}
	if err := redisbackend.Ping(ctx, net+".11:6379", time.Second); err != nil {
		t.Fatalf("Down left n1 paused: %v", err)
	}
}

func eventually(d time.Duration, f func() error) error {
	deadline := time.Now().Add(d)
	for {
		err := f()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}
