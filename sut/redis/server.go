package redis

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/sut/local"
)

// InstallHint says how to get the Redis binaries.
const InstallHint = "install them with `apt-get install -y redis-server redis-sentinel` (Debian/Ubuntu) or `make deps`, or put them on PATH"

// LookBinary finds a Redis program (redis-server, redis-sentinel) on PATH,
// with an error that says how to install it.
func LookBinary(name string) (string, error) { return local.LookBinary(name, InstallHint) }

// defaultReadyTimeout bounds a redis-server's start.
const defaultReadyTimeout = 10 * time.Second

// NewServer is a redis-server (or, with a redis-sentinel binary, a
// sentinel) named name on port, in dir: a local.Server that is ready when
// it answers PING as the process the harness started (Probe).
func NewServer(name string, port int, bin, dir string) *local.Server {
	s := &local.Server{Name: name, Port: port, Binary: bin, Dir: dir}
	Probe(s)
	return s
}

// Storage is the Redis server that holds the protected resource of a
// deployment, whatever its system: "storage", on port, in dir/storage. No
// fault reaches it.
func Storage(bin, dir string, port int) *local.Server {
	sdir := filepath.Join(dir, "storage")
	s := NewServer("storage", port, bin, sdir)
	s.Config = RedisConfig(port, sdir, "storage")
	return s
}

// Probe makes s a Redis server to the toolkit: it is ready when it answers
// PING and INFO names its process (polled every 5ms: a PING is cheap), and
// its clock is read with TIME.
func Probe(s *local.Server) {
	s.Ready = func(ctx context.Context) error { return ready(ctx, s) }
	s.ReadyEvery = 5 * time.Millisecond
	s.ClockProbe = func(ctx context.Context, timeout time.Duration) (time.Duration, time.Duration, error) {
		return ServerTime(ctx, s.Name, s.Addr(), timeout)
	}
}

// ready is nil when the server at s's address answers PING and is s's
// process. Between choosing a free port and binding it, another
// deployment's server may have taken it; then ours exits, and the PONG was
// the other's: an error wrapping local.ErrPortBusy.
func ready(ctx context.Context, s *local.Server) error {
	if err := Ping(ctx, s.Addr(), 200*time.Millisecond); err != nil {
		return err
	}
	pid, err := ServerPID(ctx, s.Addr(), 200*time.Millisecond)
	if err != nil {
		return err
	}
	if pid != s.PID() {
		return fmt.Errorf("%w: 127.0.0.1:%d answers as process %d, not ours (%d)", local.ErrPortBusy, s.Port, pid, s.PID())
	}
	return nil
}

// ServerTime reads the clock of server name at addr with TIME over a
// direct connection
// and returns how far it is ahead of this process's clock, taking the
// midpoint of the round trip as the instant it was read, and the round
// trip.
func ServerTime(ctx context.Context, name, addr string, timeout time.Duration) (skew, rtt time.Duration, err error) {
	cl := NewRedisClient(addr, sut.ClientOptions{Timeout: timeout, PoolSize: 1})
	defer cl.Close()
	t0 := time.Now()
	st, err := cl.Time(ctx).Result()
	t1 := time.Now()
	if err != nil {
		return 0, 0, fmt.Errorf("TIME on %s: %w", name, err)
	}
	rtt = t1.Sub(t0)
	mid := t0.Add(rtt / 2)
	return st.Sub(mid), rtt, nil
}

// Ping sends PING over a fresh TCP connection and expects +PONG.
func Ping(ctx context.Context, addr string, timeout time.Duration) error {
	d := net.Dialer{Timeout: timeout}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(timeout))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	buf := make([]byte, 7)
	n, err := c.Read(buf)
	if err != nil {
		return err
	}
	if !strings.HasPrefix(string(buf[:n]), "+PONG") {
		return fmt.Errorf("unexpected reply %q", buf[:n])
	}
	return nil
}

// ServerPID asks the server at addr for its process id (INFO server).
func ServerPID(ctx context.Context, addr string, timeout time.Duration) (int, error) {
	d := net.Dialer{Timeout: timeout}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(timeout))
	if _, err := c.Write([]byte("*2\r\n$4\r\nINFO\r\n$6\r\nserver\r\n")); err != nil {
		return 0, err
	}
	r := bufio.NewReader(c)
	head, err := r.ReadString('\n')
	if err != nil {
		return 0, err
	}
	if !strings.HasPrefix(head, "$") {
		return 0, fmt.Errorf("INFO server: unexpected reply %q", strings.TrimSpace(head))
	}
	n, err := strconv.Atoi(strings.TrimSpace(head[1:]))
	if err != nil || n < 0 {
		return 0, fmt.Errorf("INFO server: bad length in %q", strings.TrimSpace(head))
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
			return strconv.Atoi(v)
		}
	}
	return 0, fmt.Errorf("INFO server: no process_id")
}
