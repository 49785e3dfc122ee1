package redis

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockharness/lockharness/sut"
)

// The clients of a replicated deployment reach its master through their
// own links, whichever backend runs it: with Sentinel, go-redis's failover
// client asks the sentinels and dials the master they name through the
// client's link to it (AnnounceDialer); with manual failover, the client
// dials the link to the master the harness set (MasterDialer), and a
// failover closes its connections so the next command dials the new one.

// MasterDialer dials, for one client slot, the link to the master now, and
// remembers its connections so CloseAll can close them: the client's pool
// then redials, and reaches the new master.
type MasterDialer struct {
	addr    func() (string, error) // the client's link to the master now
	timeout time.Duration

	mu    sync.Mutex
	conns map[*trackedConn]struct{}
}

// NewMasterDialer dials what addr says is the client's link to the master
// at each dial.
func NewMasterDialer(addr func() (string, error), timeout time.Duration) *MasterDialer {
	return &MasterDialer{addr: addr, timeout: timeout, conns: map[*trackedConn]struct{}{}}
}

// Dial is a go-redis Dialer: the address go-redis asks for is ignored.
func (d *MasterDialer) Dial(ctx context.Context, _, _ string) (net.Conn, error) {
	a, err := d.addr()
	if err != nil {
		return nil, fmt.Errorf("dial master: %w", err)
	}
	nd := net.Dialer{Timeout: d.timeout}
	conn, err := nd.DialContext(ctx, "tcp", a)
	if err != nil {
		return nil, err
	}
	tc := &trackedConn{Conn: conn, d: d}
	d.mu.Lock()
	d.conns[tc] = struct{}{}
	d.mu.Unlock()
	return tc, nil
}

// CloseAll closes every connection Dial made that is still open.
func (d *MasterDialer) CloseAll() {
	d.mu.Lock()
	conns := make([]*trackedConn, 0, len(d.conns))
	for tc := range d.conns {
		conns = append(conns, tc)
	}
	d.mu.Unlock()
	for _, tc := range conns {
		_ = tc.Close()
	}
}

type trackedConn struct {
	net.Conn
	d    *MasterDialer
	once sync.Once
}

func (t *trackedConn) Close() error {
	t.once.Do(func() {
		t.d.mu.Lock()
		delete(t.d.conns, t)
		t.d.mu.Unlock()
	})
	return t.Conn.Close()
}

// NewMasterClient is a client of the master that d dials, with the
// harness's client settings, named MasterNodeName.
func NewMasterClient(d *MasterDialer, o sut.ClientOptions) *redis.Client {
	ro := Options(o.WithDefaults(), MasterNodeName+":0")
	ro.Dialer = d.Dial
	return redis.NewClient(ro)
}

// AnnounceDialer dials, for an address the deployment hands out (Sentinel's
// answer for the master, a sentinel's own address), the client's own link
// to that node instead: link returns it, or false for an address that is
// dialed as it is (the client's links to the sentinels).
func AnnounceDialer(link func(addr string) (string, bool), timeout time.Duration) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if a, ok := link(addr); ok {
			addr = a
		}
		nd := net.Dialer{Timeout: timeout}
		return nd.DialContext(ctx, network, addr)
	}
}

// AnnouncedLinks is the link function of AnnounceDialer for a fixed map of
// announced addresses to node names and the client's links by node name.
func AnnouncedLinks(announced map[string]string, linkAddr func(node string) (string, bool)) func(addr string) (string, bool) {
	return func(addr string) (string, bool) {
		if name, ok := announced[addr]; ok {
			return linkAddr(name)
		}
		return "", false
	}
}

// NewFailoverClient is go-redis's Sentinel client with the harness's
// settings (no retries: a command whose reply was lost is info, never run
// twice), asking the sentinels at sentinels and dialing through dial.
func NewFailoverClient(masterName string, sentinels []string, dial func(ctx context.Context, network, addr string) (net.Conn, error), o sut.ClientOptions) *redis.Client {
	ro := Options(o.WithDefaults(), "")
	return redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName:      masterName,
		SentinelAddrs:   sentinels,
		Dialer:          dial,
		DialTimeout:     ro.DialTimeout,
		ReadTimeout:     ro.ReadTimeout,
		WriteTimeout:    ro.WriteTimeout,
		MaxRetries:      ro.MaxRetries,
		DialerRetries:   ro.DialerRetries,
		PoolSize:        ro.PoolSize,
		PoolTimeout:     ro.PoolTimeout,
		MinRetryBackoff: ro.MinRetryBackoff,
		MaxRetryBackoff: ro.MaxRetryBackoff,
	})
}
