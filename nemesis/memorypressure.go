package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"

	"github.com/lockharness/lockharness/sut"
)

// memoryPressure fills a node with other keys under a memory limit and an
// eviction policy, as a cache sharing the lock's Redis does: with
// allkeys-lru (or any allkeys-* or volatile-* policy) Redis evicts keys to
// make room, lock keys among them, and a lock key evicted while its holder
// works is free for the next client (redis/redis#9105, RedLock.net#101).
// With noeviction the writes are refused instead (OOM) and locks are safe
// but unavailable. The limit is set just above the memory the node uses
// (Params "headroom", default 1MB) and Params "fill" bytes of filler keys
// (default 16MB) are written in values of 256KB, many times the headroom, so
// most keys that were there are evicted; under noeviction the limit is then
// set to half of what the node uses, so it stays full. Stop (and the final heal) restores
// the limit and policy and deletes the filler.
type memoryPressure struct {
	// pressed is each pressured node's state before the fault.
	pressed map[string]pressed
}

// pressed is what memory-pressure changed on one node.
type pressed struct {
	maxmemory, policy string // as they were
	fillers           int    // filler keys written: filler:0 … filler:N-1
}

// fillerPrefix names the filler keys.
const fillerPrefix = "filler:"

// memoryPressureKinds: how a report draws a node under memory pressure.
var memoryPressureKinds = []faultKind{{Name: "memory pressure"}}

func (*memoryPressure) Info() Info {
	return Info{Name: "memory-pressure", Kinds: memoryPressureKinds, Strikes: []string{"start-memory-pressure"},
		Needs:       sut.Needs{Capabilities: []sut.Capability{sut.CanCommand}},
		Description: "set maxmemory just above a node's use with an eviction policy (default allkeys-lru) and fill it with other keys: lock keys are evicted"}
}

func (m *memoryPressure) Reset() {}

func (*memoryPressure) Setup(context.Context, *Exec) error { return nil }

func (*memoryPressure) Generate(rng *rand.Rand, cfg Config, t Topology) []Step {
	target := []string{t.randomNodeOrMaster(rng.IntN)}
	return []Step{
		{Action: "start", Targets: target},
		{At: cfg.Interval, Action: "stop", Targets: target},
	}
}

var memoryPressureEvent = event{fault: "memory pressure"}

func (m *memoryPressure) Do(ctx context.Context, e *Exec, s Step) error {
	nodes, err := e.targetNodes(s.Targets)
	if err != nil {
		return err
	}
	cmds, err := capable[sut.Commander](nodes, sut.CanCommand)
	if err != nil {
		return err
	}
	switch s.Action {
	case "start":
		policy := s.Params["policy"]
		if policy == "" {
			policy = "allkeys-lru"
		}
		headroom, err := intParam(s.Params, "headroom", 1<<20)
		if err != nil {
			return err
		}
		fill, err := intParam(s.Params, "fill", 16<<20)
		if err != nil {
			return err
		}
		if m.pressed == nil {
			m.pressed = map[string]pressed{}
		}
		return e.record("start-memory-pressure", memoryPressureEvent, nodeNames(nodes), func() (string, error) {
			var details []string
			var errs []error
			for i, c := range cmds {
				d, err := m.press(ctx, nodes[i].Name(), c, policy, headroom, fill)
				details = append(details, d)
				errs = append(errs, err)
			}
			return strings.Join(details, "; "), errors.Join(errs...)
		})
	case "stop":
		return e.record("stop-memory-pressure", event{ends: []string{memoryPressureEvent.fault}}, nodeNames(nodes), func() (string, error) {
			return m.release(ctx, nodes)
		})
	}
	return fmt.Errorf("unknown action %q (want start or stop)", s.Action)
}

// press limits node name's memory and fills it; it says how many keys
// Redis evicted meanwhile.
func (m *memoryPressure) press(ctx context.Context, name string, c sut.Commander, policy string, headroom, fill int64) (string, error) {
	p, ok := m.pressed[name]
	if !ok {
		var err error
		if p.maxmemory, err = configGet(ctx, c, "maxmemory"); err != nil {
			return "", err
		}
		if p.policy, err = configGet(ctx, c, "maxmemory-policy"); err != nil {
			return "", err
		}
	}
	used, err := infoInt(ctx, c, "memory", "used_memory")
	if err != nil {
		return "", err
	}
	evicted0, err := infoInt(ctx, c, "stats", "evicted_keys")
	if err != nil {
		return "", err
	}
	limit := used + headroom
	if _, err := c.Command(ctx, "config", "set", "maxmemory-policy", policy); err != nil {
		return "", err
	}
	// Recorded before the limit is set, so that stop and the final heal
	// restore it whatever happens next.
	m.pressed[name] = p
	if _, err := c.Command(ctx, "config", "set", "maxmemory", strconv.FormatInt(limit, 10)); err != nil {
		return "", err
	}
	written, refused, err := m.fill(ctx, name, c, fill)
	if err != nil {
		return "", err
	}
	if policy == "noeviction" {
		if limit, err = halveLimit(ctx, c); err != nil {
			return "", err
		}
	}
	evicted, err := infoInt(ctx, c, "stats", "evicted_keys")
	if err != nil {
		return "", err
	}
	d := fmt.Sprintf("%s: maxmemory %d (%d used before + %d), %s, %dKB of filler written, %d keys evicted",
		name, limit, used, headroom, policy, written>>10, evicted-evicted0)
	if refused > 0 {
		d += ", writes refused (OOM)"
	}
	return d, nil
}

