package local

import (
	"net"
	"strconv"
	"testing"
)

func TestEphemeralStart(t *testing.T) {
	for in, want := range map[string]int{"32768\t60999\n": 32768, "1024 65535": 1024, "": 0, "x 1": 0} {
		if got := ephemeralStart(in); got != want {
			t.Errorf("ephemeralStart(%q) = %d, want %d", in, got, want)
		}
	}
}

// TestFreePortsOutsideEphemeralRange: the ports picked for servers come
// from below the kernel's ephemeral range (where it has one to spare), are
// distinct, and are held until the caller closes them.
func TestFreePortsOutsideEphemeralRange(t *testing.T) {
	ports, held, err := FreePorts(8)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, l := range held {
			_ = l.Close()
		}
	})
	lo, hi := quietRange()
	seen := map[int]bool{}
	for _, p := range ports {
		if seen[p] {
			t.Errorf("port %d picked twice", p)
		}
		seen[p] = true
		if lo < hi && (p < lo || p >= hi) {
			t.Errorf("port %d outside [%d, %d)", p, lo, hi)
		}
		if l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p))); err == nil {
			_ = l.Close()
			t.Errorf("port %d not held", p)
		}
	}
}
