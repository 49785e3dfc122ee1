package docker_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"

	"github.com/lockharness/lockharness/sut/docker"
	"github.com/lockharness/lockharness/sut/docker/dockertest"
)

// cancelEnv names, in the child process of TestCancelDuringSetupLeavesNothing,
// the engine request at whose answer the setup is cancelled.
const cancelEnv = "LOCKHARNESS_DOCKER_CANCEL_AT"

// Ctrl-C during the setup of a Docker deployment: the engine has done
// what was asked (a container created, a network made) but the harness,
// cancelled, never hears the answer. Every such resource must be removed
// before Up returns, not left (state Created) until the next start's
// sweep. Each case cancels the setup at the answer to one engine request,
// deterministically: a child process talks to the engine through a proxy
// that cancels the setup's context and drops the answer of the request
// named. The child then lists what carries its labels.
func TestCancelDuringSetupLeavesNothing(t *testing.T) {
	if at := os.Getenv(cancelEnv); at != "" {
		cancelChild(t, at)
		return
	}
	if testing.Short() {
		t.Skip("starts containers")
	}
	dockertest.Require(t)
	t.Cleanup(func() { _, _ = docker.Sweep(context.Background()) }) // whatever a failing child left
	for _, at := range []string{"/networks/create 1", "/containers/create 1", "/containers/create 3", "/start 2"} {
		t.Run(strings.ReplaceAll(at, "/", "_"), func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestCancelDuringSetupLeavesNothing$", "-test.count=1", "-test.v")
			cmd.Env = append(os.Environ(), cancelEnv+"="+at)
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), "left 0 containers, 0 networks") {
				t.Fatalf("cancelled at the answer to %s: %v\n%s", at, err, out)
			}
		})
	}
}

// cancelChild runs Up through a proxy that cancels it at the answer to
// the request at ("PATH-SUFFIX N": the Nth POST whose path ends so), then
// lists the containers and networks this process labelled.
func cancelChild(t *testing.T, at string) {
	suffix, nth, _ := strings.Cut(at, " ")
	n, err := strconv.Atoi(nth)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sock := cuttingProxy(t, func(r *http.Request) bool {
		return r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, suffix)
	}, n, cancel)
	// Before the first engine call: testcontainers reads it once.
	t.Setenv("DOCKER_HOST", "unix://"+sock)
	d, err := docker.Up(ctx, docker.Config{Nodes: 2})
	if err == nil {
		_ = d.Down()
		t.Fatalf("Up succeeded although cancelled at the answer to %s", at)
	}
	if ctx.Err() == nil {
		t.Fatalf("the setup was never cancelled (the proxy saw no %s): %v", at, err)
	}
	t.Logf("up: %v", err)
	dc, err := testcontainers.NewDockerClientWithOpts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer dc.Close()
	f := make(client.Filters).Add("label", docker.LabelPID+"="+strconv.Itoa(os.Getpid()))
	cs, err := dc.ContainerList(context.Background(), client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	ns, err := dc.NetworkList(context.Background(), client.NetworkListOptions{Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("left %d containers, %d networks\n", len(cs.Items), len(ns.Items))
	for _, c := range cs.Items {
		fmt.Printf("  container %.12s %s %v\n", c.ID, c.State, c.Labels[docker.LabelNode])
	}
}

// cuttingProxy serves the engine's API on a socket of its own (its path
// is returned) and forwards everything to the engine, except that at the
// answer to the nth request that match says is the one, it calls cancel
// and drops the answer: what the request did is done, and the client
// hears only that it failed.
func cuttingProxy(t *testing.T, match func(*http.Request) bool, nth int, cancel func()) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "lh-engine-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "docker.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := 0
	p := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) { r.Out.URL.Scheme, r.Out.URL.Host = "http", "docker" },
		Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", "/var/run/docker.sock")
		}},
		FlushInterval: -1,
		ModifyResponse: func(resp *http.Response) error {
			if !match(resp.Request) {
				return nil
			}
			mu.Lock()
			seen++
			cut := seen == nth
			mu.Unlock()
			if !cut {
				return nil
			}
			cancel()
			return errors.New("answer dropped by the test")
		},
	}
	srv := &http.Server{Handler: p}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return sock
}
