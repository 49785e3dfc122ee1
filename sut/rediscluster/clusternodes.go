package rediscluster

import (
	"fmt"
	"strconv"
	"strings"
)

// KeySlot is the Redis Cluster hash slot of key: CRC16 (XMODEM) of the
// key, or of its hash tag (the part between the first "{" and the next
// "}", when not empty), modulo 16384, as CLUSTER KEYSLOT computes it.
func KeySlot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for k := 0; k < len(key); k++ {
		crc ^= uint16(key[k]) << 8
		for b := 0; b < 8; b++ {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % clusterSlots
}

// ClusterNode is one line of CLUSTER NODES: one node as the node asked
// sees it.
type ClusterNode struct {
	ID          string
	Addr        string // ip:port@busport, as announced
	Flags       []string
	MasterID    string // a replica's master; "" for a master
	ConfigEpoch int64
	Connected   bool
	Slots       [][2]int       // ranges served, inclusive
	Migrating   map[int]string // slot -> node id it is moving to
	Importing   map[int]string // slot -> node id it is coming from
}

func (n ClusterNode) has(flag string) bool {
	for _, f := range n.Flags {
		if f == flag {
			return true
		}
	}
	return false
}

// Myself: the line of the node that answered.
func (n ClusterNode) Myself() bool { return n.has("myself") }

// Master: the node is (seen as) a master.
func (n ClusterNode) Master() bool { return n.has("master") }

// Serves reports whether slot is in the node's ranges.
func (n ClusterNode) Serves(slot int) bool {
	for _, r := range n.Slots {
		if slot >= r[0] && slot <= r[1] {
			return true
		}
	}
	return false
}

// ParseClusterNodes parses the reply of CLUSTER NODES.
func ParseClusterNodes(text string) ([]ClusterNode, error) {
	var out []ClusterNode
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) < 8 {
			return nil, fmt.Errorf("CLUSTER NODES line %q: want at least 8 fields", line)
		}
		n := ClusterNode{ID: f[0], Addr: f[1], Flags: strings.Split(f[2], ","), Connected: f[7] == "connected"}
		if f[3] != "-" {
			n.MasterID = f[3]
		}
		var err error
		if n.ConfigEpoch, err = strconv.ParseInt(f[6], 10, 64); err != nil {
			return nil, fmt.Errorf("CLUSTER NODES line %q: config epoch: %w", line, err)
		}
		for _, s := range f[8:] {
			if strings.HasPrefix(s, "[") {
				// [slot->-id] migrating, [slot-<-id] importing.
				body := strings.Trim(s, "[]")
				if sl, id, ok := strings.Cut(body, "->-"); ok {
					k, err := strconv.Atoi(sl)
					if err != nil {
						return nil, fmt.Errorf("CLUSTER NODES slot %q: %w", s, err)
					}
					if n.Migrating == nil {
						n.Migrating = map[int]string{}
					}
					n.Migrating[k] = id
				} else if sl, id, ok := strings.Cut(body, "-<-"); ok {
					k, err := strconv.Atoi(sl)
					if err != nil {
						return nil, fmt.Errorf("CLUSTER NODES slot %q: %w", s, err)
					}
					if n.Importing == nil {
						n.Importing = map[int]string{}
					}
					n.Importing[k] = id
				}
				continue
			}
			lo, hi, isRange := strings.Cut(s, "-")
			a, err := strconv.Atoi(lo)
			if err != nil {
				return nil, fmt.Errorf("CLUSTER NODES slot %q: %w", s, err)
			}
			b := a
			if isRange {
				if b, err = strconv.Atoi(hi); err != nil {
					return nil, fmt.Errorf("CLUSTER NODES slot %q: %w", s, err)
				}
			}
			n.Slots = append(n.Slots, [2]int{a, b})
		}
		out = append(out, n)
	}
	return out, nil
}
