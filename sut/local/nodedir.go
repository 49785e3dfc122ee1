package local

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// nodeDirPrefix names the per-run directories of node data (redis files,
// libfaketime control files) under the system's temporary directory.
const nodeDirPrefix = "lockharness-nodes-"

// NewNodeDir makes a run's directory for its nodes' files, outside the
// store: node data is not part of the record, and a harness killed with
// SIGKILL runs no deferred cleanup, so anything it put in the run directory
// would stay there. The name carries this process's id; before making it,
// NewNodeDir removes the directories of processes that no longer exist,
// which is the only cleanup that survives a SIGKILL. The caller removes the
// directory it gets when the run ends.
func NewNodeDir() (string, error) {
	SweepNodeDirs(os.TempDir())
	d, err := os.MkdirTemp("", fmt.Sprintf("%s%d-", nodeDirPrefix, os.Getpid()))
	if err != nil {
		return "", fmt.Errorf("make node directory: %w (set TMPDIR to a writable directory)", err)
	}
	return d, nil
}

// SweepNodeDirs removes, under tmp, the node directories left by harness
// processes that are gone, and returns how many it removed. A directory
// whose process still runs (another run) is left alone.
func SweepNodeDirs(tmp string) int {
	dirs, _ := filepath.Glob(filepath.Join(tmp, nodeDirPrefix+"*"))
	n := 0
	for _, d := range dirs {
		pidText, _, ok := strings.Cut(strings.TrimPrefix(filepath.Base(d), nodeDirPrefix), "-")
		pid, err := strconv.Atoi(pidText)
		if !ok || err != nil || pid <= 0 || pid == os.Getpid() {
			continue
		}
		if !ProcessGone(pid) {
			continue // alive (or not ours to judge)
		}
		if os.RemoveAll(d) == nil {
			n++
		}
	}
	return n
}

// ProcessGone reports whether the process pid no longer runs: it does not
// exist, or it exited and waits to be reaped. What a process that is gone
// left behind (node directories, containers) can be removed.
func ProcessGone(pid int) bool {
	err := syscall.Kill(pid, 0)
	return errors.Is(err, syscall.ESRCH) || zombie(pid)
}

// zombie reports whether pid has exited and waits to be reaped: a harness
// killed after its parent died stays a zombie where nothing reaps orphans
// (a container whose first process is not an init), and its directory is
// as dead as it is.
func zombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) state …: comm may hold spaces and parentheses.
	i := strings.LastIndexByte(string(b), ')')
	return i >= 0 && i+2 < len(b) && b[i+2] == 'Z'
}
