// Package compose holds Docker Compose files for the topologies the harness
// tests (5 independent masters for Redlock; a master, 2 replicas and 3
// Sentinels), the --target files that describe them, and project.sh, which
// starts a set as a compose project of its own (names, subnet, target file)
// beside any other on the host. These tests check the files with the
// docker-compose on this machine, bring one up, and run two side by side.
package compose

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockharness/lockharness/cli"
	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/sut/docker/dockertest"
	redisbackend "github.com/lockharness/lockharness/sut/redis"
	"github.com/lockharness/lockharness/sut/target"
)

// composeCmd is docker-compose (1.29, Python) or the `docker compose`
// plugin, whichever is here; the test skips when neither is.
func composeCmd(t *testing.T) []string {
	t.Helper()
	if p, err := exec.LookPath("docker-compose"); err == nil {
		return []string{p}
	}
	if err := exec.Command("docker", "compose", "version").Run(); err == nil {
		return []string{"docker", "compose"}
	}
	t.Skip("skipping: neither docker-compose nor the docker compose plugin is installed (Debian: apt-get install -y docker-compose)")
	return nil
}

func run(t *testing.T, env []string, args ...string) string {
	t.Helper()
	c := composeCmd(t)
	cmd := exec.Command(c[0], append(c[1:], args...)...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", strings.Join(c, " "), strings.Join(args, " "), err, out)
	}
	return string(out)
}

// Both files are valid Compose 2.4, and IMAGE and NET reach every service.
func TestComposeFilesValidate(t *testing.T) {
	for _, f := range []struct {
		file     string
		services int
	}{{"redlock.yml", 6}, {"sentinel.yml", 7}} {
		out := run(t, []string{"IMAGE=redis:7.4", "NET=10.99.7"}, "-f", f.file, "config")
		if n := strings.Count(out, "image: redis:7.4"); n != f.services {
			t.Errorf("%s: %d services run IMAGE, want %d\n%s", f.file, n, f.services, out)
		}
		if !strings.Contains(out, "10.99.7.0/24") || strings.Contains(out, "10.214.") {
			t.Errorf("%s: NET does not set the subnet and every address\n%s", f.file, out)
		}
	}
}

// The Sentinel set comes up for real: both replicas follow the master by
// IP and every sentinel knows the master, both replicas and the others.
func TestComposeSentinelUp(t *testing.T) {
	composeCmd(t)
	dockertest.Require(t)
	// Names and subnet of this test process's own: another test run on
	// the same engine (a second checkout) must not take them down.
	project := fmt.Sprintf("lh-composetest-%d", os.Getpid())
	net := fmt.Sprintf("10.215.%d", os.Getpid()%250+1)
	env := []string{"PREFIX=" + project, "NET=" + net}
	args := []string{"-f", "sentinel.yml", "-p", project}
	t0 := time.Now()
	t.Cleanup(func() { run(t, env, append(args, "down", "--timeout", "1")...) })
	run(t, env, append(args, "up", "-d")...)
	t.Logf("docker-compose up in %v", time.Since(t0).Round(time.Millisecond))
	ctx := context.Background()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := sentinelSetReady(ctx, net)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the compose Sentinel set is not ready after 30 s: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("ready %v after up", time.Since(t0).Round(time.Millisecond))
}

func sentinelSetReady(ctx context.Context, net string) error {
	for _, r := range []string{".12", ".13"} {
		c := redisbackend.NewRedisClient(net+r+":6379", sut.ClientOptions{Timeout: time.Second, PoolSize: 1})
		info, err := c.Info(ctx, "replication").Result()
		_ = c.Close()
		if err != nil {
			return err
		}
		if !strings.Contains(info, "master_host:"+net+".11") || !strings.Contains(info, "master_link_status:up") {
			return errString("replica " + net + r + " does not follow " + net + ".11 yet")
		}
	}
	for _, s := range []string{".21", ".22", ".23"} {
		c := redis.NewSentinelClient(&redis.Options{Addr: net + s + ":26379", DialTimeout: time.Second, ReadTimeout: time.Second, MaxRetries: -1})
		m, err := c.Master(ctx, "mymaster").Result()
		_ = c.Close()
		if err != nil {
			return err
		}
		if m["ip"] != net+".11" || m["num-slaves"] != "2" || m["num-other-sentinels"] != "2" {
			return errString("sentinel " + net + s + " does not know the whole set yet")
		}
	}
	return nil
}

type errString string

func (e errString) Error() string { return string(e) }

// projectSh runs compose/project.sh and returns its combined output.
func projectSh(args ...string) (string, error) {
	out, err := exec.Command("./project.sh", args...).CombinedOutput()
	return string(out), err
}

// leftovers lists the containers and networks of compose project p.
func leftovers(t *testing.T, p string) string {
	t.Helper()
	var out []string
	for _, what := range [][]string{{"ps", "-a"}, {"network", "ls"}} {
		b, err := exec.Command("docker", append(what, "-q", "--filter", "label=com.docker.compose.project="+p)...).Output()
		if err != nil {
			t.Fatalf("docker %v: %v", what, err)
		}
		out = append(out, strings.Fields(string(b))...)
	}
	return strings.Join(out, " ")
}

