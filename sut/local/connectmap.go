package local

import (
	_ "embed"
	"fmt"
	"net"
	"sort"
	"strings"
)

// connectMapSource redirects a process's outgoing connections by
// destination (see shim/connectmap.c): preloaded into a server, it routes
// every connection the server makes to a peer through the harness's link
// proxy for that pair, whatever address the server was told or learned.
//
//go:embed shim/connectmap.c
var connectMapSource []byte

// BuildConnectShim compiles the connect shim with gcc (see buildShim) and
// returns the path of the shared object, for LD_PRELOAD.
func BuildConnectShim(fallback string) (string, error) {
	return buildShim("connectmap", connectMapSource, "the connect shim that routes a server's connections to its peers through the links: install it with `apt-get install -y gcc libc6-dev`", fallback)
}

// ConnectMapEnv is the environment variable that tells the connect shim
// to send each connection to an address of m (IPv4 host:port) to m's
// value instead. The rules come sorted, so the same map gives the same
// text.
func ConnectMapEnv(m map[string]string) (string, error) {
	rules := make([]string, 0, len(m))
	for from, to := range m {
		for _, a := range []string{from, to} {
			host, _, err := net.SplitHostPort(a)
			if err != nil || net.ParseIP(host).To4() == nil {
				return "", fmt.Errorf("connect map: %q is not an IPv4 host:port", a)
			}
		}
		rules = append(rules, from+"="+to)
	}
	if len(rules) > 256 {
		return "", fmt.Errorf("connect map: %d rules, the shim takes at most 256", len(rules))
	}
	sort.Strings(rules)
	return "LOCKHARNESS_CONNECT_MAP=" + strings.Join(rules, ","), nil
}
