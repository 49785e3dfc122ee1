package run

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/sut"
)

// MaxClients bounds --clients: every client has its own proxies and
// connections to every node, and a Redis server accepts 10,000 connections
// at most; a thousand clients already contend far more than a lock is ever
// used in anger.
const MaxClients = 1000

// MaxTimeLimit and MaxRecovery bound the run's two timed phases. Far
// beyond them a sum of durations overflows (2562047h is the largest
// time.Duration), and a day of faults already records more history than a
// check reads in its timeout; a soak is a series of runs (harness matrix
// --repeat), each of which is checked and kept.
const (
	MaxTimeLimit = 24 * time.Hour
	MaxRecovery  = time.Hour
)

// Validate checks c as Run would run it, before anything is created, and
// returns the first problem: a *UsageError, holding a *FieldError when one
// field is at fault. It is the one validation of a run (NewPlan without
// the plan): `harness run`, `harness scenario run` and every cell of
// `harness matrix` go through it.
func (c Config) Validate() error {
	_, err := NewPlan(c)
	return err
}

// givenRule is a field whose zero means a default: bad says whether its
// value is a mistake where the caller gave it, problem (a format of the
// value) and fix what the error says.
type givenRule struct {
	field        string
	bad          func(Config) (any, bool)
	problem, fix string
}

// givenRules are the fields whose zero means a default, and what a zero
// (or less) is when the caller gave it (Config.Given), in the order they
// are checked.
var givenRules = []givenRule{
	{"Workload.Clients", func(c Config) (any, bool) { return c.Workload.Clients, c.Workload.Clients < 1 },
		"{Workload.Clients} must be at least 1, got %d", "use e.g. {Workload.Clients 5}"},
	{"Workload.Keys", func(c Config) (any, bool) { return c.Workload.Keys, c.Workload.Keys < 1 },
		"{Workload.Keys} must be at least 1, got %d", "use e.g. {Workload.Keys 1}"},
	{"Workload.TTL", func(c Config) (any, bool) { return c.Workload.TTL, c.Workload.TTL <= 0 },
		"{Workload.TTL} must be positive, got %v", "use e.g. {Workload.TTL 1s}"},
	{"TimeLimit", func(c Config) (any, bool) { return c.TimeLimit, c.TimeLimit <= 0 },
		"{TimeLimit} must be positive, got %v", "use e.g. {TimeLimit 25s}"},
	{"Nemesis.Interval", func(c Config) (any, bool) { return c.Nemesis.Interval, c.Nemesis.Interval <= 0 },
		"{Nemesis.Interval} must be positive, got %v", "use e.g. {Nemesis.Interval 5s}"},
	{"CheckTimeout", func(c Config) (any, bool) { return c.CheckTimeout, c.CheckTimeout <= 0 },
		"{CheckTimeout} must be positive, got %v", "use e.g. {CheckTimeout 30s}"},
	{"Nemesis.ClientPause", func(c Config) (any, bool) { return c.Nemesis.ClientPause, c.Nemesis.ClientPause <= 0 },
		"{Nemesis.ClientPause} must be positive, got %v", "use e.g. {Nemesis.ClientPause 1.5s}"},
	// A command line's empty --nemesis "" is no list at all: given, it is
	// a name left out, not a request for no faults.
	{"Nemesis.Names", func(c Config) (any, bool) { return strings.Join(c.Nemesis.Names, ","), len(c.Nemesis.Names) == 0 },
		"{Nemesis.Names} is given but names no nemesis (got %q)", "name one (see `harness nemeses`) or leave {Nemesis.Names} out"},
}

// checkGiven refuses a zero the caller gave on purpose (Config.Given),
// before the defaults would hide it.
func (c Config) checkGiven() error {
	if slices.Contains(c.Given, "Lock") && c.Lock == "" {
		reg := c.Registry
		if reg == nil {
			reg = locks.Builtin()
		}
		return field("Lock", c.Lock, fmt.Sprintf("{Lock} is required (known locks: %s)", strings.Join(reg.Names(), ", ")), "")
	}
	for _, g := range c.Given {
		if g != "Lock" && !slices.ContainsFunc(givenRules, func(r givenRule) bool { return r.field == g }) {
			return fmt.Errorf("run: Given names %q, which is not a field whose zero means a default", g)
		}
	}
	for _, r := range givenRules {
		if v, bad := r.bad(c); bad && slices.Contains(c.Given, r.field) {
			return field(r.field, v, fmt.Sprintf(r.problem, v), r.fix)
		}
	}
	return nil
}

