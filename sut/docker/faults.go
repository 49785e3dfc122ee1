package docker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	dnet "github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/redis/go-redis/v9"

	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/sut/local"
	redisbackend "github.com/lockharness/lockharness/sut/redis"
)

// Pause freezes every process of the node's container (docker pause, the
// cgroup freezer): connections are accepted by the kernel, commands hang.
func (n *Node) Pause(ctx context.Context) error { return n.ct.Pause(ctx) }

// Resume thaws a paused container; one not paused is left alone.
func (n *Node) Resume(ctx context.Context) error { return n.ct.Resume(ctx) }

// Paused reports whether Pause is in effect.
func (n *Node) Paused() bool { return n.ct.Paused() }

// Kill crashes the node's server with SIGKILL: what it had not persisted
// is lost. A supervised node's server process is killed inside its
// container (from the host when the harness may signal it, else with
// docker exec) and stays down until Start; otherwise the container is
// (docker kill). A paused node is thawed so the signal lands.
func (n *Node) Kill(ctx context.Context) error {
	if !n.supervised {
		return n.ct.Kill(ctx)
	}
	before := exitsSize(n.Dir)
	if err := n.killServer(ctx); err != nil {
		return err
	}
	if err := n.ct.Resume(ctx); err != nil {
		return err
	}
	if err := n.waitNoted(ctx, before); err != nil {
		return err
	}
	n.mu.Lock()
	n.serverDead = true
	n.mu.Unlock()
	return nil
}

// killServer puts the down file in place (so the loop does not start the
// server again) and sends SIGKILL to redis-server, then waits until it is
// gone.
func (n *Node) killServer(ctx context.Context) error {
	down := filepath.Join(n.Dir, "down")
	if err := os.WriteFile(down, nil, 0o666); err != nil {
		return fmt.Errorf("kill %s: %w", n.name, err)
	}
	if pid := n.serverHostPID(ctx); pid > 0 && syscall.Kill(pid, syscall.SIGKILL) == nil {
		if err := n.waitGone(ctx, pid); err != nil {
			return err
		}
	} else if err := n.exec(ctx, fmt.Sprintf("kill -9 $(cat %s/%s.pid)", mountPoint, n.name)); err != nil {
		return fmt.Errorf("kill %s: %w", n.name, err)
	}
	return nil
}

// waitNoted waits until the container's loop has written down the exit
// Kill caused (the exits file grew past before), as planned: a Start
// right after must not remove the down file before the loop has looked
// at it, or the exit would read as nobody's (WatchExits). The loop of a
// paused container writes nothing: call it once the container runs.
func (n *Node) waitNoted(ctx context.Context, before int64) error {
	return retry(ctx, 5*time.Second, 2*time.Millisecond, func() error {
		if exitsSize(n.Dir) > before {
			return nil
		}
		return fmt.Errorf("kill %s: its container's loop did not note the exit", n.name)
	})
}

// exitsSize is the size of the exits file in dir, 0 when there is none.
func exitsSize(dir string) int64 {
	st, err := os.Stat(filepath.Join(dir, exitsFile))
	if err != nil {
		return 0
	}
	return st.Size()
}

// serverHostPID is redis-server's process id as the host sees it: the
// child of the container's first process; 0 when it cannot be found.
func (n *Node) serverHostPID(ctx context.Context) int {
	r, err := n.d.dc.ContainerInspect(ctx, n.ID, client.ContainerInspectOptions{})
	if err != nil || r.Container.State == nil || r.Container.State.Pid == 0 {
		return 0
	}
	sh := r.Container.State.Pid
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", sh, sh))
	if err != nil {
		return 0
	}
	for _, f := range strings.Fields(string(b)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			continue
		}
		if comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); err == nil && strings.HasPrefix(string(comm), "redis-server") {
			return pid
		}
	}
	return 0
}

// waitGone waits until process pid has exited (its zombie reaped by the
// loop), at most 5 s.
func (n *Node) waitGone(ctx context.Context, pid int) error {
	return retry(ctx, 5*time.Second, 2*time.Millisecond, func() error {
		if local.ProcessGone(pid) {
			return nil
		}
		return fmt.Errorf("kill %s: redis-server (pid %d) still runs", n.name, pid)
	})
}

