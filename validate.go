package lockharness

import (
	"fmt"
	"math"
	"syscall"
	"time"

	"github.com/lockharness/lockharness/sut"
)

// MaxClients bounds --clients: every client has its own proxies and
// connections to every node, and a Redis server accepts 10,000 connections
// at most; a thousand clients already contend far more than a lock is ever
// used in anger.
const MaxClients = 1000

// validateNumbers refuses durations and rates that make no sense (negative,
// NaN) before anything is created: a bad number found after setup costs the
// whole run, and a NaN is only found when the configuration is encoded for
// the report. Each message names the flag that sets the value.
func (c Config) validateNumbers() error {
	durs := []struct {
		flag string
		d    time.Duration
	}{
		{"--nemesis-interval", c.Nemesis.Interval},
		{"--latency", c.Nemesis.Latency},
		{"--restart-delay", c.Nemesis.RestartDelay},
		{"--hold", c.Workload.Hold},
		{"--acquire-timeout", c.Workload.AcquireTimeout},
		{"--client-pause", c.Workload.ClientPause},
		{"--recovery", c.Recovery},
		{"--check-timeout", c.CheckTimeout},
		{"--time-limit", c.TimeLimit},
		{"jitter", c.Nemesis.Jitter},
		{"strobe period", c.Nemesis.StrobePeriod},
		{"pause duration", c.Nemesis.PauseDuration},
		{"failover window", c.Nemesis.FailoverWindow},
		{"--nemesis-client-pause", c.Nemesis.ClientPause},
		{"heal timeout", c.Nemesis.HealTimeout},
		{"client timeout", c.ClientTimeout},
	}
	for _, d := range durs {
		if d.d < 0 {
			return usage("%s must not be negative, got %v: give a duration such as 100ms, 2s or 1m", d.flag, d.d)
		}
	}
	// The clock nemesis jumps forward and back by up to ClockBump: it is a
	// magnitude, and a negative one is a mistake, not a direction.
	if c.Nemesis.ClockBump < 0 {
		return usage("--clock-bump must be positive, got %v: it is the largest jump, and each bump goes forward or back at random; use e.g. --clock-bump 1m", c.Nemesis.ClockBump)
	}
	if r := c.Workload.ClientPauseRate; math.IsNaN(r) || r < 0 || r > 1 {
		return usage("--client-pause-rate must be a probability between 0 and 1, got %v: use e.g. --client-pause-rate 0.1", r)
	}
	if r := c.Nemesis.DriftRate; math.IsNaN(r) || math.IsInf(r, 0) || r < 0 {
		return usage("clock drift rate must be a positive number, got %v", r)
	}
	return nil
}

// checkStartable refuses, before anything is created, what setup would
// only find out later: a cluster configuration it cannot start, and more
// clients than the open-file limit allows (which otherwise fails minutes
// in with "too many open files").
func (c Config) checkStartable(nodes int) error {
	clients := c.Workload.Clients
	if clients > MaxClients {
		return usage("--clients %d is more than the harness supports (%d): use --clients %d or fewer", clients, MaxClients, MaxClients)
	}
	cc := c.Cluster
	cc.Nodes, cc.Clients = nodes, clients
	info, _ := c.Registry.Lookup(c.Lock) // resolve has found it
	if err := c.system(info).Check(cc.WithDefaults()); err != nil {
		return usage("%v: see `harness run --help` for --topology, --replicas, --failover, --persistence and --base-port", err)
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return nil // no limit to compare with; setup reports what it hits
	}
	need := filesNeeded(cc.WithDefaults(), clients)
	if uint64(need) > lim.Cur {
		fewer := max(1, clients*int(lim.Cur)/need)
		raise := fmt.Sprintf("raise the limit with `ulimit -n %d`", need)
		if uint64(need) > lim.Max {
			raise = fmt.Sprintf("raise the hard limit (%d) to %d as root (`ulimit -Hn`, or nofile in /etc/security/limits.conf)", lim.Max, need)
		}
		return usage("%d clients on %d node(s) need about %d open files, more than this process may open (%d): use --clients %d or fewer, or %s",
			clients, cc.WithDefaults().Nodes, need, lim.Cur, fewer, raise)
	}
	return nil
}

// filesNeeded estimates the file descriptors a run keeps open in this
// process: per client and node a proxy listener and, for each of up to two
// connections a client has open at once (one more while a timed-out one is
// being replaced), its socket and the proxy's two ends; the storage
// client's connections; and a margin for the history, logs and the Go
// runtime.
func filesNeeded(cc sut.Config, clients int) int {
	const perLink = 1 + 2*3
	return clients*cc.Nodes*perLink + cc.Sentinels*clients*3 + clients + 2 + 64
}