// checkNumbers refuses durations and rates that make no sense (negative,
// NaN) before anything is created: a bad number found after setup costs
// the whole run, and a NaN is only found when the configuration is
// encoded for the report.
func (c Config) checkNumbers() error {
	durs := []struct {
		field string
		d     time.Duration
	}{
		{"Nemesis.Interval", c.Nemesis.Interval},
		{"Nemesis.Latency", c.Nemesis.Latency},
		{"Nemesis.RestartDelay", c.Nemesis.RestartDelay},
		{"Workload.Hold", c.Workload.Hold},
		{"Workload.AcquireTimeout", c.Workload.AcquireTimeout},
		{"Workload.ClientPause", c.Workload.ClientPause},
		{"Recovery", c.Recovery},
		{"CheckTimeout", c.CheckTimeout},
		{"TimeLimit", c.TimeLimit},
		{"Nemesis.Jitter", c.Nemesis.Jitter},
		{"Nemesis.StrobePeriod", c.Nemesis.StrobePeriod},
		{"Nemesis.PauseDuration", c.Nemesis.PauseDuration},
		{"Nemesis.FailoverWindow", c.Nemesis.FailoverWindow},
		{"Nemesis.ClientPause", c.Nemesis.ClientPause},
		{"Nemesis.HealTimeout", c.Nemesis.HealTimeout},
		{"ClientTimeout", c.ClientTimeout},
	}
	for _, d := range durs {
		if d.d < 0 {
			return field(d.field, d.d, fmt.Sprintf("{%s} must not be negative, got %v", d.field, d.d), "give a duration such as 100ms, 2s or 1m")
		}
	}
	// The clock nemesis jumps forward and back by up to ClockBump: it is a
	// magnitude, and a negative one is a mistake, not a direction.
	if b := c.Nemesis.ClockBump; b < 0 {
		return field("Nemesis.ClockBump", b, fmt.Sprintf("{Nemesis.ClockBump} must be positive, got %v", b),
			"it is the largest jump, and each bump goes forward or back at random; use e.g. {Nemesis.ClockBump 1m}")
	}
	if r := c.Workload.ClientPauseRate; math.IsNaN(r) || r < 0 || r > 1 {
		return field("Workload.ClientPauseRate", r, fmt.Sprintf("{Workload.ClientPauseRate} must be a probability between 0 and 1, got %v", r),
			"use e.g. {Workload.ClientPauseRate 0.1}")
	}
	if r := c.Nemesis.DriftRate; math.IsNaN(r) || math.IsInf(r, 0) || r < 0 {
		return field("Nemesis.DriftRate", r, fmt.Sprintf("{Nemesis.DriftRate} must be a positive number, got %v", r), "")
	}
	return nil
}

// checkLimits refuses what no system runs as asked and what cannot fit:
// a TTL that is not a whole number of milliseconds (Redis's PX and
// ZooKeeper's session timeout count milliseconds, so 1.5ms would be
// truncated to 1ms while the checker assumes 1.5ms, and 1ns to 0, which
// every SET refuses), phases longer than MaxTimeLimit and MaxRecovery, an
// empty nemesis name, and nemeses whose first fault would start after the
// run (each fault waits one Nemesis.Interval first).
func (c Config) checkLimits() error {
	if ttl := c.Workload.TTL; ttl%time.Millisecond != 0 {
		up := ttl.Truncate(time.Millisecond) + time.Millisecond
		return field("Workload.TTL", ttl, fmt.Sprintf("{Workload.TTL} must be a whole number of milliseconds (the systems count a lease in ms), got %v", ttl),
			fmt.Sprintf("use e.g. {Workload.TTL %v}", up))
	}
	if c.TimeLimit > MaxTimeLimit {
		return field("TimeLimit", c.TimeLimit, fmt.Sprintf("{TimeLimit} %v is longer than the harness supports (%v)", c.TimeLimit, MaxTimeLimit),
			fmt.Sprintf("use {TimeLimit %v} or less, and run longer tests as several runs (harness matrix --repeat)", MaxTimeLimit))
	}
	if c.Recovery > MaxRecovery {
		return field("Recovery", c.Recovery, fmt.Sprintf("{Recovery} %v is longer than the harness supports (%v)", c.Recovery, MaxRecovery),
			fmt.Sprintf("use {Recovery %v} or less", MaxRecovery))
	}
	if err := c.checkEndEarly(); err != nil {
		return err
	}
	return c.checkNemesisFits()
}

