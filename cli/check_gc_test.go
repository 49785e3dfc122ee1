package cli

import (
	"os"
	"runtime/debug"
	"testing"
)

// TestCheckGCIsPutBack: the check's collector settings hold during the
// check only, and leave alone a process whose environment chose its own.
func TestCheckGCIsPutBack(t *testing.T) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		t.Skip("the environment sets the collector")
	}
	limit, percent := debug.SetMemoryLimit(-1), debug.SetGCPercent(-1)
	debug.SetGCPercent(percent)
	restore := checkGC{percent: 300, limitMiB: 90}.apply()
	gotLimit, gotPercent := debug.SetMemoryLimit(-1), debug.SetGCPercent(-1)
	debug.SetGCPercent(gotPercent)
	restore()
	if gotLimit != 90<<20 || gotPercent != 300 {
		t.Errorf("during the check: limit %d, percent %d; want %d, 300", gotLimit, gotPercent, 90<<20)
	}
	if l, p := debug.SetMemoryLimit(-1), debug.SetGCPercent(-1); l != limit || p != percent {
		debug.SetGCPercent(p)
		t.Errorf("after the check: limit %d, percent %d; want %d, %d", l, p, limit, percent)
	} else {
		debug.SetGCPercent(p)
	}
	t.Setenv("GOGC", "50")
	checkGC{percent: 300, limitMiB: 90}.apply()()
	if l := debug.SetMemoryLimit(-1); l != limit {
		t.Errorf("GOGC set: the limit became %d", l)
	}
}
