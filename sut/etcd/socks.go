package etcd

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// peerDialer is one member's way out to the other members: a SOCKS5 proxy
// (RFC 1928, CONNECT only, no authentication) that etcd's peer transport
// uses through HTTP_PROXY, and that sends each connection through this
// member's own link to the member it asked for.
//
// Why: every member dials the others at the peer URLs they advertise, one
// address per member for all. Behind one proxy per member, cutting a
// member's proxy would cut what everyone sends it, while what it sends
// (it dials too) still went through the others' proxies: no partition. Go's
// HTTP client, which etcd's peer transport is, honours HTTP_PROXY (also
// socks5://) for every address but a loopback one, so the members
// advertise 0.0.0.0 (a local address that is not loopback) and each one's
// SOCKS proxy maps the port it asks for to its own link to that member.
type peerDialer struct {
	from  string
	ln    net.Listener
	route map[int]string // a member's peer port -> this member's link to it

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// newPeerDialer listens on loopback and routes by destination port.
func newPeerDialer(from string, route map[int]string) (*peerDialer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("peer proxy of %s: %w", from, err)
	}
	d := &peerDialer{from: from, ln: ln, route: route, conns: map[net.Conn]struct{}{}}
	d.wg.Add(1)
	go d.serve()
	return d, nil
}

// URL is the proxy URL for the member's HTTP_PROXY.
func (d *peerDialer) URL() string { return "socks5://" + d.ln.Addr().String() }

func (d *peerDialer) serve() {
	defer d.wg.Done()
	for {
		c, err := d.ln.Accept()
		if err != nil {
			return
		}
		if !d.track(c) {
			_ = c.Close()
			return
		}
		d.wg.Add(1)
		go func() {
			defer d.wg.Done()
			defer d.untrack(c)
			d.handle(c)
		}()
	}
}

func (d *peerDialer) track(c net.Conn) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return false
	}
	d.conns[c] = struct{}{}
	return true
}

func (d *peerDialer) untrack(c net.Conn) {
	d.mu.Lock()
	delete(d.conns, c)
	d.mu.Unlock()
	_ = c.Close()
}

// handle serves one SOCKS5 connection: greeting, CONNECT, then relay.
func (d *peerDialer) handle(c net.Conn) {
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	port, err := socksHandshake(c)
	if err != nil {
		return
	}
	up, ok := d.route[port]
	if !ok {
		_, _ = c.Write([]byte{5, 4, 0, 1, 0, 0, 0, 0, 0, 0}) // host unreachable
		return
	}
	u, err := net.DialTimeout("tcp", up, 2*time.Second)
	if err != nil {
		_, _ = c.Write([]byte{5, 5, 0, 1, 0, 0, 0, 0, 0, 0}) // connection refused
		return
	}
	if !d.track(u) {
		_ = u.Close()
		return
	}
	defer d.untrack(u)
	if _, err := c.Write([]byte{5, 0, 0, 1, 0, 0, 0, 0, 0, 0}); err != nil {
		return
	}
	_ = c.SetDeadline(time.Time{})
	done := make(chan struct{}, 2)
	relay := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go relay(u, c)
	go relay(c, u)
	<-done // either side ended: end both, as a TCP proxy would
}

// socksHandshake reads the greeting and a CONNECT request and returns the
// destination port.
func socksHandshake(c net.Conn) (int, error) {
	var hdr [2]byte
	if _, err := io.ReadFull(c, hdr[:]); err != nil {
		return 0, err
	}
	if hdr[0] != 5 {
		return 0, fmt.Errorf("socks version %d", hdr[0])
	}
	methods := make([]byte, hdr[1])
	if _, err := io.ReadFull(c, methods); err != nil {
		return 0, err
	}
	if _, err := c.Write([]byte{5, 0}); err != nil { // no authentication
		return 0, err
	}
	var req [4]byte
	if _, err := io.ReadFull(c, req[:]); err != nil {
		return 0, err
	}
	if req[0] != 5 || req[1] != 1 {
		_, _ = c.Write([]byte{5, 7, 0, 1, 0, 0, 0, 0, 0, 0}) // command not supported
		return 0, errors.New("not a CONNECT")
	}
	var skip int
	switch req[3] {
	case 1:
		skip = 4
	case 4:
		skip = 16
	case 3:
		var l [1]byte
		if _, err := io.ReadFull(c, l[:]); err != nil {
			return 0, err
		}
		skip = int(l[0])
	default:
		return 0, fmt.Errorf("address type %d", req[3])
	}
	addr := make([]byte, skip+2)
	if _, err := io.ReadFull(c, addr); err != nil {
		return 0, err
	}
	return int(binary.BigEndian.Uint16(addr[skip:])), nil
}

// Close stops listening and ends every relayed connection.
func (d *peerDialer) Close() {
	d.mu.Lock()
	d.closed = true
	for c := range d.conns {
		_ = c.Close()
	}
	d.mu.Unlock()
	_ = d.ln.Close()
	d.wg.Wait()
}