// MaxEndGrants bounds EndEarly.Grants: more grants than this is a run
// phase that should simply run to its time limit.
const MaxEndGrants = 100

// checkEndEarly refuses an early end of a run phase that has no script
// (a random schedule has no last step to wait for) and a count of grants
// out of range.
func (c Config) checkEndEarly() error {
	e := c.EndEarly
	if e.Grants < 0 || e.Grants > MaxEndGrants {
		return field("EndEarly.Grants", e.Grants, fmt.Sprintf("{EndEarly.Grants} must be 0 (the default, %d) to %d, got %d", DefaultEndGrants, MaxEndGrants, e.Grants),
			"use e.g. {EndEarly.Grants 2}")
	}
	if e.Grants > 0 && !e.Run {
		return field("EndEarly.Grants", e.Grants, "{EndEarly.Grants} counts the grants before the run phase ends early, but {EndEarly.Run} is off",
			"add {EndEarly.Run true} or leave {EndEarly.Grants} out")
	}
	if e.Run && len(c.Script) == 0 {
		return field("EndEarly.Run", e.Run, "{EndEarly.Run} ends a script's run phase once its steps are done and their evidence is in, but the run has no script",
			"give steps, or leave {EndEarly.Run} out")
	}
	return nil
}

// checkNemesisFits refuses an empty nemesis name and a random schedule
// with no room for a fault: the first one starts after Nemesis.Interval, so
// with an interval as long as the run none ever strikes, and the run ends
// unknown after its whole length (a script times its own steps).
func (c Config) checkNemesisFits() error {
	names := c.Nemesis.Names
	if slices.Contains(names, "") {
		return field("Nemesis.Names", names, fmt.Sprintf("{Nemesis.Names} has an empty name (%q)", strings.Join(names, ",")),
			fmt.Sprintf("name each nemesis (known: %s), or leave {Nemesis.Names} out", strings.Join(c.Nemesis.Faults().Names(), ", ")))
	}
	iv := c.Nemesis.WithDefaults().Interval
	if len(names) == 0 || len(c.Script) > 0 || iv < c.TimeLimit {
		return nil
	}
	return field("Nemesis.Interval", iv,
		fmt.Sprintf("no fault can strike in the run: each waits {Nemesis.Interval} (%v) first, and {TimeLimit} is %v", iv, c.TimeLimit),
		fmt.Sprintf("use {TimeLimit %v} or more, or a shorter {Nemesis.Interval}", 2*iv+iv/2))
}

// checkWorkload is the workload's own validation, and the clients'
// retries.
func (c Config) checkWorkload() error {
	if err := c.Workload.Validate(); err != nil {
		return fieldErr("Workload", c.Workload, err)
	}
	if n := c.ClientRetries; n < 0 {
		return field("ClientRetries", n, fmt.Sprintf("{ClientRetries} must not be negative, got %d", n),
			"use 0 to keep go-redis's retries off, or e.g. {ClientRetries 3}")
	}
	return nil
}

// checkFailpoints checks that every failpoint to arm is one the lock
// declares, and that a client fault will arm it.
func (p *Plan) checkFailpoints() error {
	c, info := p.Config, p.Lock
	fps := c.Nemesis.Failpoints
	if len(fps) == 0 {
		return nil
	}
	// A client fault (one that strikes a client) arms them.
	arms := false
	faults := c.Nemesis.Faults()
	for _, n := range c.Nemesis.Names {
		if info, err := faults.Lookup(n); err == nil && info.StrikesClient != "" {
			arms = true
		}
	}
	if !arms {
		return field("Nemesis.Failpoints", fps, fmt.Sprintf("failpoints %s are armed only by a client fault", strings.Join(fps, ",")),
			"add {Nemesis.Names client-pause} or client-crash")
	}
	for _, fp := range fps {
		if !slices.Contains(info.Failpoints, fp) {
			if len(info.Failpoints) == 0 {
				return field("Nemesis.Failpoints", fps, fmt.Sprintf("lock %s has no failpoints, got %q (locks with failpoints: see harness locks)", info.Name, fp), "")
			}
			return field("Nemesis.Failpoints", fps, fmt.Sprintf("lock %s has no failpoint %q (it has: %s)", info.Name, fp, strings.Join(info.Failpoints, ", ")), "")
		}
	}
	return nil
}

