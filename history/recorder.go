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

// MaxPending bounds the events recorded but not yet handed to the writer.
// Clients wait for the writer only when it is this far behind (a disk that
// stalls for seconds); otherwise recording an event never waits on disk.
const MaxPending = 1 << 16

// wakeBatch is how many queued events wake the writer before its next
// FlushInterval tick: events are encoded in batches, and a quiet run
// wakes the writer only on its ticks.
const wakeBatch = 4096

// Recorder appends events to a history: it numbers them, stamps them with the
// run clock and streams them as JSON lines to w. It is safe for concurrent
// use.
//
// Recording takes a lock only to number, stamp and queue an event: a
// writer goroutine of its own encodes the queue, writes it and flushes (and
// fsyncs when w is a file) at least every FlushInterval, so clients never
// wait for the disk, and no more than MaxPending events wait in memory.
//
// A recorder writing to a regular file keeps nothing else in memory, so
// that a run of any length costs the same: Ops reads the history back from
// the file. Writing to anything else, it keeps every event for Ops.
type Recorder struct {
	clock *Clock

	mu      sync.Mutex
	room    *sync.Cond // signalled when the writer takes the queue
	pending []Op       // queued for the writer, in index order
	next    int64      // index of the next event
	keep    bool       // keep every event in ops (w is not a regular file)
	ops     []Op       // every event, when keep
	late    []Op       // events recorded after Close, when not keep
	err     error      // first write error; sticky
	failed  chan struct{}
	closed  bool
	syncReq chan chan struct{} // ask the writer to write out and flush the queue

	// The writer's own; nobody else touches them.
	bw    *bufio.Writer
	enc   *json.Encoder
	file  *os.File // nil unless w is a file
	spare []Op
	line  []byte // the line being encoded

	// observe sees every event as it is recorded (Observe).
	observe func(Op)

	wake chan struct{} // the queue holds wakeBatch events
	stop chan struct{}
	done chan struct{}
}

// NewRecorder streams to w. If w is an *os.File it is fsynced on each flush.
func NewRecorder(clock *Clock, w io.Writer) *Recorder {
	r := &Recorder{clock: clock, bw: bufio.NewWriterSize(w, 256<<10), failed: make(chan struct{}),
		wake: make(chan struct{}, 1), syncReq: make(chan chan struct{}), stop: make(chan struct{}), done: make(chan struct{}), keep: true}
	r.room = sync.NewCond(&r.mu)
	r.enc = json.NewEncoder(r.bw) // as json.Marshal writes, plus the newline
	if f, ok := w.(*os.File); ok {
		r.file = f
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
			r.keep = false
		}
	}
	go r.writeLoop()
	return r
}

// Clock is the clock the recorder stamps events with.
func (r *Recorder) Clock() *Clock { return r.clock }

// writeLoop is the writer: it writes the queue when events arrive and
// flushes every FlushInterval, until Close.
func (r *Recorder) writeLoop() {
	defer close(r.done)
	t := time.NewTicker(FlushInterval)
	defer t.Stop()
	for {
		select {
		case <-r.wake:
			r.writeQueue()
		case <-t.C:
			r.writeQueue()
			r.flush(true)
		case ack := <-r.syncReq:
			r.writeQueue()
			r.flush(false)
			close(ack)
		case <-r.stop:
			r.writeQueue()
			r.flush(true)
			return
		}
	}
}

// writeQueue takes the queue and encodes it into the buffer (which writes
// to w when full), without holding the lock.
func (r *Recorder) writeQueue() {
	r.mu.Lock()
	batch := r.pending
	r.pending = r.spare[:0]
	broken := r.err != nil
	r.room.Broadcast()
	r.mu.Unlock()
	if !broken {
		for i := range batch {
			if err := r.encode(&batch[i]); err != nil {
				r.fail(fmt.Errorf("write history event %d: %w", batch[i].Index, err))
				break
			}
		}
	}
	clear(batch) // drop the values' references
	r.spare = batch[:0]
}

