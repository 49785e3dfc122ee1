// Package compose holds Docker Compose files for the topologies the harness
// tests (5 independent masters for Redlock; a master, 2 replicas and 3
// Sentinels) and the --target files that describe them. These tests check
// the files with the docker-compose on this machine and bring one up.
package compose

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/sut/docker/dockertest"
	redisbackend "github.com/lockharness/lockharness/sut/redis"
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
