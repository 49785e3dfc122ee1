package redis

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/sut/local"
)

// Replicated reports whether the topology is one master with replicas.
func (c *Cluster) Replicated() bool { return c.cfg.Topology == sut.Replicated }

// Master is the node the harness takes as the master of a replicated
// topology: the first master until a failover moves it (SetPrimary, or
// RefreshMaster after Sentinel promoted another node). Nil when independent.
func (c *Cluster) Master() *local.Server {
	c.mu.Lock()
	name := c.master
	c.mu.Unlock()
	s, err := c.Server(name)
	if err != nil {
		return nil
	}
	return s
}

// Replicas are the nodes other than Master.
func (c *Cluster) Replicas() []*local.Server {
	m := c.Master()
	var out []*local.Server
	for _, n := range c.Nodes {
		if n != m {
			out = append(out, n)
		}
	}
	return out
}

// Primary is the name of the node the harness takes as master ("" when
// independent).
func (c *Cluster) Primary() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.master
}

// SetPrimary records name as the master and moves the clients that follow
// the harness's master (sut.FailoverManual): their open connections are closed,
// so their next command dials the new master through their own link. It
// also rewrites every node's config so a restart keeps the new roles. It
// does not send REPLICAOF: see Promote and Follow.
func (c *Cluster) SetPrimary(name string) error {
	if !c.Replicated() {
		return fmt.Errorf("set master: topology %s has no master", c.cfg.Topology)
	}
	if _, err := c.Server(name); err != nil {
		return fmt.Errorf("set master: %w", err)
	}
	c.mu.Lock()
	changed := c.master != name
	c.master = name
	dialers := append([]*MasterDialer(nil), c.dialers...)
	for _, s := range c.Nodes {
		s.Config = c.renderConfig(s)
	}
	c.mu.Unlock()
	if changed {
		for _, d := range dialers {
			d.CloseAll()
		}
	}
	return nil
}

// Promote makes node name a master (REPLICAOF NO ONE), over a direct
// connection: the harness is the operator, not a client under faults.
func (c *Cluster) Promote(ctx context.Context, name string) error {
	s, err := c.Server(name)
	if err != nil {
		return fmt.Errorf("promote: %w", err)
	}
	if err := AdminDo(ctx, s, "replicaof", "no", "one"); err != nil {
		return fmt.Errorf("promote %s: %w", name, err)
	}
	return nil
}

// Follow makes node name a replica of master, through its replication link
// "name->master" (with Sentinel, through master's announced address
// "sentinels->master", where Sentinel would point it anyway).
func (c *Cluster) Follow(ctx context.Context, name, master string) error {
	s, err := c.Server(name)
	if err != nil {
		return fmt.Errorf("follow: %w", err)
	}
	c.mu.Lock()
	l := c.replicationLink(name, master)
	c.mu.Unlock()
	if l == nil {
		return fmt.Errorf("%s follow %s: no replication link", name, master)
	}
	host, port, _ := strings.Cut(l.Addr(), ":")
	if err := AdminDo(ctx, s, "replicaof", host, port); err != nil {
		return fmt.Errorf("%s follow %s: %w", name, master, err)
	}
	return nil
}

// Role is a node's replication role as it reports it: "master", "slave"
// (with the address of its master and whether the link is up) or an error.
func (c *Cluster) Role(ctx context.Context, name string) (ReplicationInfo, error) {
	s, err := c.Server(name)
	if err != nil {
		return ReplicationInfo{}, err
	}
	return ReplicationOf(ctx, s)
}

// ReplicationInfo is the part of INFO replication the harness uses.
type ReplicationInfo = sut.RoleInfo

// ReplicationOf reads server s's INFO replication over a direct
// connection.
func ReplicationOf(ctx context.Context, s *local.Server) (ReplicationInfo, error) {
	return RoleAt(ctx, s.Name, s.Addr())
}