// fill writes filler values of 256KB to node name until fill bytes are
// written or the node refuses one (OOM: under noeviction, where nothing is
// evicted). Each filler key is counted in m.pressed before it is written,
// so that release deletes every one that may exist.
func (m *memoryPressure) fill(ctx context.Context, name string, c sut.Commander, fill int64) (written int64, refused int, err error) {
	p := m.pressed[name]
	const size = 256 << 10
	value := strings.Repeat("x", size)
	for written < fill {
		key := fmt.Sprintf("%s%d", fillerPrefix, p.fillers)
		p.fillers++
		m.pressed[name] = p
		if _, err := c.Command(ctx, "set", key, value); err != nil {
			if !strings.Contains(err.Error(), "OOM") {
				return 0, 0, fmt.Errorf("fill: %w", err)
			}
			refused++
			break // noeviction: the node refuses writes, nothing is evicted
		}
		written += size
	}
	return written, refused, nil
}

// halveLimit sets the node's limit to half the memory it uses now, and
// returns it. Under noeviction the last write that fitted may have left
// room for a small one: at half, every write that needs memory is refused
// (a cache that keeps the node full) until the fault stops.
func halveLimit(ctx context.Context, c sut.Commander) (int64, error) {
	full, err := infoInt(ctx, c, "memory", "used_memory")
	if err != nil {
		return 0, err
	}
	limit := full / 2
	if _, err := c.Command(ctx, "config", "set", "maxmemory", strconv.FormatInt(limit, 10)); err != nil {
		return 0, err
	}
	return limit, nil
}

// release restores each node's memory limit and policy and deletes the
// filler.
func (m *memoryPressure) release(ctx context.Context, nodes []sut.Node) (string, error) {
	var did []string
	var errs []error
	for _, n := range nodes {
		p, ok := m.pressed[n.Name()]
		if !ok {
			continue
		}
		c, err := sut.As[sut.Commander](n, sut.CanCommand)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := m.restore(ctx, c, p); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", n.Name(), err))
			continue
		}
		delete(m.pressed, n.Name())
		did = append(did, fmt.Sprintf("%s: maxmemory %s, %s, %d filler keys deleted", n.Name(), p.maxmemory, p.policy, p.fillers))
	}
	return strings.Join(did, "; "), errors.Join(errs...)
}

func (m *memoryPressure) restore(ctx context.Context, c sut.Commander, p pressed) error {
	if _, err := c.Command(ctx, "config", "set", "maxmemory", p.maxmemory); err != nil {
		return err
	}
	if _, err := c.Command(ctx, "config", "set", "maxmemory-policy", p.policy); err != nil {
		return err
	}
	for i := 0; i < p.fillers; i += 100 {
		args := []string{"unlink"}
		for j := i; j < min(i+100, p.fillers); j++ {
			args = append(args, fmt.Sprintf("%s%d", fillerPrefix, j))
		}
		if _, err := c.Command(ctx, args...); err != nil {
			return err
		}
	}
	return nil
}

// heal releases every node still under pressure.
func (m *memoryPressure) Heal(ctx context.Context, e *Exec) (string, error) {
	if len(m.pressed) == 0 {
		return "", nil
	}
	names := make([]string, 0, len(m.pressed))
	for n := range m.pressed {
		names = append(names, n)
	}
	sort.Strings(names)
	nodes, err := e.nodes(names)
	if err != nil {
		return "", err
	}
	d, err := m.release(ctx, nodes)
	if d != "" {
		d = "memory limit restored on " + d
	}
	return d, err
}

// configGet reads one configuration parameter through an operator's
// command, whose answer is go-redis's rendering of the reply map
// ("map[maxmemory:0]").
func configGet(ctx context.Context, c sut.Commander, name string) (string, error) {
	out, err := c.Command(ctx, "config", "get", name)
	if err != nil {
		return "", err
	}
	_, v, ok := strings.Cut(out, name+":")
	if !ok {
		return "", fmt.Errorf("CONFIG GET %s: no such parameter in %q", name, out)
	}
	v, _, _ = strings.Cut(v, "]")
	v, _, _ = strings.Cut(v, " ")
	return v, nil
}

// infoInt reads one integer field of an INFO section.
func infoInt(ctx context.Context, c sut.Commander, section, field string) (int64, error) {
	s, err := c.Command(ctx, "info", section)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(s, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, fmt.Errorf("INFO %s: no field %s", section, field)
}

func intParam(p map[string]string, key string, def int64) (int64, error) {
	v, ok := p[key]
	if !ok || v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("parameter %s=%q: want a positive number of bytes", key, v)
	}
	return n, nil
}
