package etcd_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/lockharness/lockharness/sut/etcd/etcdtest"
	"github.com/lockharness/lockharness/sut/local"
)

// Why the etcd members have no CanSetClock: under libfaketime, 100 days
// ahead, etcd still logs the real time. It is a Go program, and Go reads
// the clock through the vDSO, never through libc's clock_gettime, which
// is what libfaketime replaces.
func TestLibfaketimeDoesNotReachEtcd(t *testing.T) {
	etcdtest.Require(t)
	lib, err := local.Libfaketime()
	if err != nil {
		t.Skip(err)
	}
	ports := make([]int, 2)
	for i := range ports {
		if ports[i], err = local.FreePort(); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	cmd := exec.Command("etcd", "--data-dir", filepath.Join(dir, "data"),
		"--listen-client-urls", fmt.Sprintf("http://127.0.0.1:%d", ports[0]),
		"--advertise-client-urls", fmt.Sprintf("http://127.0.0.1:%d", ports[0]),
		"--listen-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", ports[1]),
		"--initial-advertise-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", ports[1]),
		"--initial-cluster", fmt.Sprintf("default=http://127.0.0.1:%d", ports[1]),
		"--logger", "zap", "--log-outputs", "stderr")
	cmd.Env = append(os.Environ(), "LD_PRELOAD="+lib, "FAKETIME=+100d")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	sc := bufio.NewScanner(stderr)
	if !sc.Scan() {
		t.Fatalf("etcd wrote no log line: %v", sc.Err())
	}
	var line struct {
		TS time.Time `json:"ts"`
	}
	if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
		t.Fatalf("log line %q: %v", sc.Text(), err)
	}
	if d := time.Since(line.TS); d > time.Hour || d < -time.Hour {
		t.Fatalf("etcd under libfaketime +100d logged %v, %v from now: libfaketime reached it after all; give the members CanSetClock", line.TS, -d)
	}
	// The same preload does move a libc program's clock.
	out, err := exec.Command("sh", "-c", "LD_PRELOAD="+lib+" FAKETIME=+100d date -u +%s").Output()
	if err != nil {
		t.Fatal(err)
	}
	var faked int64
	if _, err := fmt.Sscan(string(out), &faked); err != nil || time.Until(time.Unix(faked, 0)) < 99*24*time.Hour {
		t.Fatalf("date under libfaketime +100d printed %q: the preload did nothing, the test proves nothing", out)
	}
}