// encode writes op's line into the buffer: by appendOp, which writes
// what encoding/json would without its reflection, or by encoding/json
// for the rare event appendOp leaves to it.
func (r *Recorder) encode(op *Op) error {
	line, ok := appendOp(r.line[:0], op)
	if !ok {
		return r.enc.Encode(op)
	}
	r.line = line
	_, err := r.bw.Write(line)
	return err
}

// flush writes the buffer to w and, with sync, fsyncs a file.
func (r *Recorder) flush(sync bool) {
	if r.Err() != nil {
		return
	}
	if err := r.bw.Flush(); err != nil {
		r.fail(fmt.Errorf("flush history: %w", err))
		return
	}
	if sync && r.file != nil {
		if err := r.file.Sync(); err != nil {
			r.fail(fmt.Errorf("sync history: %w", err))
		}
	}
}

// fail keeps the first write error and announces it on Failed.
func (r *Recorder) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil {
		r.err = err
		close(r.failed)
		r.room.Broadcast()
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
	for len(r.pending) >= MaxPending && !r.closed && r.err == nil {
		r.room.Wait()
	}
	op.Time = r.clock.Now()
	op.Index = r.next
	r.next++
	if r.observe != nil {
		r.observe(op)
	}
	if r.keep {
		r.ops = append(r.ops, op)
	}
	if r.closed || r.err != nil {
		if !r.keep && r.closed {
			r.late = append(r.late, op)
		}
		r.mu.Unlock()
		return op
	}
	r.pending = append(r.pending, op)
	batch := len(r.pending) == wakeBatch
	r.mu.Unlock()
	if batch {
		select {
		case r.wake <- struct{}{}:
		default:
		}
	}
	return op
}

// Observe makes f see every event from now on as it is recorded, in
// index order, under the recorder's lock: f must be quick and must not
// record. A run follows its own history so (run.evidence) to end a phase
// once the evidence is in, without reading the file back.
func (r *Recorder) Observe(f func(Op)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.observe = f
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

// Ops returns every event recorded so far. A recorder writing to a
// regular file reads them back from it (after writing out its queue): the
// file is the history. If that fails, Ops returns what it could read and
// Err says why.
func (r *Recorder) Ops() []Op {
	r.mu.Lock()
	if r.keep {
		defer r.mu.Unlock()
		return append([]Op(nil), r.ops...)
	}
	closed := r.closed
	r.mu.Unlock()
	if !closed {
		ack := make(chan struct{})
		select {
		case r.syncReq <- ack:
			<-ack
		case <-r.done:
		}
	}
	res, err := ReadFile(r.file.Name())
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil && r.err == nil {
		r.err = fmt.Errorf("read the history back: %w", err)
		close(r.failed)
	}
	if closed {
		res.Ops = append(res.Ops, r.late...)
	}
	return res.Ops
}

// Source is the history the recorder wrote, for the check and the
// report: its file, read event by event, once the recorder is closed and
// every event is in it; else (it kept the events in memory, as when w is
// not a regular file, is still open, failed to write, or was handed
// events after Close) the events it holds (Ops).
func (r *Recorder) Source() Source {
	r.mu.Lock()
	file := !r.keep && r.closed && r.err == nil && len(r.late) == 0
	r.mu.Unlock()
	if file {
		return File(r.file.Name())
	}
	return Events(r.Ops())
}

// Len is the number of events recorded so far.
func (r *Recorder) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return int(r.next)
}

// Err is the first error writing the history, if any.
func (r *Recorder) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// Close writes out and flushes what is queued and stops the writer. It
// does not close the underlying writer. Events recorded after Close are
// kept in memory only.
func (r *Recorder) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return r.Err()
	}
	r.closed = true
	r.room.Broadcast()
	r.mu.Unlock()
	close(r.stop)
	<-r.done
	return r.Err()
}
