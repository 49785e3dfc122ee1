package docker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/client"

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

// WatchExits has f called for every exit of the node's server that the
// harness did not cause (sut.ExitWatcher): killed from outside the
// harness, or crashed. A supervised node's container loop starts such a
// server again at once, so without this the exit would pass unseen: its
// loop notes each exit (pollExits). Any other node's server is its
// container's first process: the engine's die events say when it ends
// (watchDie).
func (n *Node) WatchExits(f func(sut.Exit)) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.stopWatch != nil {
		n.stopWatch()
		n.stopWatch = nil
	}
	if f == nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	n.stopWatch = func() { cancel(); wg.Wait() }
	since := time.Now()
	wg.Add(1)
	go func() {
		defer wg.Done()
		n.watchDie(ctx, since, f) // a supervised node's container too can be killed whole
	}()
	if !n.supervised {
		return
	}
	path := filepath.Join(n.Dir, exitsFile)
	var from int64
	if st, err := os.Stat(path); err == nil {
		from = st.Size() // what was before the watch is not its business
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		n.pollExits(ctx, path, from, f)
	}()
}

// watchDie tells f of every die event of the node's container since
// since, until ctx ends, except those of the harness's own kills
// (Container.Kill). The engine replays the events since then, so none is
// missed while the stream starts; a stream the engine ends is asked for
// again after a second, from the last event it gave.
func (n *Node) watchDie(ctx context.Context, since time.Time, f func(sut.Exit)) {
	for ctx.Err() == nil {
		res := n.d.dc.Events(ctx, client.EventsListOptions{Since: fmt.Sprintf("%d.%09d", since.Unix(), since.Nanosecond()),
			Filters: make(client.Filters).Add("container", n.ID).Add("event", "die")})
		for open := true; open; {
			select {
			case <-ctx.Done():
				return
			case m := <-res.Messages:
				since = time.Unix(0, m.TimeNano+1)
				if !n.ct.plannedDie() {
					f(sut.Exit{Node: n.name, How: "its container exited, exit code " + m.Actor.Attributes["exitCode"]})
				}
			case <-res.Err:
				open = false
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
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
