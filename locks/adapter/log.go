package adapter

import (
	"fmt"
	"io"
	"os"
	"sync"
)

// maxLog bounds an adapter's log file; what it writes past it is counted,
// not kept.
const maxLog = 1 << 20

// tailSize is how much of the log's end is kept in memory for error
// messages.
const tailSize = 4 << 10

// boundedLog is an adapter's stderr: written to a file up to maxLog bytes
// (nil file: memory only), its last tailSize bytes kept for messages.
type boundedLog struct {
	mu      sync.Mutex
	f       *os.File
	written int64
	dropped int64
	tail    []byte
}

// openLog creates the log file at path ("" keeps no file).
func openLog(path string) (*boundedLog, error) {
	l := &boundedLog{}
	if path == "" {
		return l, nil
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("adapter log: %w", err)
	}
	l.f = f
	return l, nil
}

var _ io.Writer = (*boundedLog)(nil)

// Write keeps b in the tail and in the file while the file has room.
func (l *boundedLog) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.keep(b)
	if l.f == nil {
		return len(b), nil
	}
	room := maxLog - l.written
	n := int64(len(b))
	if n > room {
		n = max(room, 0)
	}
	if n > 0 {
		if _, err := l.f.Write(b[:n]); err != nil {
			l.f = nil // a full disk must not stop the adapter: keep the tail only
		}
		l.written += n
	}
	l.dropped += int64(len(b)) - n
	return len(b), nil
}

func (l *boundedLog) keep(b []byte) {
	l.tail = append(l.tail, b...)
	if over := len(l.tail) - tailSize; over > 0 {
		l.tail = append(l.tail[:0:0], l.tail[over:]...)
	}
}

// Note adds a line of the harness's own to the log.
func (l *boundedLog) Note(s string) { _, _ = l.Write([]byte("[" + s + "]\n")) }

// Tail is the end of what the adapter wrote.
func (l *boundedLog) Tail() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.tail)
}

// Close closes the file, saying how much was dropped.
func (l *boundedLog) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	if l.dropped > 0 {
		fmt.Fprintf(l.f, "\n[harness: %d more bytes of log dropped past %d]\n", l.dropped, maxLog)
	}
	err := l.f.Close()
	l.f = nil
	return err
}
