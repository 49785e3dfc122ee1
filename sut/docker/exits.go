package docker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/lockharness/lockharness/sut"
)

// exitsFile is where a supervised node's loop appends the exit status of
// each redis-server that ended, in the node's directory: "planned 137"
// when the harness's down file was in place (Node.Kill), "137" when not
// (see Node.create).
const exitsFile = "exits"

// exitPoll is how often the exits file is read.
const exitPoll = 100 * time.Millisecond

var _ sut.ExitWatcher = (*Node)(nil)

// WatchExits has f called for every exit of the node's redis-server that
// the harness did not cause (sut.ExitWatcher): killed from outside the
// harness, or crashed. The container's loop starts such a server again at
// once, so without this the exit would pass unseen. Only a supervised
// node (a node of an image with a shell) is watched; a sentinel's or a
// shell-less image's server is the container itself, not watched yet.
func (n *Node) WatchExits(f func(sut.Exit)) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.stopWatch != nil {
		n.stopWatch()
		n.stopWatch = nil
	}
	if f == nil || !n.supervised {
		return
	}
	path := filepath.Join(n.Dir, exitsFile)
	var from int64
	if st, err := os.Stat(path); err == nil {
		from = st.Size() // what was before the watch is not its business
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	n.stopWatch = func() { cancel(); <-done }
	go func() {
		defer close(done)
		n.pollExits(ctx, path, from, f)
	}()
}

// pollExits reads the lines the loop appends to the exits file at path
// after offset from, every exitPoll, until ctx ends, and tells f of each.
func (n *Node) pollExits(ctx context.Context, path string, from int64, f func(sut.Exit)) {
	t := time.NewTicker(exitPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		b, err := os.ReadFile(path)
		if err != nil || int64(len(b)) <= from {
			continue
		}
		// Whole lines only: the loop may be writing one.
		chunk := b[from:]
		end := strings.LastIndexByte(string(chunk), '\n')
		if end < 0 {
			continue
		}
		from += int64(end + 1)
		for _, line := range strings.Split(string(chunk[:end]), "\n") {
			if status := strings.TrimSpace(line); status != "" && !strings.HasPrefix(status, "planned") {
				f(sut.Exit{Node: n.name, How: exitHow(status)})
			}
		}
	}
}

// exitHow says how a redis-server that ended with the shell's status s
// ended: 128+N is signal N.
func exitHow(s string) string {
	var code int
	if _, err := fmt.Sscanf(s, "%d", &code); err == nil && code > 128 {
		return fmt.Sprintf("signal %d, in its container; the container's loop started it again", code-128)
	}
	return fmt.Sprintf("exit status %s, in its container; the container's loop started it again", s)
}
