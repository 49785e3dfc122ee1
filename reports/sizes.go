package reports

import (
	"cmp"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/lockharness/lockharness/history"
)

// Scale is what a run's faults are measured against: a pause matters as a
// fraction of the lease (a pause of 1.5 × TTL outlives it, one of 0.2 ×
// TTL does not), a clock jump as a multiple of it, and for Redlock a clock
// that runs fast or slow against the drift the lock allows for.
type Scale struct {
	TTL time.Duration
	// Drift is the clock drift the lock allows for (Redlock's 1% of the
	// TTL plus 2ms); zero for a lock that allows for none.
	Drift time.Duration
}

// ScaleOf reads the scale of a run from its record's facts: the
// workload's TTL, and the drift allowance of a Redlock-style lock; no TTL
// for a lock without a lease. ok is false when the record has no facts (a
// run without run.json).
func ScaleOf(rec Record) (Scale, bool) {
	if rec.Facts == nil {
		return Scale{}, false
	}
	if rec.Facts.NoLease {
		return Scale{}, true // no TTL to measure faults against
	}
	return Scale{TTL: rec.Facts.TTL, Drift: rec.Facts.Drift}, true
}

// Times says d as a multiple of the TTL: "1.5 × TTL (1 s)".
func (s Scale) Times(d time.Duration) string {
	return fmt.Sprintf("%s × TTL (%s)", ratio(float64(d)/float64(s.TTL)), fmtLength(s.TTL))
}

// ratio writes a ratio with the precision a reader needs: whole numbers
// from 10 up, one decimal from 1, two significant digits below.
func ratio(r float64) string {
	switch {
	case r >= 10:
		return strconv.FormatFloat(math.Round(r), 'f', -1, 64)
	case r >= 1:
		return strconv.FormatFloat(math.Round(r*10)/10, 'f', -1, 64)
	case r <= 0:
		return "0"
	}
	return strconv.FormatFloat(r, 'g', 2, 64)
}

// fmtLength writes a length of time for sentences: "300 ms", "1.5 s",
// "60 s".
func fmtLength(d time.Duration) string {
	if d < 0 {
		d = -d
	}
	if d < time.Second {
		return fmt.Sprintf("%d ms", d.Round(time.Millisecond).Milliseconds())
	}
	return strconv.FormatFloat(math.Round(d.Seconds()*10)/10, 'f', -1, 64) + " s"
}

// Size says how large the fault was against the scale, or "" when it has
// no size that matters (an instant: a flush, a promotion): a clock jump as
// a multiple of the TTL, "clock jump +60 s on n3 = 60 × TTL (1 s)"; a
// clock rate as what it gains or loses over one TTL, against Redlock's
// drift allowance where the lock has one; a pause or stall asked for a
// length by that length; any other fault by how long it lasted, when a
// stop event or the final heal ended it: "partition 2.1 s = 2.1 × TTL
// (1 s)".
func (f Fault) Size(s Scale) string {
	if s.TTL <= 0 {
		return ""
	}
	on := ""
	if len(f.Targets) > 0 {
		on = " on " + targetList(f.Targets, 3)
	}
	switch {
	case f.Family == "clock" && (f.HasDelta || f.HasOffset):
		d := f.Delta
		if !f.HasDelta {
			d = f.Offset
		}
		out := fmt.Sprintf("clock jump %s%s = %s", fmtOffset(d), on, s.Times(d.Abs()))
		if s.Drift > 0 {
			out += fmt.Sprintf(", %s × Redlock's drift allowance (%s)", ratio(float64(d.Abs())/float64(s.Drift)), fmtLength(s.Drift))
		}
		return out
	case f.Family == "clock" && f.Rate > 0:
		gain := time.Duration(math.Abs(f.Rate-1) * float64(s.TTL))
		verb := "gains"
		if f.Rate < 1 {
			verb = "loses"
		}
		out := fmt.Sprintf("clock rate ×%s%s %s %s per TTL (%s) = %s × TTL", strconv.FormatFloat(f.Rate, 'g', -1, 64), on, verb, fmtLength(gain), fmtLength(s.TTL), ratio(math.Abs(f.Rate-1)))
		if s.Drift > 0 {
			out += fmt.Sprintf(", %s × Redlock's drift allowance (%s): the drift is what matters", ratio(float64(gain)/float64(s.Drift)), fmtLength(s.Drift))
		}
		return out
	case f.Family == "clock" && len(f.Strobe) == 2:
		swing := (f.Strobe[0] - f.Strobe[1]).Abs()
		return fmt.Sprintf("clock strobe%s swinging %s = %s", on, fmtLength(swing), s.Times(swing))
	case f.Family == "clock":
		return ""
	}
	if f.Kind.Instant {
		return ""
	}
	name := cmp.Or(f.Kind.Label, f.Family)
	if f.Asked > 0 {
		return fmt.Sprintf("%s %s%s = %s", name, fmtLength(f.Asked), on, s.Times(f.Asked))
	}
	if (f.Stopped || f.Healed) && f.End > f.Start {
		d := time.Duration(f.End - f.Start)
		return fmt.Sprintf("%s %s%s = %s", name, fmtLength(d), on, s.Times(d))
	}
	return ""
}

// ClientPauseSizes says how long each client pause of the history was
// against the scale: "client pause (process 1) 1.5 s = 1.5 × TTL (1 s)".
// A pause the nemesis asked for is also a fault (Fault.Size); this is the
// pause the client took, a GC pause of the workload's own included.
func ClientPauseSizes(ops []history.Op, s Scale) []string {
	if s.TTL <= 0 {
		return nil
	}
	var out []string
	for _, op := range ops {
		if op.F != history.FPause || op.Type != history.Invoke || op.Process.IsNemesis() || op.Value == nil || op.Value.Duration <= 0 {
			continue
		}
		d := time.Duration(op.Value.Duration)
		where := ""
		if op.Value.Detail != "" {
			where = ", at " + op.Value.Detail
		}
		out = append(out, fmt.Sprintf("client pause (process %d at %s%s) %s = %s", op.Process, fmtTime(op.Time), where, fmtLength(d), s.Times(d)))
	}
	return out
}

// faultSizes lists the size of every fault, and of every client pause
// (clientFaults: the invocations of the client pauses and crashes),
// against the run's scale, in the order they began; nil when the record
// does not say the TTL.
func faultSizes(faults []Fault, clientFaults []history.Op, rec Record) []string {
	s, ok := ScaleOf(rec)
	if !ok {
		return nil
	}
	var out []string
	for _, f := range faults {
		if f.Family == "pause-client" {
			continue // the client's own pause, below, says where it struck
		}
		if w := f.Size(s); w != "" {
			out = append(out, w)
		}
	}
	out = append(out, ClientPauseSizes(clientFaults, s)...)
	return out
}
