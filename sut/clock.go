package sut

import (
	"fmt"
	"time"
)

// Clock is a node's clock as the harness set it: at the real instant t the
// node reads t + SkewAt(t), where the skew is Skew at Since and grows by
// Rate−1 seconds per real second after it. The zero Clock (and Rate 1,
// Skew 0) is real time.
type Clock struct {
	Skew  time.Duration
	Rate  float64
	Since time.Time
}

// RealClock is the clock of a node without clock faults.
var RealClock = Clock{Rate: 1}

// EffectiveRate is Rate, with the zero value meaning 1.
func (c Clock) EffectiveRate() float64 {
	if c.Rate == 0 {
		return 1
	}
	return c.Rate
}

// SkewAt is how far the node's clock is ahead of real time at t (negative:
// behind).
func (c Clock) SkewAt(t time.Time) time.Duration {
	r := c.EffectiveRate()
	if r == 1 || c.Since.IsZero() {
		return c.Skew
	}
	return c.Skew + time.Duration(float64(t.Sub(c.Since))*(r-1))
}

// Real reports whether the clock is real time.
func (c Clock) Real() bool { return c.Skew == 0 && c.EffectiveRate() == 1 }

func (c Clock) String() string {
	if c.EffectiveRate() == 1 {
		return fmt.Sprintf("%+v", c.Skew)
	}
	return fmt.Sprintf("%+v x%.3g", c.Skew, c.EffectiveRate())
}