// Running reports whether the node was not killed (or was started again
// since); a paused node runs.
func (n *Node) Running() bool {
	if !n.supervised {
		return !n.ct.Killed()
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return !n.serverDead
}

// ContainerRunning asks the engine whether the container runs.
func (n *Node) ContainerRunning(ctx context.Context) (bool, error) {
	r, err := n.d.dc.ContainerInspect(ctx, n.ID, client.ContainerInspectOptions{})
	if err != nil {
		return false, fmt.Errorf("inspect %s: %w", n.name, err)
	}
	return r.Container.State != nil && r.Container.State.Running, nil
}

// Start starts a killed node again (its server in the same container, or
// the container with docker start) with the files of its directory: the config the topology's current roles give it and, with
// AOF persistence, the data it had written. It keeps its static address,
// and waits until the server answers PING.
func (n *Node) Start(ctx context.Context) error {
	if n.Running() {
		return nil
	}
	if err := n.writeFiles(); err != nil {
		return err
	}
	if n.supervised {
		if err := os.Remove(filepath.Join(n.Dir, "down")); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("start %s: %w", n.name, err)
		}
		n.mu.Lock()
		n.serverDead = false
		n.mu.Unlock()
	} else if err := n.ct.Start(ctx); err != nil {
		return err
	}
	return n.waitReady(ctx, 30*time.Second)
}

// Restart kills the node and starts it again.
func (n *Node) Restart(ctx context.Context) error {
	if err := n.Kill(ctx); err != nil {
		return err
	}
	return n.Start(ctx)
}

// Disconnect takes the container off the private network (docker network
// disconnect): nothing reaches it and it reaches nothing, the host's
// proxies included, until Connect.
func (n *Node) Disconnect(ctx context.Context) error {
	if _, err := n.d.dc.NetworkDisconnect(ctx, n.d.network.ID, client.NetworkDisconnectOptions{Container: n.ID, Force: true}); err != nil {
		return fmt.Errorf("disconnect %s: %w", n.name, err)
	}
	n.mu.Lock()
	n.disconnected = true
	n.mu.Unlock()
	return nil
}

// Connect puts a disconnected container back on the network at its static
// address.
func (n *Node) Connect(ctx context.Context) error {
	_, err := n.d.dc.NetworkConnect(ctx, n.d.network.ID, client.NetworkConnectOptions{
		Container:      n.ID,
		EndpointConfig: &dnet.EndpointSettings{IPAMConfig: &dnet.EndpointIPAMConfig{IPv4Address: n.IP}},
	})
	if err != nil {
		return fmt.Errorf("connect %s: %w", n.name, err)
	}
	n.mu.Lock()
	n.disconnected = false
	n.mu.Unlock()
	return nil
}

// Disconnected reports whether Disconnect is in effect.
func (n *Node) Disconnected() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.disconnected
}

// iptablesChain is the harness's own chain in a container, so Unisolate
// removes exactly what Isolate added.
const iptablesChain = "LOCKHARNESS"

// Isolate drops, with iptables inside the container's network namespace,
// every packet the node receives from the network (inbound) and, unless
// inboundOnly, every packet it sends: a partition that leaves the container
// attached, and that can be one-way. It needs an image with iptables.
func (n *Node) Isolate(ctx context.Context, inboundOnly bool) error {
	if err := n.d.image.Require(NeedIptables); err != nil {
		return fmt.Errorf("isolate %s: %w", n.name, err)
	}
	script := fmt.Sprintf("iptables -N %[1]s 2>/dev/null; iptables -F %[1]s && "+
		"iptables -A %[1]s -i lo -j RETURN && iptables -A %[1]s -o lo -j RETURN && iptables -A %[1]s -j DROP && "+
		"(iptables -C INPUT -j %[1]s 2>/dev/null || iptables -I INPUT -j %[1]s)", iptablesChain)
	if !inboundOnly {
		script += fmt.Sprintf(" && (iptables -C OUTPUT -j %[1]s 2>/dev/null || iptables -I OUTPUT -j %[1]s)", iptablesChain)
	}
	if err := n.netExec(ctx, script); err != nil {
		return fmt.Errorf("isolate %s: %w", n.name, err)
	}
	n.mu.Lock()
	n.isolated = true
	n.mu.Unlock()
	return nil
}

// Unisolate removes what Isolate added.
func (n *Node) Unisolate(ctx context.Context) error {
	script := fmt.Sprintf("iptables -D INPUT -j %[1]s 2>/dev/null; iptables -D OUTPUT -j %[1]s 2>/dev/null; "+
		"iptables -F %[1]s 2>/dev/null; iptables -X %[1]s 2>/dev/null; true", iptablesChain)
	if err := n.netExec(ctx, script); err != nil {
		return fmt.Errorf("unisolate %s: %w", n.name, err)
	}
	n.mu.Lock()
	n.isolated = false
	n.mu.Unlock()
	return nil
}

