package etcd

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/lockharness/lockharness/sut/local"
)

// admin is an etcd client of the member at addr, directly (no link), as an
// operator reaches it.
func admin(addr string) (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{
		Endpoints: []string{addr}, DialTimeout: 2 * time.Second, Logger: zap.NewNop(),
	})
}

// Leader is the member that leads now, as the members that answer say
// (each asked directly); an error when none answers or they disagree.
func (c *Cluster) Leader(ctx context.Context) (string, error) {
	ids, leader, err := c.status(ctx)
	if err != nil {
		return "", err
	}
	for name, id := range ids {
		if id == leader {
			return name, nil
		}
	}
	return "", fmt.Errorf("etcd leader %x is none of the members that answered", leader)
}

// status asks every member for its id and its leader.
func (c *Cluster) status(ctx context.Context) (map[string]uint64, uint64, error) {
	ids := map[string]uint64{}
	var leader uint64
	for _, s := range c.Servers {
		if !s.Running() || s.Paused() {
			continue
		}
		cl, err := admin(s.Addr())
		if err != nil {
			continue
		}
		sctx, cancel := context.WithTimeout(ctx, time.Second)
		st, err := cl.Status(sctx, s.Addr())
		cancel()
		_ = cl.Close()
		if err != nil {
			continue
		}
		ids[s.Name] = st.Header.MemberId
		if leader != 0 && st.Leader != leader {
			return nil, 0, fmt.Errorf("etcd members disagree on the leader (%x, %x)", leader, st.Leader)
		}
		leader = st.Leader
	}
	if leader == 0 {
		return nil, 0, fmt.Errorf("no etcd member knows a leader")
	}
	return ids, leader, nil
}

// lead makes member name the leader (etcd's MoveLeader, asked of the
// current leader), so that a schedule written before the run can name the
// leader. It waits until every member sees the new leader.
func (c *Cluster) lead(ctx context.Context, name string) error {
	deadline := time.Now().Add(15 * time.Second)
	for {
		ids, leader, err := c.status(ctx)
		if err == nil && ids[name] == leader && len(ids) == len(c.Servers) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("make %s the etcd leader: %v (leader %x, members %v)", name, err, leader, ids)
		}
		if err == nil && ids[name] != 0 {
			for from, id := range ids {
				if id != leader {
					continue
				}
				s, _ := local.FindServer(c.Servers, from)
				cl, err := admin(s.Addr())
				if err == nil {
					mctx, cancel := context.WithTimeout(ctx, 3*time.Second)
					_, _ = cl.MoveLeader(mctx, ids[name])
					cancel()
					_ = cl.Close()
				}
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
