package local

import (
	"fmt"
	"net"
	"strconv"
)

// FreePort asks the kernel for a free loopback port.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
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
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			for _, h := range held {
				_ = h.Close()
			}
			return nil, nil, fmt.Errorf("find a free port: %w", err)
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
