package local

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// listenerOwned reports whether the socket listening on port (on any
// address) is one of process pid's open files. Most servers (etcd,
// ZooKeeper, MariaDB) answer their probe without saying which process they
// are (Redis's INFO does, and its probe checks it too); and between
// choosing a free port and binding it, a server started beside ours
// (another test's group) may have taken it, so that the probe that
// succeeds is the other's. known is false where
// /proc cannot tell (not Linux, or nobody listens on port): then nothing is
// judged.
func listenerOwned(pid, port int) (owned, known bool) {
	if pid <= 0 {
		return false, false
	}
	var inodes []string
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		inodes = append(inodes, listeningInodes(b, port)...)
	}
	if len(inodes) == 0 {
		return false, false
	}
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	fds, err := os.ReadDir(dir)
	if err != nil {
		return false, false
	}
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join(dir, fd.Name()))
		if err != nil {
			continue
		}
		for _, ino := range inodes {
			if target == "socket:["+ino+"]" {
				return true, true
			}
		}
	}
	return false, true
}

// listeningInodes are the inodes of the sockets in LISTEN state on port in
// the text of /proc/net/tcp or /proc/net/tcp6 (local address as hex
// ADDR:PORT, state 0A, the inode tenth).
func listeningInodes(text []byte, port int) []string {
	var out []string
	want := fmt.Sprintf(":%04X", port)
	sc := bufio.NewScanner(bytes.NewReader(text))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 10 || f[3] != "0A" || !strings.HasSuffix(f[1], want) {
			continue
		}
		if _, err := strconv.ParseUint(f[9], 10, 64); err == nil {
			out = append(out, f[9])
		}
	}
	return out
}
