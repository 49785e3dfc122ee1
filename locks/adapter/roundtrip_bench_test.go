package adapter

import (
	"context"
	"os/exec"
	"testing"
	"time"
)

// BenchmarkRoundTrip is one protocol round trip (a hello to the minimal
// adapter, no server): the harness's and the pipe's share of a request.
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
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, _, err := p.call(context.Background(), request{Op: opHello}, 10*time.Second); err != nil {
			b.Fatal(err)
		}
	}
}