// RoleAt reads node's replication role from INFO replication at addr,
// over a connection of its own: every backend's Role, whatever runs the
// node.
func RoleAt(ctx context.Context, node, addr string) (sut.RoleInfo, error) {
	cl := NewRedisClient(addr, sut.ClientOptions{Timeout: 500 * time.Millisecond, PoolSize: 1})
	defer cl.Close()
	txt, err := cl.Info(ctx, "replication").Result()
	if err != nil {
		return sut.RoleInfo{}, fmt.Errorf("INFO replication on %s: %w", node, err)
	}
	var ri sut.RoleInfo
	var host, port string
	for _, line := range strings.Split(txt, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		switch k {
		case "role":
			ri.Role = v
		case "master_host":
			host = v
		case "master_port":
			port = v
		case "master_link_status":
			ri.LinkUp = v == "up"
		case "connected_slaves":
			ri.Replicas, _ = strconv.Atoi(v)
		}
	}
	if host != "" {
		ri.MasterAddr = net.JoinHostPort(host, port)
	}
	return ri, nil
}

// AdminDo sends server s a command over a direct connection, as an
// operator: never through a link.
func AdminDo(ctx context.Context, s *local.Server, args ...any) error {
	cl := NewRedisClient(s.Addr(), sut.ClientOptions{Timeout: time.Second, PoolSize: 1})
	defer cl.Close()
	return cl.Do(ctx, args...).Err()
}

// Elected asks every sentinel (directly) which node is the master and
// returns the answer of the majority of those that answered.
func (c *Cluster) Elected(ctx context.Context) (string, error) {
	if len(c.Sentinels) == 0 {
		return "", fmt.Errorf("sentinel master: topology has no sentinels")
	}
	var ss []SentinelAddr
	for _, s := range c.Sentinels {
		ss = append(ss, SentinelAddr{Name: s.Name, Addr: s.Addr()})
	}
	return ElectedBy(ctx, ss, MasterName, func(a string) (string, bool) {
		c.mu.Lock()
		name, ok := c.announce[a]
		c.mu.Unlock()
		if _, err := c.Server(name); !ok || err != nil {
			return "", false
		}
		return name, true
	})
}

// RefreshMaster sets Master to what the sentinels say it is.
func (c *Cluster) RefreshMaster(ctx context.Context) (string, error) {
	name, err := c.Elected(ctx)
	if err != nil {
		return "", err
	}
	return name, c.SetPrimary(name)
}

// waitReplicated waits until every replica's link to the master is up and,
// with Sentinel, every sentinel knows every replica and every other
// sentinel (≈2 s): a failover before that would not find a replica.
func (c *Cluster) waitReplicated(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		err := c.replicatedReady(ctx)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("replicated topology not ready after %v: %w", timeout, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("replicated topology: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (c *Cluster) replicatedReady(ctx context.Context) error {
	for _, r := range c.Replicas() {
		ri, err := ReplicationOf(ctx, r)
		if err != nil {
			return err
		}
		if ri.Role != "slave" || !ri.LinkUp {
			return fmt.Errorf("%s: role %s, link up %v", r.Name, ri.Role, ri.LinkUp)
		}
	}
	for _, s := range c.Sentinels {
		sc := redis.NewSentinelClient(&redis.Options{Addr: s.Addr(), DialTimeout: 300 * time.Millisecond,
			ReadTimeout: 300 * time.Millisecond, MaxRetries: -1, PoolSize: 1})
		m, err := sc.Master(ctx, MasterName).Result()
		_ = sc.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", s.Name, err)
		}
		if m["num-slaves"] != strconv.Itoa(c.cfg.Replicas) || m["num-other-sentinels"] != strconv.Itoa(len(c.Sentinels)-1) {
			return fmt.Errorf("%s knows %s replicas and %s other sentinels", s.Name, m["num-slaves"], m["num-other-sentinels"])
		}
	}
	return nil
}

// ReplicationLink is the link replica follows master through (see Follow).
func (c *Cluster) ReplicationLink(replica, master string) (sut.Link, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if l := c.replicationLink(replica, master); l != nil {
		return l, nil
	}
	return nil, fmt.Errorf("no replication link from %s to %s", replica, master)
}
