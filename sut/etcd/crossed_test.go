package etcd

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/sut/local"
)

// A member whose peer port reaches a member of another group (ports crossed
// between two groups started side by side) says so at once with
// ErrPortBusy, so that its group starts again on new ports, instead of
// waiting 30s for a leader it cannot have. Here a lone member x names a
// running group's n1 as its peer.
func TestAMemberThatReachesAnotherGroupIsBusy(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: runs real etcd processes")
	}
	bin, err := local.LookBinary("etcd", InstallHint)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	other, err := Up(ctx, sut.Config{Clients: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Down() })

	ports, held, err := local.FreePorts(2)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range held {
		_ = l.Close()
	}
	dir := t.TempDir()
	peer := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	x := &local.Server{Name: "x", Port: ports[0], Binary: bin, Dir: dir, Output: true,
		Args: []string{
			"--name", "x", "--data-dir", filepath.Join(dir, "data"),
			"--listen-client-urls", fmt.Sprintf("http://127.0.0.1:%d", ports[0]),
			"--advertise-client-urls", fmt.Sprintf("http://127.0.0.1:%d", ports[0]),
			"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
			"--initial-cluster", fmt.Sprintf("x=%s,n1=http://127.0.0.1:%d", peer, other.peerPort["n1"]),
			"--initial-cluster-state", "new", "--initial-cluster-token", "crossed",
		},
		Env: []string{"HTTP_PROXY=", "http_proxy=", "NO_PROXY=", "no_proxy="},
	}
	x.Ready = func(ctx context.Context) error { return memberReady(ctx, x) }
	t.Cleanup(func() { _ = x.Kill() })
	if err := x.Start(ctx, false); err != nil {
		t.Fatal(err)
	}
	if err := x.WaitReady(ctx, time.Minute); !errors.Is(err, local.ErrPortBusy) {
		t.Fatalf("a member whose peer is another group's: %v, want ErrPortBusy", err)
	}
}
