package local

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/lockharness/lockharness/sut"
)

// Faked reports whether the server runs under libfaketime (sut.Config.Faketime).
func (s *Server) Faked() bool { return s.ClockFile != "" }

// Clock is the server's current fake clock.
func (s *Server) Clock() sut.Clock {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.clock.Rate == 0 {
		return sut.RealClock
	}
	return s.clock
}

// SetClock makes the server's clock read real time + skew from now on,
// running at rate real seconds per second (1: normal speed). It takes effect
// at the server's next clock read (FAKETIME_NO_CACHE); ConfirmClock checks
// that it did.
func (s *Server) SetClock(skew time.Duration, rate float64) error {
	if !s.Faked() {
		return fmt.Errorf("set clock of %s: %w", s.Name, ErrNoFaketime)
	}
	if rate <= 0 || math.IsNaN(rate) || math.IsInf(rate, 0) {
		return fmt.Errorf("set clock of %s: rate must be positive, got %v", s.Name, rate)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clock = sut.Clock{Skew: skew, Rate: rate, Since: time.Now()}
	return s.writeClockLocked()
}

// ErrNoFaketime is wrapped when a clock fault targets a node that does not
// run under libfaketime (start the cluster with sut.Config.Faketime).
var ErrNoFaketime = errors.New("node does not run under libfaketime (set sut.Config.Faketime)")

// writeClockLocked writes the clock file libfaketime reads on every clock
// call (see FaketimeLine). It is replaced atomically, since a missing file
// reads as offset 0.
func (s *Server) writeClockLocked() error {
	line := FaketimeLine(s.clock, s.startedAt)
	tmp := s.ClockFile + ".tmp"
	if err := os.MkdirAll(filepath.Dir(s.ClockFile), 0o755); err != nil {
		return fmt.Errorf("write clock of %s: %w", s.Name, err)
	}
	if err := os.WriteFile(tmp, []byte(line), 0o644); err != nil {
		return fmt.Errorf("write clock of %s: %w", s.Name, err)
	}
	if err := os.Rename(tmp, s.ClockFile); err != nil {
		return fmt.Errorf("write clock of %s: %w", s.Name, err)
	}
	return nil
}

// FaketimeLine is the content of a libfaketime control file that makes a
// process started at started read clock c. libfaketime computes
// fake = start + (now−start)·rate + offset, where start is when the process
// loaded it, so the offset that gives the wanted skew at Since is
// skew + (Since−start)·(1−rate). The line always names the rate:
// libfaketime keeps the last rate when a line has none.
func FaketimeLine(c sut.Clock, started time.Time) string {
	if c.Rate == 0 {
		c = sut.RealClock
	}
	off := c.Skew.Seconds()
	if r := c.EffectiveRate(); r != 1 && !c.Since.IsZero() {
		off += c.Since.Sub(started).Seconds() * (1 - r)
	}
	return fmt.Sprintf("%+.6f x%.6f\n", off, c.EffectiveRate())
}

// ServerTime reads the server's own clock (ClockProbe): how far it is
// ahead of this process's clock, and the round trip of the reading.
func (s *Server) ServerTime(ctx context.Context, timeout time.Duration) (skew, rtt time.Duration, err error) {
	if s.ClockProbe == nil {
		return 0, 0, fmt.Errorf("read the clock of %s: no clock probe (Server.ClockProbe)", s.Name)
	}
	return s.ClockProbe(ctx, timeout)
}

// ConfirmClock polls the server's clock (ServerTime) until it reads what
// Clock says it should (within tolerance plus the round trip), or timeout passes, and
// returns the skew it observed. A clock fault is recorded only once it is
// confirmed: libfaketime reads its file lazily, and a stopped process does
// not read it at all.
//
// With a rate other than 1 the first reading also calibrates the instant
// libfaketime took as its start (the offset depends on it), so the skew
// does not jump when a drift begins.
func (s *Server) ConfirmClock(ctx context.Context, tolerance, timeout time.Duration) (time.Duration, error) {
	if tolerance <= 0 {
		tolerance = 50 * time.Millisecond
	}
	deadline := time.Now().Add(timeout)
	calibrated := false
	var last time.Duration
	var lastErr error
	for {
		obs, rtt, err := s.ServerTime(ctx, 500*time.Millisecond)
		if err == nil {
			c := s.Clock()
			want := c.SkewAt(time.Now().Add(-rtt / 2))
			diff := obs - want
			last, lastErr = obs, nil
			if diff.Abs() <= tolerance+rtt {
				return obs, nil
			}
			if r := c.EffectiveRate(); r != 1 && !calibrated && math.Abs(1-r) >= 0.01 {
				// diff = δ·(1−rate) where δ is the error in our guess of
				// libfaketime's start instant.
				calibrated = true
				s.mu.Lock()
				s.startedAt = s.startedAt.Add(time.Duration(float64(diff) / (1 - r)))
				err = s.writeClockLocked()
				s.mu.Unlock()
				if err != nil {
					return obs, err
				}
				continue
			}
		} else {
			lastErr = err
		}
		if time.Now().After(deadline) {
			if lastErr != nil {
				return 0, fmt.Errorf("confirm clock of %s: %w", s.Name, lastErr)
			}
			return last, fmt.Errorf("confirm clock of %s: reads %+v from real time, want %v after %v", s.Name, last, s.Clock(), timeout)
		}
		select {
		case <-ctx.Done():
			return last, fmt.Errorf("confirm clock of %s: %w", s.Name, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}
