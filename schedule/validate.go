package schedule

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/nemesis"
	"github.com/lockharness/lockharness/sut"
)

// Env is what a schedule is validated against: the faults and the locks
// it may name.
type Env struct {
	// Faults are the faults steps and random nemeses may name; nil:
	// nemesis.Builtin().
	Faults *nemesis.Registry
	// Locks are the locks it may test; nil: locks.Builtin(). Registry
	// "deliberate-bugs" adds the deliberately buggy variants.
	Locks *locks.Registry
}

// RegistryDeliberateBugs is the Registry value that adds the
// deliberately buggy lock variants (locks.WithDeliberateBugs).
const RegistryDeliberateBugs = "deliberate-bugs"

// MaxDuration bounds every duration of a schedule: a run of a day is a
// typo, not a test.
const MaxDuration = 24 * time.Hour

// MaxCount bounds every count of nodes, replicas, clients and retries,
// and MaxKeys the keys: a schedule asking for more is a typo, and its
// topology is built to check its targets.
const (
	MaxCount = 100
	MaxKeys  = 100000
)

// Defaults the run takes for fields left zero, which validation needs.
const (
	defaultTimeLimit = 25 * time.Second
	defaultTTL       = time.Second
	defaultClients   = 5
	defaultNodes     = 5
)

// LockRegistry is the registry the schedule's lock is looked up in.
func (s Schedule) LockRegistry(env Env) (*locks.Registry, error) {
	switch s.Registry {
	case "":
		if env.Locks != nil {
			return env.Locks, nil
		}
		return locks.Builtin(), nil
	case RegistryDeliberateBugs:
		return locks.WithDeliberateBugs(), nil
	}
	return nil, fmt.Errorf("unknown registry %q (known: %s)", s.Registry, RegistryDeliberateBugs)
}

// validator collects the problems of one schedule.
type validator struct {
	s      Schedule
	env    Env
	faults *nemesis.Registry
	lock   locks.Info
	known  bool // the lock was found
	errs   Errors
}

// maxErrors bounds the problems Validate reports: the first ones say
// what to fix, and a file of thousands of bad steps gets no longer an
// answer.
const maxErrors = 20

func (v *validator) add(path, problem, fix string) {
	if len(v.errs) < maxErrors {
		v.errs = append(v.errs, &Error{Path: path, Problem: problem, Fix: fix})
	}
}

// Validate checks everything a schedule says before anything starts: the
// lock and the faults it names, every target against the topology the
// schedule asks for, the durations (none negative or beyond MaxDuration,
// no step after the run phase ends), the awaits (none that can never
// hold: more lease left than the TTL, nodes that did not grant), the
// expectation. The error is Errors, each naming its field.
func (s Schedule) Validate(env Env) error {
	v := &validator{s: s, env: env, faults: env.Faults}
	if v.faults == nil {
		v.faults = nemesis.Builtin()
	}
	v.checkLock()
	v.checkDurations()
	v.checkDeployment()
	v.checkNemesis()
	v.checkSteps()
	v.checkExpect()
	v.checkExposure()
	if len(v.errs) > 0 {
		return v.errs
	}
	return nil
}

