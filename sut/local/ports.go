package local

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// FreePort picks a free loopback port (see listenFree) and lets it go.
func FreePort() (int, error) {
	l, err := listenFree()
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// CheckPortFree fails with ErrPortBusy when port cannot be bound.
func CheckPortFree(port int) error {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return fmt.Errorf("%w: 127.0.0.1:%d is in use (%v); stop whatever listens there or choose another --base-port", ErrPortBusy, port, err)
	}
	return l.Close()
}

// Ports allocates n ports: base+1… when base is set (checked free),
// else free ones, returned with their listeners still open.
func Ports(base, n int) ([]int, []net.Listener, error) {
	ports := make([]int, 0, n)
	var held []net.Listener
	for i := 0; i < n; i++ {
		if base != 0 {
			p := base + i + 1
			if err := CheckPortFree(p); err != nil {
				return nil, nil, err
			}
			ports = append(ports, p)
			continue
		}
		l, err := listenFree()
		if err != nil {
			for _, h := range held {
				_ = h.Close()
			}
			return nil, nil, err
		}
		held = append(held, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, held, nil
}

// FreePorts picks n free loopback ports, their listeners still open: a
// backend closes them just before its proxies and servers bind, so that no
// proxy takes a server's port.
func FreePorts(n int) ([]int, []net.Listener, error) { return Ports(0, n) }

// listenFree binds a free loopback port chosen at random below the
// kernel's ephemeral range. A port the kernel picks (bind to port 0) comes
// from that range, which every outgoing connection on the machine draws its
// local port from too, and which hands a port just let go to the next
// process that asks: between the harness closing its listener and a server
// binding the port, another test's group (go test runs packages side by
// side) was given the same port, and two etcd groups heard each other
// (cluster ID mismatch). A random port outside the range is taken by
// neither, except by the same chance draw. The kernel's pick is the
// fallback when no port of the range is free after a bounded search.
func listenFree() (net.Listener, error) {
	lo, hi := quietRange()
	for try := 0; try < 64 && lo < hi; try++ {
		p := lo + rand.IntN(hi-lo)
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err == nil {
			return l, nil
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("find a free port: %w", err)
	}
	return l, nil
}

// quietLow is the lowest port listenFree draws: above the registered
// ports that services on a developer's machine commonly use.
const quietLow = 20000

// quietRange is [quietLow, the first ephemeral port), from
// /proc/sys/net/ipv4/ip_local_port_range (Linux's default range starts at
// 32768); an empty range (lo >= hi) where the file is missing or the
// ephemeral range starts lower.
func quietRange() (lo, hi int) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return quietLow, quietLow
	}
	return quietLow, ephemeralStart(string(b))
}

// ephemeralStart reads the first port of an ip_local_port_range value
// ("32768\t60999\n"); 0 when it cannot.
func ephemeralStart(s string) int {
	f := strings.Fields(s)
	if len(f) == 0 {
		return 0
	}
	n, err := strconv.Atoi(f[0])
	if err != nil {
		return 0
	}
	return n
}
