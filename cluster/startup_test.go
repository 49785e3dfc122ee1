package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
)

// A busy port makes a start begin again, three times at most, unless the
// ports were fixed by the user; any other error is final.
func TestRetryBusyPorts(t *testing.T) {
	ctx := context.Background()
	busy := fmt.Errorf("bind: %w", ErrPortBusy)
	missing := errors.New("no binary")
	for _, tc := range []struct {
		name      string
		fixed     bool
		errs      []error
		wantCalls int
		wantErr   error
	}{
		{"busy then up", false, []error{busy, nil}, 2, nil},
		{"busy three times", false, []error{busy, busy, busy, nil}, 3, ErrPortBusy},
		{"fixed ports", true, []error{busy, nil}, 1, ErrPortBusy},
		{"another error", false, []error{missing, nil}, 1, missing},
	} {
		calls := 0
		_, err := RetryBusyPorts(ctx, tc.fixed, func() (int, error) {
			calls++
			return calls, tc.errs[calls-1]
		})
		if calls != tc.wantCalls {
			t.Errorf("%s: %d calls, want %d", tc.name, calls, tc.wantCalls)
		}
		if !errors.Is(err, tc.wantErr) {
			t.Errorf("%s: err %v, want %v", tc.name, err, tc.wantErr)
		}
	}
}

// WorkDir makes a given directory absolute and leaves it; without one it
// makes a temporary directory the deployment removes.
func TestWorkDir(t *testing.T) {
	t.Chdir(t.TempDir())
	d, temp, err := WorkDir("nodes", "lockharness-test-")
	if err != nil || temp || d[0] != '/' {
		t.Fatalf("given dir: %q temp=%v %v", d, temp, err)
	}
	d, temp, err = WorkDir("", "lockharness-test-")
	if err != nil || !temp {
		t.Fatalf("temporary dir: %q temp=%v %v", d, temp, err)
	}
	defer os.RemoveAll(d)
	if st, err := os.Stat(d); err != nil || !st.IsDir() {
		t.Fatalf("temporary dir %s: %v", d, err)
	}
}