// Isolated reports whether Isolate is in effect.
func (n *Node) Isolated() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.isolated
}

// netExec runs a shell script in the container's network namespace: from
// the host with nsenter when the harness may (root, with nsenter and
// iptables of its own: about 15 ms), else inside the container with docker
// exec (0.1 s idle, up to a second on a loaded machine, which would put a
// partition a second late). One deployment always takes the same way, so
// both see the same rules.
func (n *Node) netExec(ctx context.Context, script string) error {
	if !n.d.hostNetns {
		return n.exec(ctx, script)
	}
	return n.ct.NetExec(ctx, script)
}

// HostNetns reports whether this process can change a container's network
// from the host: root, with nsenter and iptables on PATH.
func HostNetns() bool {
	if os.Geteuid() != 0 {
		return false
	}
	for _, c := range []string{"nsenter", "iptables"} {
		if _, err := osexec.LookPath(c); err != nil {
			return false
		}
	}
	return true
}

// exec runs a shell script in the container and fails with its output when
// it exits non-zero.
func (n *Node) exec(ctx context.Context, script string) error {
	code, r, err := n.ctr.Exec(ctx, []string{"/bin/sh", "-c", script})
	if err != nil {
		return fmt.Errorf("exec in %s: %w", n.name, err)
	}
	var out []byte
	if r != nil {
		out, _ = io.ReadAll(r)
	}
	if code != 0 {
		return fmt.Errorf("exec in %s exited %d: %s", n.name, code, bytes.TrimSpace(out))
	}
	return nil
}

// Faked reports whether the node runs under libfaketime.
func (n *Node) Faked() bool { return n.env != nil }

// Clock is the node's current fake clock.
func (n *Node) Clock() sut.Clock {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.clock
}

