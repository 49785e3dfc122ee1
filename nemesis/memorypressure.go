package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/lockharness/lockharness/cluster"
)

// memoryPressure fills a node with other keys under a memory limit and an
// eviction policy, as a cache sharing the lock's Redis does: with
// allkeys-lru (or any allkeys-* or volatile-* policy) Redis evicts keys to
// make room, lock keys among them, and a lock key evicted while its holder
// works is free for the next client (redis/redis#9105, RedLock.net#101).
// With noeviction the writes are refused instead (OOM) and locks are safe
// but unavailable. The limit is set just above the memory the node uses
// (Params "headroom", default 1MB) and Params "fill" bytes of filler keys
// (default 16MB) are written in values of 10KB, many times the headroom, so
// most keys that were there are evicted; under noeviction the limit is then
// set to half of what the node uses, so it stays full. Stop (and the final heal) restores
// the limit and policy and deletes the filler.
type memoryPressure struct {
	// saved is each pressured node's maxmemory and policy before the fault.
	saved map[string][2]string
}

// fillerPrefix names the filler keys.
const fillerPrefix = "filler:"

func (*memoryPressure) info() Info {
	return Info{Name: "memory-pressure", Strikes: []string{"start-memory-pressure"},
		Description: "set maxmemory just above a node's use with an eviction policy (default allkeys-lru) and fill it with other keys: lock keys are evicted"}
}

func (m *memoryPressure) reset() {}

func (*memoryPressure) setup(context.Context, *exec) error { return nil }

func (*memoryPressure) generate(rng *rand.Rand, cfg Config, t Topology) []Step {
	target := []string{t.randomNodeOrMaster(rng.IntN)}
	return []Step{
		{Action: "start", Targets: target},
		{At: cfg.Interval, Action: "stop", Targets: target},
	}
}

func (m *memoryPressure) do(ctx context.Context, e *exec, s Step) error {
	nodes, err := e.targetNodes(s.Targets)
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
		if m.saved == nil {
			m.saved = map[string][2]string{}
		}
		return e.record("start-memory-pressure", serverNames(nodes), func() (string, error) {
			var details []string
			err := onEach(ctx, nodes, func(ctx context.Context, n *cluster.Server, cl *redis.Client) error {
				d, err := m.press(ctx, n, cl, policy, headroom, fill)
				details = append(details, d)
				return err
			})
			return strings.Join(details, "; "), err
		})
	case "stop":
		return e.record("stop-memory-pressure", serverNames(nodes), func() (string, error) {
			return m.release(ctx, nodes)
		})
	}
	return fmt.Errorf("unknown action %q (want start or stop)", s.Action)
}

