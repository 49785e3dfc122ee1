package reports

import (
	"testing"
	"time"

	"github.com/lockharness/lockharness/history"
)

func TestRatioAndLength(t *testing.T) {
	for _, c := range []struct {
		r    float64
		want string
	}{{1.5, "1.5"}, {60, "60"}, {2.1, "2.1"}, {2.04, "2"}, {0.25, "0.25"}, {0.554, "0.55"}, {454.5, "455"}, {0, "0"}, {0.012, "0.012"}} {
		if got := ratio(c.r); got != c.want {
			t.Errorf("ratio(%v) = %q, want %q", c.r, got, c.want)
		}
	}
	for _, c := range []struct {
		d    time.Duration
		want string
	}{{1500 * time.Millisecond, "1.5 s"}, {time.Minute, "60 s"}, {300 * time.Millisecond, "300 ms"}, {time.Second, "1 s"}, {-2 * time.Second, "2 s"}} {
		if got := fmtLength(c.d); got != c.want {
			t.Errorf("fmtLength(%v) = %q, want %q", c.d, got, c.want)
		}
	}
}

func TestFaultSize(t *testing.T) {
	s := Scale{TTL: time.Second}
	redlock := Scale{TTL: 2 * time.Second, Drift: 22 * time.Millisecond}
	sec := int64(time.Second)
	for _, c := range []struct {
		name string
		f    Fault
		s    Scale
		want string
	}{
		{"partition stopped", Fault{Family: "partition", Targets: []string{"c0->n1"}, Start: sec, End: 3100 * int64(time.Millisecond), Stopped: true}, s,
			"partition 2.1 s on c0->n1 = 2.1 × TTL (1 s)"},
		{"partition to the end of the history: no size", Fault{Family: "partition", Start: sec, End: 5 * sec}, s, ""},
		{"client pause asked", Fault{Family: "pause-client", Kind: kindOf("pause-client"), Asked: 1500 * time.Millisecond, Start: sec, End: 9 * sec, Healed: true}, s,
			"client pause 1.5 s = 1.5 × TTL (1 s)"},
		{"clock jump", Fault{Family: "clock", Targets: []string{"n3"}, Delta: time.Minute, HasDelta: true}, s,
			"clock jump +60 s on n3 = 60 × TTL (1 s)"},
		{"clock jump, Redlock", Fault{Family: "clock", Targets: []string{"n3"}, Delta: 10 * time.Second, HasDelta: true}, redlock,
			"clock jump +10 s on n3 = 5 × TTL (2 s), 455 × Redlock's drift allowance (22 ms)"},
		{"clock rate, Redlock", Fault{Family: "clock", Targets: []string{"n1"}, Rate: 1.05}, redlock,
			"clock rate ×1.05 on n1 gains 100 ms per TTL (2 s) = 0.05 × TTL, 4.5 × Redlock's drift allowance (22 ms): the drift is what matters"},
		{"clock strobe", Fault{Family: "clock", Strobe: []time.Duration{-time.Second, time.Second}}, s,
			"clock strobe swinging 2 s = 2 × TTL (1 s)"},
		{"an instant", Fault{Family: "promote", Start: sec, End: sec}, s, ""},
		{"a crash, whose window lasts to the heal", Fault{Family: "crash-client", Kind: kindOf("crash-client"), Start: sec, End: 5 * sec, Healed: true}, s, ""},
		{"a node pause, as its record names it", Fault{Family: "pause", Kind: kindOf("pause"), Start: sec, End: 3 * sec, Stopped: true}, s,
			"node pause 2 s = 2 × TTL (1 s)"},
		{"a kind the record does not name", Fault{Family: "flood", Start: sec, End: 2 * sec, Stopped: true}, s,
			"flood 1 s = 1 × TTL (1 s)"},
		{"no scale", Fault{Family: "partition", Start: sec, End: 2 * sec, Stopped: true}, Scale{}, ""},
	} {
		if got := c.f.Size(c.s); got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}

func TestScaleOf(t *testing.T) {
	if s, ok := ScaleOf(Record{Facts: &Facts{TTL: 3 * time.Second}}); !ok || s.TTL != 3*time.Second || s.Drift != 0 {
		t.Errorf("token: %+v %v", s, ok)
	}
	if s, ok := ScaleOf(Record{Facts: &Facts{TTL: 2 * time.Second, Drift: 22 * time.Millisecond}}); !ok || s.Drift != 22*time.Millisecond {
		t.Errorf("redlock: %+v %v, want the drift the record says", s, ok)
	}
	if _, ok := ScaleOf(record(RunMeta{Lock: "token"})); ok {
		t.Errorf("a run without facts has no scale")
	}
}

// A client pause is sized by what the client took, and says where.
func TestClientPauseSizes(t *testing.T) {
	ops := []history.Op{
		{Process: 1, Type: history.Invoke, F: history.FPause, Time: 380 * int64(time.Millisecond), Value: &history.Value{Duration: int64(2500 * time.Millisecond)}},
		{Process: 1, Type: history.OK, F: history.FPause, Time: 2880 * int64(time.Millisecond), Value: &history.Value{Duration: int64(2500 * time.Millisecond)}},
	}
	got := ClientPauseSizes(ops, Scale{TTL: time.Second})
	if len(got) != 1 || got[0] != "client pause (process 1 at 0.38 s) 2.5 s = 2.5 × TTL (1 s)" {
		t.Errorf("got %q", got)
	}
}

// A lock without a lease (a database row lock) has no TTL to measure
// faults against, and a killed connection is an instant.
func TestNoLeaseLockHasNoFaultSizes(t *testing.T) {
	rec := Record{RunMeta: RunMeta{Lock: "mysql-for-update"}, Facts: &Facts{NoLease: true}}
	if s, ok := ScaleOf(rec); !ok || s.TTL != 0 {
		t.Fatalf("scale of a lock without a lease: %+v, %v; want no TTL", s, ok)
	}
	if got := (Fault{Family: "kill-connection", Kind: kindOf("kill-connection"), Stopped: true, Start: 1, End: 2e9}).Size(Scale{TTL: time.Second}); got != "" {
		t.Errorf("kill-connection size %q, want none: it is an instant", got)
	}
}