// SetClock makes the node's clock read real time + skew from now on,
// running at rate (1: normal speed), through libfaketime's control file in
// the bind-mounted directory. ConfirmClock checks that it took effect.
func (n *Node) SetClock(skew time.Duration, rate float64) error {
	if !n.Faked() {
		return fmt.Errorf("set clock of %s: %w", n.name, local.ErrNoFaketime)
	}
	if rate <= 0 || math.IsNaN(rate) || math.IsInf(rate, 0) {
		return fmt.Errorf("set clock of %s: rate must be positive, got %v", n.name, rate)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.clock = sut.Clock{Skew: skew, Rate: rate, Since: time.Now()}
	return n.writeClockLocked()
}

// writeClockLocked replaces the control file atomically (a missing file
// reads as offset 0).
func (n *Node) writeClockLocked() error {
	f := filepath.Join(n.Dir, "clock", "faketime")
	tmp := f + ".tmp"
	if err := os.WriteFile(tmp, []byte(local.FaketimeLine(n.clock, n.startedAt)), 0o666); err != nil {
		return fmt.Errorf("write clock of %s: %w", n.name, err)
	}
	if err := os.Rename(tmp, f); err != nil {
		return fmt.Errorf("write clock of %s: %w", n.name, err)
	}
	return nil
}

// ServerTime reads the node's clock with TIME and returns how far it is
// ahead of this process's clock (the round trip's midpoint taken as the
// instant it was read).
func (n *Node) ServerTime(ctx context.Context, timeout time.Duration) (time.Duration, error) {
	cl := redisbackend.NewRedisClient(n.Addr(), sut.ClientOptions{Timeout: timeout, PoolSize: 1})
	defer cl.Close()
	t0 := time.Now()
	st, err := cl.Time(ctx).Result()
	t1 := time.Now()
	if err != nil {
		return 0, fmt.Errorf("TIME on %s: %w", n.name, err)
	}
	return st.Sub(t0.Add(t1.Sub(t0) / 2)), nil
}

// ConfirmClock polls TIME until the node's clock reads its Clock's skew
// within tolerance, or timeout passes, and returns the skew it observed.
func (n *Node) ConfirmClock(ctx context.Context, tolerance, timeout time.Duration) (time.Duration, error) {
	deadline := time.Now().Add(timeout)
	var last time.Duration
	var lastErr error
	for {
		obs, err := n.ServerTime(ctx, 500*time.Millisecond)
		if err == nil {
			last, lastErr = obs, nil
			if (obs - n.Clock().SkewAt(time.Now())).Abs() <= tolerance {
				return obs, nil
			}
		} else {
			lastErr = err
		}
		if time.Now().After(deadline) {
			if lastErr != nil {
				return 0, fmt.Errorf("confirm clock of %s: %w", n.name, lastErr)
			}
			return last, fmt.Errorf("confirm clock of %s: reads %+v from real time, want %v after %v", n.name, last, n.Clock(), timeout)
		}
		select {
		case <-ctx.Done():
			return last, fmt.Errorf("confirm clock of %s: %w", n.name, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Heal undoes every fault and says what it did ("nothing to heal" when
// nothing was broken): first what only Docker does (containers taken off
// the network or isolated by iptables), then what every backend does the
// same way through the seam (sut.HealAll: links, paused and killed
// nodes, clocks, one master followed by every other node).
func (d *Deployment) Heal(ctx context.Context) (string, error) {
	var did []string
	var errs []error
	for _, n := range d.all() {
		if n.Disconnected() {
			if err := n.Connect(ctx); err != nil {
				errs = append(errs, err)
			} else {
				did = append(did, "reconnected "+n.name)
			}
		}
		if n.Isolated() {
			if err := n.Unisolate(ctx); err != nil {
				errs = append(errs, err)
			} else {
				did = append(did, "unisolated "+n.name)
			}
		}
	}
	what, err := sut.HealAll(ctx, d)
	if len(did) > 0 && what == "nothing to heal" {
		what = ""
	}
	if what != "" {
		did = append(did, what)
	}
	return strings.Join(did, ", "), errors.Join(append(errs, err)...)
}

// Healthy reports what is still broken, or nil: a container off the
// network or isolated, the storage node not answering, and whatever
// sut.CheckHealthy finds.
func (d *Deployment) Healthy(ctx context.Context) error {
	var errs []error
	for _, n := range d.all() {
		if n.Disconnected() || n.Isolated() {
			errs = append(errs, fmt.Errorf("%s is cut off the network", n.name))
		}
	}
	if err := redisbackend.Ping(ctx, d.Storage.Addr(), time.Second); err != nil {
		errs = append(errs, fmt.Errorf("storage does not answer: %w", err))
	}
	return errors.Join(append(errs, sut.CheckHealthy(ctx, d))...)
}

// retry calls f every interval until it succeeds or timeout passes.
func retry(ctx context.Context, timeout, interval time.Duration, f func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		if err := sleep(ctx, interval); err != nil {
			return err
		}
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// ReplicationRole asks the node for its replication role (INFO replication's role
// line: master or slave).
func (n *Node) ReplicationRole(ctx context.Context) (string, error) {
	cl := redisbackend.NewRedisClient(n.Addr(), sut.ClientOptions{Timeout: time.Second, PoolSize: 1})
	defer cl.Close()
	info, err := cl.Info(ctx, "replication").Result()
	if err != nil {
		return "", fmt.Errorf("role of %s: %w", n.name, err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "role:"); ok {
			return v, nil
		}
	}
	return "", fmt.Errorf("role of %s: no role in INFO replication", n.name)
}

// waitReplicated waits until every replica reports its link to the master
// up and, with sentinels, every sentinel knows the master, its replicas and
// the other sentinels.
func (d *Deployment) waitReplicated(ctx context.Context, timeout time.Duration, sentinels bool) error {
	deadline := time.Now().Add(timeout)
	for {
		err := d.replicatedReady(ctx, sentinels)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("replicated topology not ready after %v: %w", timeout, err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (d *Deployment) replicatedReady(ctx context.Context, sentinels bool) error {
	primary := d.Primary()
	for _, n := range d.Nodes {
		if n.name == primary {
			continue
		}
		cl := redisbackend.NewRedisClient(n.Addr(), sut.ClientOptions{Timeout: time.Second, PoolSize: 1})
		info, err := cl.Info(ctx, "replication").Result()
		_ = cl.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", n.name, err)
		}
		if !strings.Contains(info, "master_link_status:up") {
			return fmt.Errorf("%s: replication link not up", n.name)
		}
	}
	if !sentinels {
		return nil
	}
	for _, s := range d.Sentinels {
		cl := redis.NewSentinelClient(&redis.Options{Addr: s.Addr(), DialTimeout: time.Second, ReadTimeout: time.Second, MaxRetries: -1})
		m, err := cl.Master(ctx, redisbackend.MasterName).Result()
		_ = cl.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		if m["num-slaves"] != fmt.Sprint(len(d.Nodes)-1) || m["num-other-sentinels"] != fmt.Sprint(len(d.Sentinels)-1) {
			return fmt.Errorf("%s: knows %s replicas and %s other sentinels", s.name, m["num-slaves"], m["num-other-sentinels"])
		}
	}
	return nil
}
