package adapter

import (
	"context"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// BenchmarkRoundTrip is one protocol round trip (a hello to the minimal
// adapter, no server): the harness's and the pipe's share of a request.
// It reports the Go process's CPU a round trip, which the machine's load
// moves far less than time: the harness's own side, its scheduler's
// wake-ups included.
func BenchmarkRoundTrip(b *testing.B) {
	if err := exec.Command("/usr/bin/python3", "-c", "import redis").Run(); err != nil {
		b.Skipf("/usr/bin/python3 cannot import redis: apt-get install -y python3-redis")
	}
	log, _ := openLog("")
	p, err := startProc("minimal", []string{"/usr/bin/python3", "../../adapters/minimal/adapter.py"}, "", nil, log)
	if err != nil {
		b.Fatal(err)
	}
	defer p.shutdown(time.Second)
	cpu := func() time.Duration {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			b.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	b.ResetTimer()
	start := cpu()
	for i := 0; i < b.N; i++ {
		if _, _, err := p.call(context.Background(), request{Op: opHello}, 10*time.Second); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64((cpu()-start).Nanoseconds())/1e3/float64(b.N), "go-cpu-µs/op")
}