// parallel runs f(0) and f(1) at once and returns their errors.
func parallel(f func(i int) error) [2]error {
	var errs [2]error
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() { errs[i] = f(i) })
	}
	wg.Wait()
	return errs
}

// Two sets of the same compose file on one host: project.sh brings both up
// at once (the same services, the same default subnet: without project
// names and a subnet each they would collide), each gets containers named
// after its project and a /24 of its own, a short harness run against each
// generated target file is valid, both at once, and down leaves no
// container or network of either.
func TestTwoProjectsSideBySide(t *testing.T) {
	composeCmd(t)
	dockertest.Require(t)
	projects := [2]string{fmt.Sprintf("lh-side-%d-a", os.Getpid()), fmt.Sprintf("lh-side-%d-b", os.Getpid())}
	dir := t.TempDir()
	var targets [2]string
	for i, p := range projects {
		targets[i] = filepath.Join(dir, p+".target.yml")
		t.Cleanup(func() { _, _ = projectSh("down", "redlock", p) })
	}
	t0 := time.Now()
	for i, err := range parallel(func(i int) error {
		out, err := projectSh("up", "redlock", projects[i], targets[i])
		if err != nil {
			return fmt.Errorf("project.sh up redlock %s: %w\n%s", projects[i], err, out)
		}
		return nil
	}) {
		if err != nil {
			t.Fatalf("project %d: %v", i, err)
		}
	}
	t.Logf("two projects up in %v", time.Since(t0).Round(time.Millisecond))
	checkTargets(t, projects, targets)

	t1 := time.Now()
	for i, err := range parallel(func(i int) error { return harnessRun(targets[i], filepath.Join(dir, "store"+projects[i])) }) {
		if err != nil {
			t.Errorf("harness run against %s: %v", projects[i], err)
		}
	}
	t.Logf("two harness runs in %v", time.Since(t1).Round(time.Millisecond))
	for _, p := range projects {
		if out, err := projectSh("down", "redlock", p); err != nil {
			t.Errorf("project.sh down redlock %s: %v\n%s", p, err, out)
		}
		if left := leftovers(t, p); left != "" {
			t.Errorf("after down, project %s still has %s", p, left)
		}
	}
}

// checkTargets loads both generated target files: each names its own
// project's containers on a subnet the other does not use.
func checkTargets(t *testing.T, projects [2]string, targets [2]string) {
	t.Helper()
	var nets [2]string
	for i, p := range targets {
		f, err := target.Load(p)
		if err != nil {
			t.Fatalf("generated target file: %v", err)
		}
		if b, _ := os.ReadFile(p); strings.Contains(string(b), "lh-redlock") || strings.Contains(string(b), "10.214.") {
			t.Errorf("%s still names the default project or subnet:\n%s", p, b)
		}
		if len(f.Nodes) != 5 {
			t.Fatalf("%s: %d nodes, want 5", p, len(f.Nodes))
		}
		for _, n := range f.Nodes {
			if n.Container != projects[i]+"-"+n.Name {
				t.Errorf("%s: node %s's container %q, want %s-%s", p, n.Name, n.Container, projects[i], n.Name)
			}
		}
		nets[i] = f.Storage[:strings.LastIndex(f.Storage, ".")]
		if !strings.HasPrefix(f.Nodes[0].Addr, nets[i]+".") {
			t.Errorf("%s: node n1 at %s, storage at %s: not one subnet", p, f.Nodes[0].Addr, f.Storage)
		}
	}
	if nets[0] == nets[1] {
		t.Fatalf("both projects on %s.0/24", nets[0])
	}
}

// harnessRun runs the command line's `harness run --target FILE --lock
// redlock` for a few seconds, no faults, and wants it valid.
func harnessRun(targetFile, store string) error {
	var stdout, stderr bytes.Buffer
	code := cli.Main(context.Background(), []string{"run", "--target", targetFile, "--lock", "redlock", "--clients", "3",
		"--time-limit", "3s", "--recovery", "1s", "--seed", "1", "--store", store}, &stdout, &stderr, cli.Options{})
	if code != 0 || !strings.Contains(stdout.String(), "VALID  redlock") {
		return fmt.Errorf("exit %d, want 0 (valid)\n%s\n%s", code, stdout.String(), stderr.String())
	}
	return nil
}

// project.sh refuses a set it has no file for and a project name Compose
// would mangle, exit 2, before touching Docker.
func TestProjectShBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"up", "nope", "alice"}, `unknown set "nope": redlock or sentinel`},
		{[]string{"up", "redlock", "Alice/x"}, `project "Alice/x": lower-case letters`},
		{[]string{"up", "redlock"}, "usage:"},
		{[]string{"sideways", "redlock", "alice"}, "usage:"},
	} {
		out, err := projectSh(c.args...)
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(out, c.want) {
			t.Errorf("project.sh %v: %v, %q; want exit 2 and %q", c.args, err, out, c.want)
		}
	}
}