// press limits node n's memory and fills it; it says how many keys Redis
// evicted meanwhile.
func (m *memoryPressure) press(ctx context.Context, n *cluster.Server, cl *redis.Client, policy string, headroom, fill int64) (string, error) {
	if _, ok := m.saved[n.Name]; !ok {
		max, err := configGet(ctx, cl, "maxmemory")
		if err != nil {
			return "", err
		}
		pol, err := configGet(ctx, cl, "maxmemory-policy")
		if err != nil {
			return "", err
		}
		m.saved[n.Name] = [2]string{max, pol}
	}
	used, err := infoInt(ctx, cl, "memory", "used_memory")
	if err != nil {
		return "", err
	}
	evicted0, err := infoInt(ctx, cl, "stats", "evicted_keys")
	if err != nil {
		return "", err
	}
	limit := used + headroom
	if err := cl.ConfigSet(ctx, "maxmemory-policy", policy).Err(); err != nil {
		return "", fmt.Errorf("CONFIG SET maxmemory-policy %s: %w", policy, err)
	}
	if err := cl.ConfigSet(ctx, "maxmemory", strconv.FormatInt(limit, 10)).Err(); err != nil {
		return "", fmt.Errorf("CONFIG SET maxmemory %d: %w", limit, err)
	}
	const size = 10 << 10
	value := strings.Repeat("x", size)
	written, refused := int64(0), 0
	for i := int64(0); written < fill; i += 100 {
		p := cl.Pipeline()
		for j := i; j < i+100; j++ {
			p.Set(ctx, fmt.Sprintf("%s%d", fillerPrefix, j), value, 0)
		}
		cmds, err := p.Exec(ctx)
		for _, c := range cmds {
			if c.Err() != nil {
				refused++
			}
		}
		if err != nil && refused == 0 {
			return "", fmt.Errorf("fill: %w", err)
		}
		written += 100 * size
		if refused > 0 && policy == "noeviction" {
			break // OOM: the node refuses writes, nothing is evicted
		}
	}
	if policy == "noeviction" {
		// The last write that fitted may have left room for a small one:
		// halve the limit, so every write that needs memory is refused
		// (a cache that keeps the node full) until the fault stops.
		full, err := infoInt(ctx, cl, "memory", "used_memory")
		if err != nil {
			return "", err
		}
		limit = full / 2
		if err := cl.ConfigSet(ctx, "maxmemory", strconv.FormatInt(limit, 10)).Err(); err != nil {
			return "", fmt.Errorf("CONFIG SET maxmemory %d: %w", limit, err)
		}
	}
	evicted, err := infoInt(ctx, cl, "stats", "evicted_keys")
	if err != nil {
		return "", err
	}
	d := fmt.Sprintf("%s: maxmemory %d (%d used before + %d), %s, %dKB of filler written, %d keys evicted",
		n.Name, limit, used, headroom, policy, written>>10, evicted-evicted0)
	if refused > 0 {
		d += fmt.Sprintf(", %d writes refused (OOM)", refused)
	}
	return d, nil
}

// release restores each node's memory limit and policy and deletes the
// filler.
func (m *memoryPressure) release(ctx context.Context, nodes []*cluster.Server) (string, error) {
	var did []string
	err := onEach(ctx, nodes, func(ctx context.Context, n *cluster.Server, cl *redis.Client) error {
		saved, ok := m.saved[n.Name]
		if !ok {
			return nil
		}
		if err := cl.ConfigSet(ctx, "maxmemory", saved[0]).Err(); err != nil {
			return fmt.Errorf("restore maxmemory: %w", err)
		}
		if err := cl.ConfigSet(ctx, "maxmemory-policy", saved[1]).Err(); err != nil {
			return fmt.Errorf("restore maxmemory-policy: %w", err)
		}
		deleted := 0
		iter := cl.Scan(ctx, 0, fillerPrefix+"*", 1000).Iterator()
		var batch []string
		flush := func() error {
			if len(batch) == 0 {
				return nil
			}
			err := cl.Unlink(ctx, batch...).Err()
			deleted += len(batch)
			batch = batch[:0]
			return err
		}
		for iter.Next(ctx) {
			batch = append(batch, iter.Val())
			if len(batch) == 1000 {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		if err := iter.Err(); err != nil {
			return err
		}
		if err := flush(); err != nil {
			return err
		}
		delete(m.saved, n.Name)
		did = append(did, fmt.Sprintf("%s: maxmemory %s, %s, %d filler keys deleted", n.Name, saved[0], saved[1], deleted))
		return nil
	})
	return strings.Join(did, "; "), err
}

// heal releases every node still under pressure.
func (m *memoryPressure) heal(ctx context.Context, e *exec) (string, error) {
	if len(m.saved) == 0 {
		return "", nil
	}
	names := make([]string, 0, len(m.saved))
	for n := range m.saved {
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

func configGet(ctx context.Context, cl *redis.Client, name string) (string, error) {
	m, err := cl.ConfigGet(ctx, name).Result()
	if err != nil {
		return "", fmt.Errorf("CONFIG GET %s: %w", name, err)
	}
	v, ok := m[name]
	if !ok {
		return "", fmt.Errorf("CONFIG GET %s: no such parameter", name)
	}
	return v, nil
}

// infoInt reads one integer field of an INFO section.
func infoInt(ctx context.Context, cl *redis.Client, section, field string) (int64, error) {
	s, err := cl.Info(ctx, section).Result()
	if err != nil {
		return 0, fmt.Errorf("INFO %s: %w", section, err)
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
