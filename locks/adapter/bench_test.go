package adapter_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/locks/adapter"
	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/sut/redis/redistest"
)

// BenchmarkRedisPy compares lock cycles (acquire + release on 10 keys, one
// client) of redis-py driven through the protocol with redis-py's own loop
// in one Python process: the same keys (benchKeys), through the same link
// to the same redis-server, with the same commands (SET NX PX, then the
// library's release script). "protocol" and "library" run one after the
// other; "interleaved" alternates rounds of 100 cycles of each, in the
// order ABBA so that neither always goes first, so both see the same load
// on a shared machine. It reports the ratio of the totals (protocol
// cycles/s over library cycles/s) and the median of the pairs' ratios,
// which one descheduled round does not move. The goal is protocol ≥ 0.8 ×
// library.
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

	// CPU a cycle, which the machine's load moves far less than time: the
	// Python process's (the adapter's, the loop's) and the Go process's
	// (the harness's side and the link, or the link alone).
	adapterPID := l.(interface{ PID() int }).PID()
	b.Run("protocol", func(b *testing.B) {
		py, gp := procCPU(b, adapterPID), selfCPU(b)
		b.ReportMetric(float64(b.N)/protocolCycles(b, l, b.N).Seconds(), "cycles/s")
		b.ReportMetric(float64((procCPU(b, adapterPID)-py).Microseconds())/float64(b.N), "python-cpu-µs/cycle")
		b.ReportMetric(float64((selfCPU(b)-gp).Microseconds())/float64(b.N), "go-cpu-µs/cycle")
	})
	b.Run("library", func(b *testing.B) {
		py, gp := procCPU(b, loop.pid), selfCPU(b)
		b.ReportMetric(float64(b.N)/loop.run(b, b.N).Seconds(), "cycles/s")
		b.ReportMetric(float64((procCPU(b, loop.pid)-py).Microseconds())/float64(b.N), "python-cpu-µs/cycle")
		b.ReportMetric(float64((selfCPU(b)-gp).Microseconds())/float64(b.N), "go-cpu-µs/cycle")
	})
	b.Run("interleaved", func(b *testing.B) {
		var proto, lib time.Duration
		var ratios []float64
		for done, round := 0, 0; done < b.N; done, round = done+100, round+1 {
			n := min(100, b.N-done)
			var p, q time.Duration
			if round%2 == 0 {
				p = protocolCycles(b, l, n)
				q = loop.run(b, n)
			} else {
				q = loop.run(b, n)
				p = protocolCycles(b, l, n)
			}
			proto, lib = proto+p, lib+q
			ratios = append(ratios, q.Seconds()/p.Seconds())
		}
		slices.Sort(ratios)
		b.ReportMetric(float64(b.N)/proto.Seconds(), "protocol-cycles/s")
		b.ReportMetric(float64(b.N)/lib.Seconds(), "library-cycles/s")
		b.ReportMetric(lib.Seconds()/proto.Seconds(), "ratio")
		b.ReportMetric(ratios[len(ratios)/2], "median-ratio")
	})
}

// benchKeys are the 10 keys both sides of BenchmarkRedisPy lock, as
// testdata/redispy_loop.py names them.
var benchKeys = func() []string {
	keys := make([]string, 10)
	for i := range keys {
		keys[i] = fmt.Sprintf("bench-%d", i)
	}
	return keys
}()

// protocolCycles runs n cycles through the protocol and returns how long
// they took.
func protocolCycles(b *testing.B, l locks.Lock, n int) time.Duration {
	ctx := context.Background()
	start := time.Now()
	for i := 0; i < n; i++ {
		lease, err := l.Acquire(ctx, benchKeys[i%10], locks.AcquireOptions{})
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
	pid int
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
	return &pyLoop{in: in, out: bufio.NewScanner(out), pid: cmd.Process.Pid}
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

// procCPU is the CPU time (user + system) process pid has used, from
// /proc/PID/stat, in the kernel's clock ticks (10ms: USER_HZ is 100 on
// Linux).
func procCPU(b *testing.B, pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// The fields after the command's closing parenthesis, from field 3.
	f := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		b.Fatalf("/proc/%d/stat: %q", pid, data)
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// selfCPU is the CPU time this process has used.
func selfCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
