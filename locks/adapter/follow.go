package adapter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockharness/lockharness/sut"
)

// follower gives an adapter an address for a node that has none: a
// replicated Redis topology's master, which the harness's own clients reach
// through a go-redis client that follows it. Each connection the adapter
// opens to the follower's address is joined to one that the node's
// go-redis client dials at that moment: the master now, through this
// client's own link (with manual failover sut/redis's MasterDialer; with
// Sentinel go-redis asks the sentinels, through the client's links to
// them). When a failover closes those upstream connections (SetPrimary
// closes the MasterDialer's), the adapter's connection closes with them, so
// its library reconnects and reaches the new master, as the harness's
// in-process clients do.
type follower struct {
	ln   net.Listener
	dial func(ctx context.Context, network, addr string) (net.Conn, error)
	addr string // what the go-redis client asks its dialer for
	wait time.Duration

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// newFollower listens on a free local port for the node's client c.
func newFollower(c *redis.Client) (*follower, error) {
	o := c.Options()
	if o.Dialer == nil {
		return nil, errors.New("its go-redis client has no dialer to follow")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	wait := o.DialTimeout
	if wait <= 0 {
		wait = 5 * time.Second
	}
	f := &follower{ln: ln, dial: o.Dialer, addr: o.Addr, wait: wait, conns: map[net.Conn]struct{}{}}
	f.wg.Add(1)
	go f.serve()
	return f, nil
}

// Addr is the address the adapter dials.
func (f *follower) Addr() string { return f.ln.Addr().String() }

func (f *follower) serve() {
	defer f.wg.Done()
	for {
		down, err := f.ln.Accept()
		if err != nil {
			return // closed
		}
		if !f.track(down) {
			down.Close()
			return
		}
		f.wg.Add(1)
		go f.join(down)
	}
}

// join dials the node for the adapter's connection down and copies both
// ways until either side ends; then both are closed. A failed dial closes
// down at once: the adapter sees a connection refused by the node.
func (f *follower) join(down net.Conn) {
	defer f.wg.Done()
	defer f.untrack(down)
	ctx, cancel := context.WithTimeout(context.Background(), f.wait)
	up, err := f.dial(ctx, "tcp", f.addr)
	cancel()
	if err != nil {
		return
	}
	if !f.track(up) {
		up.Close()
		return
	}
	defer f.untrack(up)
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, down); done <- struct{}{} }()
	go func() { _, _ = io.Copy(down, up); done <- struct{}{} }()
	<-done
	up.Close()
	down.Close()
	<-done
}

func (f *follower) track(c net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return false
	}
	f.conns[c] = struct{}{}
	return true
}

func (f *follower) untrack(c net.Conn) {
	c.Close()
	f.mu.Lock()
	delete(f.conns, c)
	f.mu.Unlock()
}

// Close stops listening, closes every connection and waits for the
// goroutines.
func (f *follower) Close() {
	f.mu.Lock()
	f.closed = true
	conns := make([]net.Conn, 0, len(f.conns))
	for c := range f.conns {
		conns = append(conns, c)
	}
	f.mu.Unlock()
	f.ln.Close()
	for _, c := range conns {
		c.Close()
	}
	f.wg.Wait()
}

// nodeAddrs are the addresses the adapter must dial: the client's own
// links, or for a node reached through a following go-redis client (a
// replicated topology's master) a follower's, returned for the caller to
// close.
func nodeAddrs(name string, nodes []sut.ClientNode) ([]nodeAddr, []*follower, error) {
	if len(nodes) == 0 {
		return nil, nil, fmt.Errorf("adapter %s: no nodes", name)
	}
	out := make([]nodeAddr, 0, len(nodes))
	var fs []*follower
	fail := func(err error) ([]nodeAddr, []*follower, error) {
		for _, f := range fs {
			f.Close()
		}
		return nil, nil, err
	}
	for _, n := range nodes {
		addr := n.Addr
		if addr == "" {
			c, ok := n.Client.(*redis.Client)
			if !ok {
				return fail(errors.New("adapter " + name + ": node " + n.Name + " has no address and no go-redis client to follow"))
			}
			f, err := newFollower(c)
			if err != nil {
				return fail(fmt.Errorf("adapter %s: node %s: %w", name, n.Name, err))
			}
			fs = append(fs, f)
			addr = f.Addr()
		}
		out = append(out, nodeAddr{Name: n.Name, Addr: addr})
	}
	return out, fs, nil
}