// namePattern is what a scenario's name may be: it names the run's
// directory in the store.
var namePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,99}$`)

func (v *validator) checkLock() {
	if v.s.Name != "" && !namePattern.MatchString(v.s.Name) {
		v.add("name", fmt.Sprintf("name %q is not a scenario name", v.s.Name), "use lower-case letters, digits, dots, dashes and underscores, as in gc-pause-stale-write")
	}
	reg, err := v.s.LockRegistry(v.env)
	if err != nil {
		v.add("registry", err.Error(), "leave registry out, or give "+RegistryDeliberateBugs)
		return
	}
	if v.s.Lock == "" {
		v.add("lock", "no lock", "name the lock under test: \"lock: token\" (see harness locks)")
		return
	}
	info, err := reg.Lookup(v.s.Lock)
	if err != nil {
		v.add("lock", err.Error(), "see harness locks")
		return
	}
	v.lock, v.known = info, true
}

// durations are every duration field of the schedule but the steps', by
// path.
func (s Schedule) durations() map[string]time.Duration {
	w, d, n := s.Workload, s.Deployment, s.Nemesis
	return map[string]time.Duration{
		"time_limit": s.TimeLimit, "recovery": s.Recovery, "client_timeout": s.ClientTimeout,
		"workload.ttl": w.TTL, "workload.hold": w.Hold, "workload.acquire_timeout": w.AcquireTimeout,
		"workload.op_timeout": w.OpTimeout, "workload.client_pause": w.ClientPause,
		"deployment.cluster_node_timeout": d.ClusterNodeTimeout, "deployment.sentinel_down_after": d.SentinelDownAfter,
		"deployment.sentinel_failover_timeout": d.SentinelFailoverTimeout,
		"nemesis.interval":                     n.Interval, "nemesis.latency": n.Latency, "nemesis.jitter": n.Jitter,
		"nemesis.clock_bump": n.ClockBump, "nemesis.strobe_period": n.StrobePeriod, "nemesis.pause_duration": n.PauseDuration,
		"nemesis.restart_delay": n.RestartDelay, "nemesis.failover_window": n.FailoverWindow,
		"nemesis.client_pause": n.ClientPause, "nemesis.heal_timeout": n.HealTimeout,
	}
}

func (v *validator) checkDurations() {
	ds := v.s.durations()
	paths := make([]string, 0, len(ds))
	for p := range ds {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		v.duration(p, ds[p])
	}
	w := v.s.Workload
	if w.Clients < 0 || w.Keys < 0 {
		v.add("workload", fmt.Sprintf("clients %d and keys %d must not be negative", w.Clients, w.Keys), "leave them out for the defaults (5 clients, 1 key)")
	}
	if w.ClientPauseRate < 0 || w.ClientPauseRate > 1 {
		v.add("workload.client_pause_rate", fmt.Sprintf("%v is not a probability", w.ClientPauseRate), "give a rate between 0 and 1")
	}
	if v.s.Nodes < 0 || v.s.ClientRetries < 0 {
		v.add("nodes", "nodes and client_retries must not be negative", "leave them out for the defaults")
	}
	d := v.s.Deployment
	for path, n := range map[string]int{"nodes": v.s.Nodes, "deployment.replicas": d.Replicas, "deployment.masters": d.Masters,
		"deployment.sentinels": d.Sentinels, "workload.clients": w.Clients, "client_retries": v.s.ClientRetries} {
		if n > MaxCount {
			v.add(path, fmt.Sprintf("%d is more than this machine can run (at most %d)", n, MaxCount), "a lock test needs a handful: 1 to 9")
		}
	}
	if w.Keys > MaxKeys {
		v.add("workload.keys", fmt.Sprintf("%d keys is more than a run can use (at most %d)", w.Keys, MaxKeys), "a lock test needs a few keys")
	}
}

// duration checks one duration: not negative, not absurd.
func (v *validator) duration(path string, d time.Duration) {
	switch {
	case d < 0:
		v.add(path, fmt.Sprintf("negative duration %v", d), "give a positive duration, or leave it out for the default")
	case d > MaxDuration:
		v.add(path, fmt.Sprintf("duration %v is longer than a day", d), "give it in seconds or milliseconds: 1s, 200ms")
	}
}

func (v *validator) checkDeployment() {
	d := v.s.Deployment
	if !slices.Contains([]string{"", sut.Independent, sut.Replicated, sut.RedisCluster}, d.Topology) {
		v.add("deployment.topology", fmt.Sprintf("unknown topology %q", d.Topology), "known: independent, replicated, cluster")
	}
	if !slices.Contains([]string{"", sut.FailoverSentinel, sut.FailoverManual}, d.Failover) {
		v.add("deployment.failover", fmt.Sprintf("unknown failover %q", d.Failover), "known: sentinel, manual")
	}
	for path, ps := range map[string]string{"deployment.persistence": d.Persistence, "nemesis.persistence": v.s.Nemesis.Persistence} {
		if ps == "" {
			continue
		}
		if err := sut.CheckPersistence(ps); err != nil {
			v.add(path, err.Error(), "")
		}
	}
	if d.Replicas < 0 || d.Masters < 0 || d.Sentinels < 0 {
		v.add("deployment", "replicas, masters and sentinels must not be negative", "leave them out for the defaults")
	}
}

func (v *validator) checkNemesis() {
	for i, n := range v.s.Nemesis.Names {
		if _, err := v.faults.Lookup(n); err != nil {
			v.add(fmt.Sprintf("nemesis.names[%d]", i), err.Error(), "see harness nemeses")
		}
	}
}

// timeLimit is the run phase's length, default included.
func (s Schedule) timeLimit() time.Duration {
	if s.TimeLimit > 0 {
		return s.TimeLimit
	}
	return defaultTimeLimit
}

func (s Schedule) ttl() time.Duration {
	if s.Workload.TTL > 0 {
		return s.Workload.TTL
	}
	return defaultTTL
}

func (v *validator) checkSteps() {
	topo := v.topology()
	var last time.Duration
	for i, st := range v.s.Steps {
		p := fmt.Sprintf("steps[%d]", i)
		if _, err := v.faults.Lookup(st.Nemesis); err != nil {
			v.add(p+".nemesis", strings.Replace(err.Error(), "unknown nemesis", "unknown fault", 1), "see harness nemeses")
		}
		if st.Action == "" {
			v.add(p+".action", "a step without an action", "give what the fault does: start, stop, kill, holder, …")
		}
		v.duration(p+".at", st.At)
		if st.At > v.s.timeLimit() {
			v.add(p+".at", fmt.Sprintf("step at %v comes after the run phase ends (time_limit %v): it would never happen", st.At, v.s.timeLimit()),
				"move it earlier or lengthen time_limit")
		}
		if st.At < last {
			v.add(p+".at", fmt.Sprintf("step at %v comes before the step above it (at %v)", st.At, last), "list the steps in the order of their times")
		}
		last = max(last, st.At)
		for j, t := range st.Targets {
			if why := topo.target(t); why != "" {
				v.add(fmt.Sprintf("%s.targets[%d]", p, j), why, topo.known())
			}
		}
		v.checkParams(p, st.Params)
		if st.Await != nil {
			v.checkAwait(p+".await", *st.Await, topo)
		}
	}
}

// durationParams are the step parameters that are durations.
var durationParams = []string{"duration", "latency", "jitter", "window", "delay"}

func (v *validator) checkParams(path string, params map[string]string) {
	for _, k := range durationParams {
		s, ok := params[k]
		if !ok {
			continue
		}
		d, err := time.ParseDuration(s)
		if err != nil {
			v.add(path+".params."+k, fmt.Sprintf("%q is not a duration", s), "write a duration with its unit: 1s, 200ms")
			continue
		}
		v.duration(path+".params."+k, d)
	}
}

func (v *validator) checkAwait(path string, a Await, topo topology) {
	v.duration(path+".lease_left", a.LeaseLeft)
	if ttl := v.s.ttl(); v.known && !v.lock.NoLease && a.LeaseLeft > ttl {
		v.add(path+".lease_left", fmt.Sprintf("awaits a holder with %v of its lease left, and a lease is %v long (the TTL): it can never hold", a.LeaseLeft, ttl),
			"await at most the TTL, or lengthen workload.ttl")
	}
	for i, n := range a.Granted {
		if !slices.Contains(topo.nodes, n) {
			v.add(fmt.Sprintf("%s.granted[%d]", path, i), fmt.Sprintf("awaits a grant by %s, which is not a node of this topology: it can never hold", n), topo.known())
		}
	}
	if (a.BareQuorum || len(a.Granted) > 1) && v.known && v.lock.MaxNodes == 1 {
		v.add(path, fmt.Sprintf("awaits a grant by several nodes or a bare quorum, and lock %s is granted by one node: it can never hold", v.s.Lock), "leave granted and bare_quorum out")
	}
}

func (v *validator) checkExpect() {
	for _, name := range sortedKeys(v.s.Expect) {
		v.verdict("expect."+name, name, v.s.Expect[name])
	}
	for i, k := range v.s.Kinds {
		for _, name := range sortedKeys(k.Expect) {
			v.verdict(fmt.Sprintf("kinds[%d].expect.%s", i, name), name, k.Expect[name])
		}
	}
}

// checkerNames are the checkers a schedule may expect a verdict of.
var checkerNames = []string{checker.LockPromise, checker.Resource, checker.Liveness}

func (v *validator) verdict(path, name, verdict string) {
	if !slices.Contains(checkerNames, name) {
		v.add(path, fmt.Sprintf("unknown checker %q", name), "known: "+strings.Join(checkerNames, ", "))
	}
	if verdict != string(checker.Valid) && verdict != string(checker.Invalid) {
		v.add(path, fmt.Sprintf("unknown verdict %q", verdict), "expect valid or invalid")
	}
}

func (v *validator) checkExposure() {
	strikes := map[string]bool{}
	for _, info := range v.faults.All() {
		for _, f := range info.Strikes {
			strikes[f] = true
		}
		for _, k := range info.Kinds {
			for _, f := range slices.Concat(k.StartedBy, k.EndedBy, k.Marks) {
				strikes[f] = true
			}
		}
	}
	for i, r := range v.s.Exposure {
		for j, f := range r.Faults {
			if !strikes[f] {
				v.add(fmt.Sprintf("exposure[%d].faults[%d]", i, j), fmt.Sprintf("no fault records %q when it strikes", f), "see the events each fault records in harness nemeses")
			}
		}
	}
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// topology is the names a step may target on the schedule's deployment.
type topology struct {
	nodes   []string
	clients int
}

// topology is the deployment the schedule asks for, as the run resolves
// it (run.Plan): a Redis Cluster's masters and replicas, a master and its
// replicas, or the independent nodes the lock needs.
func (v *validator) topology() topology {
	d, n := v.s.Deployment, v.s.Nodes
	switch d.Topology {
	case sut.RedisCluster:
		n = cmpOr(d.Masters, 3) * (1 + cmpOr(d.Replicas, 1))
	case sut.Replicated:
		n = 1 + cmpOr(d.Replicas, 2)
	default:
		if n == 0 && v.known {
			n = v.lock.MinNodes
			if v.lock.MaxNodes == 0 {
				n = max(n, defaultNodes)
			}
		}
		n = max(n, 1)
	}
	n = min(n, MaxCount*MaxCount)
	t := topology{clients: cmpOr(v.s.Workload.Clients, defaultClients)}
	for i := 1; i <= n; i++ {
		t.nodes = append(t.nodes, "n"+strconv.Itoa(i))
	}
	return t
}

func cmpOr(a, b int) int {
	if a > 0 {
		return a
	}
	return b
}

// known says which targets the topology has.
func (t topology) known() string {
	nodes := strings.Join(t.nodes, ", ")
	if len(t.nodes) > 5 {
		nodes = t.nodes[0] + " to " + t.nodes[len(t.nodes)-1]
	}
	return fmt.Sprintf("this topology has nodes %s, clients c0 to c%d, links such as c0->%s, and the roles master and replica",
		nodes, t.clients-1, t.nodes[0])
}

// target says why t is not a target of the topology ("" when it is).
func (t topology) target(name string) string {
	if name == "master" || name == "replica" {
		return ""
	}
	from, to, link := strings.Cut(name, "->")
	if !link {
		if t.node(name) || t.client(name) {
			return ""
		}
		return fmt.Sprintf("no node or client %q on this topology", name)
	}
	if !t.node(to) {
		return fmt.Sprintf("link %q ends at %q, which is not a node of this topology", name, to)
	}
	if !t.node(from) && !t.client(from) && from != sut.SentinelsFrom && from != "peers" {
		return fmt.Sprintf("link %q starts at %q, which is not a node or client of this topology", name, from)
	}
	return ""
}

func (t topology) node(n string) bool { return slices.Contains(t.nodes, n) }

func (t topology) client(c string) bool {
	i, err := strconv.Atoi(strings.TrimPrefix(c, "c"))
	return strings.HasPrefix(c, "c") && err == nil && i >= 0 && i < t.clients && c == sut.ClientName(i)
}
