package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"
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

// The first server to find its port another's ends the wait for all, and
// the others' probes are cancelled, not waited out.
func TestWaitAllReadyStopsAtABusyPort(t *testing.T) {
	cancelled := make(chan struct{})
	waiting := &Server{Name: "waiting", Ready: func(ctx context.Context) error {
		<-ctx.Done()
		close(cancelled)
		return ctx.Err()
	}}
	busy := &Server{Name: "busy", Ready: func(context.Context) error {
		return fmt.Errorf("crossed: %w", ErrPortBusy)
	}}
	done := make(chan error, 1)
	go func() { done <- WaitAllReady(context.Background(), []*Server{waiting, busy}, time.Hour) }()
	select {
	case err := <-done:
		if !errors.Is(err, ErrPortBusy) {
			t.Fatalf("WaitAllReady: %v, want ErrPortBusy", err)
		}
	case <-time.After(10 * time.Second): // a failure bound, not a speed target
		t.Fatal("WaitAllReady still waits for the other server after one found its port busy")
	}
	<-cancelled
}

// listeningInodes reads the LISTEN sockets of a port from /proc/net/tcp's
// text, IPv4 and IPv6 alike, and nothing else: not another port's, not a
// connection's on the same port.
func TestListeningInodes(t *testing.T) {
	tcp := `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4711 1 0000000000000000 100 0 0 10 0
   1: 0100007F:1F91 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4712 1 0000000000000000 100 0 0 10 0
   2: 0100007F:1F90 0100007F:C350 01 00000000:00000000 00:00000000 00000000     0        0 4713 1 0000000000000000 20 4 30 10 -1
`
	if got := listeningInodes([]byte(tcp), 8080); !slices.Equal(got, []string{"4711"}) {
		t.Errorf("port 8080: %v, want [4711]", got)
	}
	tcp6 := `  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000000000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 5150 1 0000000000000000 100 0 0 10 0
`
	if got := listeningInodes([]byte(tcp6), 8080); !slices.Equal(got, []string{"5150"}) {
		t.Errorf("IPv6 port 8080: %v, want [5150]", got)
	}
	if got := listeningInodes([]byte(tcp), 80); got != nil {
		t.Errorf("port 80: %v, want none", got)
	}
}
