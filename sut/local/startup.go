package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
)

// RetryBusyPorts calls up until it does not fail with ErrPortBusy, three
// times at most: a free port chosen for a server or proxy can be taken by
// another process before it is bound, and starting over picks new ones.
// fixedPorts (a base port the user gave) makes the first error final:
// other ports would not be the ones asked for.
func RetryBusyPorts[T any](ctx context.Context, fixedPorts bool, up func() (T, error)) (T, error) {
	for attempt := 1; ; attempt++ {
		c, err := up()
		if err == nil || fixedPorts || attempt == 3 || !errors.Is(err, ErrPortBusy) || ctx.Err() != nil {
			return c, err
		}
	}
}

// WorkDir is the directory a deployment keeps its servers' files in: dir
// made absolute, or, when dir is empty, a new temporary directory named
// after prefix, which the deployment removes when it goes down (temp).
func WorkDir(dir, prefix string) (path string, temp bool, err error) {
	if dir == "" {
		d, err := os.MkdirTemp("", prefix)
		if err != nil {
			return "", false, fmt.Errorf("make a temporary directory for the servers: %w", err)
		}
		return d, true, nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", false, fmt.Errorf("servers directory %s: %w", dir, err)
	}
	return abs, false, nil
}

// WaitEach polls ready for each server in turn, every 50ms, until it
// answers nil or timeout has passed (an error wrapping ready's last).
func WaitEach(ctx context.Context, servers []*Server, timeout time.Duration, ready func(ctx context.Context, addr string) error) error {
	deadline := time.Now().Add(timeout)
	for _, s := range servers {
		for {
			err := ready(ctx, s.Addr())
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s not ready after %v: %w", s.Name, timeout, err)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	return nil
}

// Names are the servers' names, in order.
func Names(servers []*Server) []string {
	out := make([]string, len(servers))
	for i, s := range servers {
		out[i] = s.Name
	}
	return out
}

// FindServer is the server called name.
func FindServer(servers []*Server, name string) (*Server, bool) {
	for _, s := range servers {
		if s.Name == name {
			return s, true
		}
	}
	return nil, false
}

// WaitAllReady waits for every server at once (WaitReady) and joins what
// each said, except that the first to find its port another's (ErrPortBusy)
// ends the wait: the rest would wait out their timeout for a group that
// RetryBusyPorts starts again on new ports anyway.
func WaitAllReady(ctx context.Context, servers []*Server, timeout time.Duration) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, len(servers))
	for _, s := range servers {
		go func() { errs <- s.WaitReady(ctx, timeout) }()
	}
	var all error
	for range servers {
		err := <-errs
		if errors.Is(err, ErrPortBusy) {
			return err
		}
		all = errors.Join(all, err)
	}
	return all
}

// StopAll ends a local deployment: it removes every proxy of proxies (nil:
// none) first, so that nothing reaches a server being stopped, kills each
// server (nil ones are skipped), and removes dir when removeDir (the
// deployment made it). Every error is returned, joined.
func StopAll(proxies *toxiproxy.ApiServer, servers []*Server, dir string, removeDir bool) error {
	var errs []error
	if proxies != nil {
		proxies.Collection.Clear()
	}
	for _, s := range servers {
		if s == nil {
			continue
		}
		if err := s.Kill(); err != nil {
			errs = append(errs, err)
		}
	}
	if removeDir {
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, fmt.Errorf("remove %s: %w", dir, err))
		}
	}
	return errors.Join(errs...)
}
