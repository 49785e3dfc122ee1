package adapter_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/locks/adapter"
	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/sut/redis/redistest"
)

// BenchmarkRedisPy compares lock cycles (acquire + release on 10 keys, one
// client) of redis-py driven through the protocol with redis-py's own loop
// in one Python process, both through the same link to the same
// redis-server. "protocol" and "library" run one after the other;
// "interleaved" alternates rounds of 200 cycles of each, so both see the
// same load on a shared machine, and reports the ratio. The goal is
// protocol ≥ 0.8 × library.
func BenchmarkRedisPy(b *testing.B) {
	redistest.Require(b, "redis-server")
	requirePython(b)
	c := redistest.Up(b, sut.Config{Nodes: 1, Clients: 1})
	nodes := c.ClientNodes(0, sut.ClientOptions{Timeout: 500 * time.Millisecond})
	b.Cleanup(func() { sut.CloseClientNodes(nodes) })
	l, err := adapter.Factory(shipped(b, "redis-py"))(nodes, locks.Options{TTL: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = l.(locks.Closer).Close() })
	loop := startLoop(b, nodes[0].Addr)

	b.Run("protocol", func(b *testing.B) {
		b.ReportMetric(float64(b.N)/protocolCycles(b, l, b.N).Seconds(), "cycles/s")
	})
	b.Run("library", func(b *testing.B) {
		b.ReportMetric(float64(b.N)/loop.run(b, b.N).Seconds(), "cycles/s")
	})
	b.Run("interleaved", func(b *testing.B) {
		var proto, lib time.Duration
		for done := 0; done < b.N; done += 200 {
			n := min(200, b.N-done)
			proto += protocolCycles(b, l, n)
			lib += loop.run(b, n)
		}
		b.ReportMetric(float64(b.N)/proto.Seconds(), "protocol-cycles/s")
		b.ReportMetric(float64(b.N)/lib.Seconds(), "library-cycles/s")
		b.ReportMetric(lib.Seconds()/proto.Seconds(), "ratio")
	})
}

// protocolCycles runs n cycles through the protocol and returns how long
// they took.
func protocolCycles(b *testing.B, l locks.Lock, n int) time.Duration {
	ctx := context.Background()
	start := time.Now()
	for i := 0; i < n; i++ {
		lease, err := l.Acquire(ctx, fmt.Sprintf("proto-%d", i%10), locks.AcquireOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Release(ctx, lease); err != nil {
			b.Fatal(err)
		}
	}
	return time.Since(start)
}

// pyLoop is redis-py's own loop (testdata/redispy_loop.py), kept running.
type pyLoop struct {
	in  io.Writer
	out *bufio.Scanner
}

func startLoop(b *testing.B, addr string) *pyLoop {
	cmd := exec.Command(python, "testdata/redispy_loop.py", addr)
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { in.Close(); _ = cmd.Wait() })
	return &pyLoop{in: in, out: bufio.NewScanner(out)}
}

// run has the loop do n cycles and returns how long they took by its own
// clock.
func (p *pyLoop) run(b *testing.B, n int) time.Duration {
	if _, err := fmt.Fprintln(p.in, n); err != nil {
		b.Fatal(err)
	}
	if !p.out.Scan() {
		b.Fatalf("the loop ended: %v", p.out.Err())
	}
	secs, err := strconv.ParseFloat(strings.TrimSpace(p.out.Text()), 64)
	if err != nil {
		b.Fatalf("the loop printed %q", p.out.Text())
	}
	return time.Duration(secs * float64(time.Second))
}
