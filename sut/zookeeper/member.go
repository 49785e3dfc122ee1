package zookeeper

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"

	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/sut/local"
)

// FourLetter sends a four-letter word (srvr, ruok, …) to the server at
// addr, directly, and returns its answer.
func FourLetter(ctx context.Context, addr, word string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", fmt.Errorf("%s to %s: %w", word, addr, err)
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	if _, err := io.WriteString(conn, word); err != nil {
		return "", fmt.Errorf("%s to %s: %w", word, addr, err)
	}
	b, err := io.ReadAll(io.LimitReader(conn, 1<<16))
	if err != nil {
		return "", fmt.Errorf("%s to %s: %w", word, addr, err)
	}
	return string(b), nil
}

// Mode is what the server at addr is now, from its srvr answer: "leader"
// or "follower" (or "standalone"). A server that is electing answers that
// it is not serving requests: an error.
func Mode(ctx context.Context, addr string) (string, error) {
	out, err := FourLetter(ctx, addr, "srvr")
	if err != nil {
		return "", err
	}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if m, ok := strings.CutPrefix(sc.Text(), "Mode: "); ok {
			return strings.TrimSpace(m), nil
		}
	}
	return "", fmt.Errorf("zookeeper at %s is not serving: %s", addr, strings.TrimSpace(out))
}

// serving is nil when the server at addr leads or follows.
func serving(ctx context.Context, addr string) error {
	_, err := Mode(ctx, addr)
	return err
}

// Leader is the server that leads now, as the servers that answer say
// (each asked directly); an error when none leads or two do.
func (c *Cluster) Leader(ctx context.Context) (string, error) {
	var leaders []string
	for _, s := range c.Servers {
		if !s.Running() || s.Paused() {
			continue
		}
		if m, err := Mode(ctx, s.Addr()); err == nil && m == "leader" {
			leaders = append(leaders, s.Name)
		}
	}
	switch len(leaders) {
	case 0:
		return "", fmt.Errorf("no zookeeper server leads")
	case 1:
		return leaders[0], nil
	}
	return "", fmt.Errorf("zookeeper servers %v all say they lead", leaders)
}