// checkRenews checks that a workload that renews before it writes has a
// lock that can renew, asking an instance built over placeholder nodes.
func (p *Plan) checkRenews() error {
	info := p.Lock
	if !p.Config.Workload.RenewBeforeWrite {
		return nil
	}
	l, done, err := placeholderLock(info, max(info.MinNodes, 1), locks.Options{})
	if err != nil {
		return fmt.Errorf("lock %s: %w", info.Name, err)
	}
	defer done()
	if _, ok := l.(locks.Renewer); !ok {
		return field("Workload.RenewBeforeWrite", true, fmt.Sprintf("lock %s has no Renew, so its clients cannot renew before they write", info.Name),
			"drop {Workload.RenewBeforeWrite} or use a lock with Renew (token, fenced, reentrant, redlock, redsync, redislock)")
	}
	return nil
}

// checkLockOptions asks the lock what it refuses of its options
// (locks.Info.CheckOptions; set-nx-ex: a TTL that is not whole seconds),
// so that it is refused before anything starts, not by every client after
// setup with a run of no operations.
func (p *Plan) checkLockOptions() error {
	info := p.Lock
	if info.CheckOptions == nil {
		return nil
	}
	if err := info.CheckOptions(locks.Options{TTL: p.Config.Workload.TTL}); err != nil {
		return fieldErr("Lock", p.Config.Lock, fmt.Errorf("lock %s: %w", info.Name, err))
	}
	return nil
}

// placeholderLock is an instance of the lock over n placeholder nodes,
// which are never dialled (go-redis connects on the first command), and
// the function that releases it.
func placeholderLock(info locks.Info, n int, opts locks.Options) (locks.Lock, func(), error) {
	nodes := make([]sut.ClientNode, n)
	for i := range nodes {
		nodes[i] = sut.ClientNode{Name: fmt.Sprintf("n%d", i+1), Addr: "127.0.0.1:0", Client: redis.NewClient(&redis.Options{Addr: "127.0.0.1:0"})}
	}
	l, err := info.New(nodes, opts)
	if err != nil {
		sut.CloseClientNodes(nodes)
		return nil, nil, err
	}
	return l, func() {
		if cl, ok := l.(locks.Closer); ok {
			cl.Close()
		}
		sut.CloseClientNodes(nodes)
	}, nil
}

// checkStartable refuses, before anything is created, what setup would
// only find out later: a deployment the system cannot start, and more
// clients than the open-file limit allows (which otherwise fails minutes
// in with "too many open files").
func (p *Plan) checkStartable() error {
	clients := p.Cluster.Clients
	if clients > MaxClients {
		return field("Workload.Clients", clients, fmt.Sprintf("{Workload.Clients %d} is more than the harness supports (%d)", clients, MaxClients),
			fmt.Sprintf("use {Workload.Clients %d} or fewer", MaxClients))
	}
	cc := p.Cluster.WithDefaults()
	if err := p.System.Check(cc); err != nil {
		return &UsageError{Err: &FieldError{Field: "Cluster", Value: p.Cluster, Problem: err.Error(), Err: err,
			Fix: "see `harness run --help` for {Cluster.Topology}, {Cluster.Replicas}, {Cluster.Failover}, {Cluster.Persistence} and {Cluster.BasePort}"}}
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return nil // no limit to compare with; setup reports what it hits
	}
	need := filesNeeded(cc, clients)
	if uint64(need) > lim.Cur {
		fewer := max(1, clients*int(lim.Cur)/need)
		raise := fmt.Sprintf("raise the limit with `ulimit -n %d`", need)
		if uint64(need) > lim.Max {
			raise = fmt.Sprintf("raise the hard limit (%d) to %d as root (`ulimit -Hn`, or nofile in /etc/security/limits.conf)", lim.Max, need)
		}
		return field("Workload.Clients", clients,
			fmt.Sprintf("%d clients on %d node(s) need about %d open files, more than this process may open (%d)", clients, cc.Nodes, need, lim.Cur),
			fmt.Sprintf("use {Workload.Clients %d} or fewer, or %s", fewer, raise))
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
