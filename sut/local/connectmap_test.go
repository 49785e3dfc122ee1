package local

import (
	"fmt"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// The connect shim, preloaded into a real program (bash's /dev/tcp calls
// libc's connect), sends a connection meant for one listener to the other,
// refuses one to a listed port nobody listens on (as the direct
// connection would be, where the proxy would accept it), and leaves
// addresses it does not list alone.
func TestConnectShimRedirects(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not installed")
	}
	shim, err := BuildConnectShim(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	listen := func() (net.Listener, chan string) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		got := make(chan string, 4)
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				b := make([]byte, 64)
				_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
				n, _ := c.Read(b)
				got <- strings.TrimSpace(string(b[:n]))
				c.Close()
			}
		}()
		return l, got
	}
	meant, toMeant := listen()
	proxy, toProxy := listen()
	other, toOther := listen()
	// A listed address that nobody listens on: refused, as directly.
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed.Close()
	env, err := ConnectMapEnv(map[string]string{meant.Addr().String(): proxy.Addr().String(), closed.Addr().String(): proxy.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	port := func(l net.Listener) int { return l.Addr().(*net.TCPAddr).Port }
	script := fmt.Sprintf("exec 3<>/dev/tcp/127.0.0.1/%d && echo one >&3 && exec 3>&- && exec 4<>/dev/tcp/127.0.0.1/%d && echo two >&4", port(meant), port(other))
	cmd := exec.Command("bash", "-c", script)
	cmd.Env = append(cmd.Environ(), "LD_PRELOAD="+shim, env)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("bash: %v: %s", err, out)
	}
	refused := exec.Command("bash", "-c", fmt.Sprintf("exec 3<>/dev/tcp/127.0.0.1/%d", port(closed)))
	refused.Env = cmd.Env
	if out, err := refused.CombinedOutput(); err == nil || !strings.Contains(string(out), "refused") {
		t.Errorf("a listed address nobody listens on: %v %s, want connection refused", err, out)
	}
	wait := func(ch chan string) string {
		select {
		case s := <-ch:
			return s
		case <-time.After(5 * time.Second):
			return ""
		}
	}
	if s := wait(toProxy); s != "one" {
		t.Errorf("the redirected connection: got %q at the replacement, want \"one\"", s)
	}
	if s := wait(toOther); s != "two" {
		t.Errorf("the connection not listed: got %q, want \"two\"", s)
	}
	select {
	case s := <-toMeant:
		t.Errorf("the listed address was reached directly (%q)", s)
	default:
	}
}

func TestConnectMapEnvRefusesWhatTheShimCannotRead(t *testing.T) {
	if _, err := ConnectMapEnv(map[string]string{"localhost:1": "127.0.0.1:2"}); err == nil {
		t.Error("a host name was taken")
	}
	if _, err := ConnectMapEnv(map[string]string{"[::1]:1": "127.0.0.1:2"}); err == nil {
		t.Error("an IPv6 address was taken")
	}
	env, err := ConnectMapEnv(map[string]string{"127.0.0.1:2": "127.0.0.1:3", "127.0.0.1:1": "127.0.0.1:4"})
	if err != nil || env != "LOCKHARNESS_CONNECT_MAP=127.0.0.1:1=127.0.0.1:4,127.0.0.1:2=127.0.0.1:3" {
		t.Errorf("env %q %v", env, err)
	}
}