// lead makes server name the leader, so that a schedule written before
// the run can name it: ZooKeeper has no leader transfer, so while another
// leads, that one is restarted; the election that follows goes to name,
// which has the highest id and an equal history. It waits until every
// server serves under name.
func (c *Cluster) lead(ctx context.Context, name string) error {
	deadline := time.Now().Add(readyTimeout)
	for {
		l, err := c.Leader(ctx)
		if err == nil && l == name {
			if err := local.WaitEach(ctx, c.Servers, time.Until(deadline), serving); err != nil {
				return fmt.Errorf("make %s the zookeeper leader: %w", name, err)
			}
			if l, err = c.Leader(ctx); err == nil && l == name {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("make %s the zookeeper leader: leader %q (%v)", name, l, err)
		}
		if err == nil && l != name {
			s, _ := local.FindServer(c.Servers, l)
			if err := s.Kill(); err != nil {
				return fmt.Errorf("make %s the zookeeper leader: restart %s: %w", name, l, err)
			}
			if err := s.Start(ctx, false); err != nil {
				return fmt.Errorf("make %s the zookeeper leader: restart %s: %w", name, l, err)
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// member is a ZooKeeper server behind the seam: a process that can be
// killed, restarted (on its data directory: it rejoins with what it
// logged), paused, and, under libfaketime, have its clock set.
type member struct{ *local.Server }

func (m member) Name() string   { return m.Server.Name }
func (m member) Kind() sut.Kind { return sut.KindLock }
func (m member) Capabilities() sut.Capabilities {
	cs := sut.Capabilities{sut.CanKill, sut.CanPause}
	if m.Faked() {
		cs = append(cs, sut.CanSetClock)
	}
	return cs
}
func (m member) Kill(context.Context) error { return m.Server.Kill() }

// Start restarts a killed server and waits until it serves, which needs a
// quorum: a server restarted while most others are down waits until they
// return (and its start times out).
func (m member) Start(ctx context.Context) error {
	if m.Running() {
		return nil
	}
	if err := m.Server.Start(ctx, false); err != nil {
		return err
	}
	return m.WaitReady(ctx, readyTimeout)
}
func (m member) Pause(context.Context) error  { return m.Server.Pause() }
func (m member) Resume(context.Context) error { return m.Server.Resume() }

// ConfirmClock polls the server's own wall clock until it reads what Clock
// says it should (within tolerance plus the round trip), or timeout
// passes, and returns the skew it observed. The clock is read from the
// server's log: each four-letter word is logged with the time the JVM
// reads (System.currentTimeMillis, through libfaketime), so the stamp on
// the line for a srvr sent now is the server's clock now.
func (m member) ConfirmClock(ctx context.Context, tolerance, timeout time.Duration) (time.Duration, error) {
	if tolerance <= 0 {
		tolerance = 50 * time.Millisecond
	}
	deadline := time.Now().Add(timeout)
	var last time.Duration
	var lastErr error
	for {
		obs, rtt, err := m.ServerTime(ctx)
		if err == nil {
			want := m.Clock().SkewAt(time.Now().Add(-rtt / 2))
			last, lastErr = obs, nil
			// The stamp has millisecond resolution.
			if (obs - want).Abs() <= tolerance+rtt+time.Millisecond {
				return obs, nil
			}
		} else {
			lastErr = err
		}
		if time.Now().After(deadline) {
			if lastErr != nil {
				return 0, fmt.Errorf("confirm clock of %s: %w", m.Server.Name, lastErr)
			}
			return last, fmt.Errorf("confirm clock of %s: reads %v from real time, want %+v after %v", m.Server.Name, last, m.Clock(), timeout)
		}
		select {
		case <-ctx.Done():
			return last, fmt.Errorf("confirm clock of %s: %w", m.Server.Name, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// ServerTime is how far the server's wall clock reads from the harness's,
// and the round trip of the reading: a srvr, whose log line carries the
// server's time, compared with the middle of the round trip.
func (m member) ServerTime(ctx context.Context) (skew, rtt time.Duration, err error) {
	t0 := time.Now()
	if _, err := FourLetter(ctx, m.Addr(), "srvr"); err != nil {
		return 0, 0, err
	}
	t1 := time.Now()
	// The line is written while the answer goes out; give it a moment.
	var st time.Time
	for i := 0; i < 20; i++ {
		if st, err = lastSrvrStamp(m.LogPath()); err == nil {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err != nil {
		return 0, 0, err
	}
	rtt = t1.Sub(t0)
	return st.Sub(t0.Add(rtt / 2)), rtt, nil
}

// lastSrvrStamp is the time stamp of the last "Processing srvr command"
// line in the log at path, read from its last 256 KiB.
func lastSrvrStamp(path string) (time.Time, error) {
	f, err := os.Open(path)
	if err != nil {
		return time.Time{}, fmt.Errorf("read the clock from the log: %w", err)
	}
	defer f.Close()
	const tail = 256 << 10
	if fi, err := f.Stat(); err == nil && fi.Size() > tail {
		if _, err := f.Seek(fi.Size()-tail, io.SeekStart); err != nil {
			return time.Time{}, err
		}
	}
	var stamp string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.Contains(line, "Processing srvr command") {
			stamp, _, _ = strings.Cut(line, " ")
		}
	}
	if stamp == "" {
		return time.Time{}, fmt.Errorf("read the clock from the log: no srvr line in %s", path)
	}
	t, err := time.Parse(logTimeLayout, stamp)
	if err != nil {
		return time.Time{}, fmt.Errorf("read the clock from the log: %w", err)
	}
	return t, nil
}

// peerLink is one server's path to another: two proxies, to the other's
// quorum port and to its election port, faulted together.
type peerLink struct {
	quorum, election *local.Link
}

var (
	_ sut.Link         = (*peerLink)(nil)
	_ sut.ReplyDropper = (*peerLink)(nil)
)

func (p *peerLink) Name() string { return p.quorum.Name() }
func (p *peerLink) From() string { return p.quorum.From() }
func (p *peerLink) To() string   { return p.quorum.To() }

// Addr is the quorum proxy's address; the server's connect shim sends its
// election connections to the election proxy.
func (p *peerLink) Addr() string { return p.quorum.Addr() }

func (p *peerLink) both(f func(l *local.Link) error) error {
	if err := f(p.quorum); err != nil {
		return err
	}
	return f(p.election)
}

func (p *peerLink) Cut() error         { return p.both((*local.Link).Cut) }
func (p *peerLink) DropReplies() error { return p.both((*local.Link).DropReplies) }
func (p *peerLink) Uncut(ctx context.Context) error {
	return p.both(func(l *local.Link) error { return l.Uncut(ctx) })
}
func (p *peerLink) IsCut() bool { return p.quorum.IsCut() || p.election.IsCut() }
func (p *peerLink) Slow(latency, jitter time.Duration) error {
	return p.both(func(l *local.Link) error { return l.Slow(latency, jitter) })
}
func (p *peerLink) Unslow(ctx context.Context) error {
	return p.both(func(l *local.Link) error { return l.Unslow(ctx) })
}
func (p *peerLink) Heal(ctx context.Context) {
	p.quorum.Heal(ctx)
	p.election.Heal(ctx)
}

// Faults are the quorum proxy's, and the election proxy's it lacks.
func (p *peerLink) Faults() []string {
	out := p.quorum.Faults()
	for _, f := range p.election.Faults() {
		dup := false
		for _, g := range out {
			dup = dup || g == f
		}
		if !dup {
			out = append(out, f)
		}
	}
	return out
}
