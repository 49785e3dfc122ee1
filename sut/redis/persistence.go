package redis

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/sut/local"
)

// SetPersistence switches every lock node to a persistence mode while it
// runs (CONFIG SET), waits until the AOF it starts is written, and keeps the
// mode in the nodes' configs so a restart loads what they persisted.
func (c *Cluster) SetPersistence(ctx context.Context, mode string) error {
	if _, err := PersistenceConfig(mode); err != nil {
		return err
	}
	for _, s := range c.Nodes {
		if err := SetServerPersistence(ctx, s, mode); err != nil {
			return err
		}
	}
	c.mu.Lock()
	c.cfg.Persistence = mode
	for _, s := range c.Nodes {
		s.Config = c.renderConfig(s)
	}
	c.mu.Unlock()
	return nil
}

// SetServerPersistence switches server s to a persistence mode while it
// runs (CONFIG SET) and waits until the AOF it starts is written.
func SetServerPersistence(ctx context.Context, s *local.Server, mode string) error {
	cl := NewRedisClient(s.Addr(), sut.ClientOptions{Timeout: 2 * time.Second, PoolSize: 1})
	defer cl.Close()
	var err error
	switch mode {
	case sut.PersistNone:
		err = cl.ConfigSet(ctx, "appendonly", "no").Err()
	case sut.PersistAOFEverysec, sut.PersistAOFAlways:
		err = cl.ConfigSet(ctx, "appendfsync", strings.TrimPrefix(mode, "aof-")).Err()
		if err == nil {
			err = cl.ConfigSet(ctx, "appendonly", "yes").Err()
		}
	}
	if err != nil {
		return fmt.Errorf("set persistence %s on %s: %w", mode, s.Name, err)
	}
	// Turning AOF on starts a rewrite; until it is done a crash loses
	// everything written before.
	deadline := time.Now().Add(10 * time.Second)
	for {
		txt, err := cl.Info(ctx, "persistence").Result()
		if err != nil {
			return fmt.Errorf("set persistence %s on %s: %w", mode, s.Name, err)
		}
		if strings.Contains(txt, "aof_rewrite_in_progress:0") && strings.Contains(txt, "aof_rewrite_scheduled:0") {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("set persistence %s on %s: AOF rewrite still running after 10s", mode, s.Name)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("set persistence on %s: %w", s.Name, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}
