package history

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// Clock is the run's one monotonic clock. Every event of a run, from every
// client and the nemesis, is timed by the same Clock, so "at the same time"
// is exact across processes.
type Clock struct {
	start time.Time
}

// NewClock starts a clock at now.
func NewClock() *Clock { return &Clock{start: time.Now()} }

// Start is the instant the run clock reads zero.
func (c *Clock) Start() time.Time { return c.start }

// Now is the time since the start in nanoseconds.
func (c *Clock) Now() int64 { return int64(time.Since(c.start)) }

// At converts an instant (with a monotonic reading) to run-clock nanoseconds.
func (c *Clock) At(t time.Time) int64 { return int64(t.Sub(c.start)) }

// Time converts run-clock nanoseconds back to an instant.
func (c *Clock) Time(ns int64) time.Time { return c.start.Add(time.Duration(ns)) }

// FlushInterval bounds how much of a history a killed run can lose.
const FlushInterval = 100 * time.Millisecond

// Recorder appends events to a history: it numbers them, stamps them with the
// run clock and streams them as JSON lines to w, flushing (and fsyncing when
// w is a file) at least every FlushInterval. It is safe for concurrent use.
// It also keeps the events in memory for the checker.
type Recorder struct {
	clock *Clock

	mu     sync.Mutex
	bw     *bufio.Writer
	file   *os.File // nil unless w is a file
	ops    []Op
	err    error         // first write error; sticky
	failed chan struct{} // closed with the first write error
	closed bool

	stop chan struct{}
	done chan struct{}
}

// NewRecorder streams to w. If w is an *os.File it is fsynced on each flush.
func NewRecorder(clock *Clock, w io.Writer) *Recorder {
	r := &Recorder{clock: clock, bw: bufio.NewWriterSize(w, 64<<10), failed: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	if f, ok := w.(*os.File); ok {
		r.file = f
	}
	go r.flushLoop()
	return r
}

// Clock is the clock the recorder stamps events with.
func (r *Recorder) Clock() *Clock { return r.clock }

func (r *Recorder) flushLoop() {
	defer close(r.done)
	t := time.NewTicker(FlushInterval)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
			r.mu.Lock()
			r.flushLocked()
			r.mu.Unlock()
		}
	}
}

func (r *Recorder) flushLocked() {
	if r.err != nil {
		return
	}
	if err := r.bw.Flush(); err != nil {
		r.failLocked(fmt.Errorf("flush history: %w", err))
		return
	}
	if r.file != nil {
		if err := r.file.Sync(); err != nil {
			r.failLocked(fmt.Errorf("sync history: %w", err))
		}
	}
}

// failLocked keeps the first write error and announces it on Failed.
func (r *Recorder) failLocked(err error) {
	if r.err == nil {
		r.err = err
		close(r.failed)
	}
}

// Failed is closed when a write of the history fails (a full disk): a run
// that goes on would record events that can no longer be kept, so the
// runner stops at once instead of at the end of its time limit.
func (r *Recorder) Failed() <-chan struct{} { return r.failed }

// Record stamps op with the next index and the current run-clock time,
// appends it and returns it. Index order is time order.
func (r *Recorder) Record(op Op) Op {
	r.mu.Lock()
	defer r.mu.Unlock()
	op.Time = r.clock.Now()
	return r.appendLocked(op)
}

func (r *Recorder) appendLocked(op Op) Op {
	op.Index = int64(len(r.ops))
	r.ops = append(r.ops, op)
	if r.closed || r.err != nil {
		return op
	}
	b, err := json.Marshal(op)
	if err != nil {
		r.failLocked(fmt.Errorf("encode history event %d: %w", op.Index, err))
		return op
	}
	b = append(b, '\n')
	if _, err := r.bw.Write(b); err != nil {
		r.failLocked(fmt.Errorf("write history: %w", err))
	}
	return op
}

// Invoke records an invocation by process p.
func (r *Recorder) Invoke(p Process, f, key string, v *Value) Op {
	return r.Record(Op{Process: p, Type: Invoke, F: f, Key: key, Value: v})
}

// Complete records the completion of an invocation by process p. err is
// recorded as text on fail and info.
func (r *Recorder) Complete(p Process, t Type, f, key string, v *Value, err error) Op {
	op := Op{Process: p, Type: t, F: f, Key: key, Value: v}
	if err != nil {
		op.Error = err.Error()
	}
	return r.Record(op)
}

// Ops returns a copy of every event recorded so far.
func (r *Recorder) Ops() []Op {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Op(nil), r.ops...)
}

// Len is the number of events recorded so far.
func (r *Recorder) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.ops)
}

// Err is the first error writing the history, if any.
func (r *Recorder) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// Close flushes what is buffered and stops the flusher. It does not close
// the underlying writer. Events recorded after Close are kept in memory only.
func (r *Recorder) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return r.err
	}
	r.closed = true
	r.flushLocked()
	r.mu.Unlock()
	close(r.stop)
	<-r.done
	return r.Err()
}
