package redis

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// SentinelAddr is a sentinel as ElectedBy asks it: its name and the address
// the harness reaches it at directly (no link, no fault).
type SentinelAddr struct{ Name, Addr string }

// ElectedBy asks every sentinel which node is the master of masterName,
// maps each answer (the address the master announces) to a node name with
// node, which says false for an address the deployment does not know, and
// returns the node the majority of those that answered name (a tie goes to
// the first by name). Every backend with Sentinel elects this way.
func ElectedBy(ctx context.Context, sentinels []SentinelAddr, masterName string, node func(addr string) (string, bool)) (string, error) {
	if len(sentinels) == 0 {
		return "", fmt.Errorf("elected master: no sentinels")
	}
	votes := map[string]int{}
	var errs []string
	for _, s := range sentinels {
		sc := redis.NewSentinelClient(&redis.Options{Addr: s.Addr, DialTimeout: 300 * time.Millisecond,
			ReadTimeout: 300 * time.Millisecond, MaxRetries: -1, PoolSize: 1})
		addr, err := sc.GetMasterAddrByName(ctx, masterName).Result()
		_ = sc.Close()
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", s.Name, err))
			continue
		}
		a := net.JoinHostPort(addr[0], addr[1])
		name, ok := node(a)
		if !ok {
			errs = append(errs, fmt.Sprintf("%s: unknown master address %s", s.Name, a))
			continue
		}
		votes[name]++
	}
	best, most := "", 0
	for name, v := range votes {
		if v > most || (v == most && name < best) {
			best, most = name, v
		}
	}
	if best == "" {
		return "", fmt.Errorf("elected master: no answer: %s", strings.Join(errs, "; "))
	}
	return best, nil
}
