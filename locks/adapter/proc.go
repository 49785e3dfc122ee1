package adapter

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// maxLine bounds one line of an adapter's stdout: a longer one is garbage,
// and memory stays bounded whatever the adapter prints.
const maxLine = 1 << 20

// maxLate bounds how many abandoned requests (timed out, their answer
// still due) are remembered, so that a late answer is told from an answer
// to nothing; past it a late answer is dropped without being told apart.
const maxLate = 1 << 14

// proc is one running adapter process and the protocol over its pipes:
// requests with ids out, answers matched to them in. The caller of a
// request reads the answers itself (one wake-up per answer, not two: see
// BenchmarkRedisPy), so whatever the adapter says between two requests is
// judged when the next one reads it.
type proc struct {
	name  string
	cmd   *exec.Cmd
	stdin *os.File
	out   *os.File
	br    *bufio.Reader
	log   *boundedLog

	callMu  sync.Mutex // one request at a time
	partial []byte     // a line read in part when a request ran out of time
	// readBy and writeBy are the deadlines last set on the pipes (zero:
	// none), kept by the caller of a request (see keepDeadline).
	readBy, writeBy time.Time
	reqLine         []byte // the last request's line, its memory reused
	wbuf            bytes.Buffer
	enc             *json.Encoder // writes the other requests into wbuf, reused

	mu     sync.Mutex
	next   int64          // the last id sent
	late   map[int64]bool // abandoned ids whose answer may still come
	lineNo int
	// gone is closed once the process cannot answer any more; why says
	// why. fault is set when that was not the harness's doing (Err).
	gone   chan struct{}
	why    error
	fault  error
	ours   bool // the harness killed or closed it
	exited chan struct{}
	pgid   int
	// awaiting is the request the harness awaits (0: none), for an exit's
	// message; its text is made only when the adapter ends.
	awaiting   int64
	awaitingOp string
}

// startProc starts argv in dir (empty: the current directory) in a
// process group of its own, stderr to log.
func startProc(name string, argv []string, dir string, env []string, log *boundedLog) (*proc, error) {
	if len(argv) == 0 {
		return nil, fmt.Errorf("adapter %s: empty command", name)
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("adapter %s: %w", name, err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, fmt.Errorf("adapter %s: %w", name, err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, log
	// Its own group, so that a pause or a kill reaches every thread and
	// child of the client; SIGKILL if the harness dies first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.WaitDelay = time.Second
	err = cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, fmt.Errorf("adapter %s: start %q: %w", name, argv[0], err)
	}
	p := &proc{name: name, cmd: cmd, stdin: inW, out: outR, br: bufio.NewReaderSize(outR, 64<<10), log: log,
		late: map[int64]bool{}, gone: make(chan struct{}), exited: make(chan struct{}), pgid: cmd.Process.Pid}
	p.enc = json.NewEncoder(&p.wbuf)
	go p.wait()
	return p, nil
}

// wait reaps the process and kills what is left of its group.
func (p *proc) wait() {
	err := p.cmd.Wait()
	_ = p.signal(syscall.SIGKILL) // children it left behind
	status := "exit status 0"
	if err != nil {
		status = err.Error()
	}
	p.mu.Lock()
	var during string
	if p.awaiting != 0 {
		during = fmt.Sprintf("request %d (%s)", p.awaiting, p.awaitingOp)
	}
	p.mu.Unlock()
	p.end(&ExitError{Adapter: p.name, Status: status, Log: p.log.Tail(), During: during})
	close(p.exited)
}

var errLineTooLong = errors.New("line too long")

// readLine reads one line without its newline, at most maxLine bytes, by
// deadline. A line cut short by the deadline is kept for the next read.
// The line is valid until the next read.
func (p *proc) readLine(ctx context.Context, deadline time.Time) ([]byte, error) {
	if err := keepDeadline(p.out.SetReadDeadline, &p.readBy, deadline); err != nil {
		return nil, err
	}
	for {
		frag, err := p.br.ReadSlice('\n')
		if err == nil && len(p.partial) == 0 {
			return bytes.TrimRight(frag, "\r\n"), nil // the whole line in the buffer: no copy
		}
		if errors.Is(err, os.ErrDeadlineExceeded) && len(frag) == 0 {
			if err := renewDeadline(ctx, p.out.SetReadDeadline, &p.readBy, deadline); err != nil {
				return nil, err
			}
			continue
		}
		p.partial = append(p.partial, frag...)
		if len(p.partial) > maxLine {
			return p.partial[:maxLine], errLineTooLong
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			continue // renewed (or given up) at the next turn, with no fragment
		}
		if err != nil {
			return nil, err
		}
		line := bytes.TrimRight(p.partial, "\r\n")
		p.partial = nil
		return line, nil
	}
}

// keepDeadline makes sure a pipe's deadline (set with set, last set to
// *by) is no later than want, keeping the one set when it is. Setting a
// deadline re-arms a runtime timer, and each re-arming may wake an idle
// thread of the scheduler to look at the timers (runtime.wakeNetPoller):
// with two a request, that was a large share of the harness's side of a
// round trip (BenchmarkRedisPy). A deadline kept that passes before want
// is renewed by renewDeadline.
func keepDeadline(set func(time.Time) error, by *time.Time, want time.Time) error {
	if !by.IsZero() && !by.After(want) {
		return nil
	}
	*by = want
	return set(want)
}

// renewDeadline is called when a pipe's deadline passed: it returns
// os.ErrDeadlineExceeded when the request's own deadline (want) has
// passed or ctx is done, and otherwise sets want, so that the read or
// write goes on. The deadline that passed was one kept from an earlier
// request, or the instant set when ctx was done (call's AfterFunc): ctx
// is checked after want is set, so a cancellation is never overwritten.
func renewDeadline(ctx context.Context, set func(time.Time) error, by *time.Time, want time.Time) error {
	if !time.Now().Before(want) || ctx.Err() != nil {
		return os.ErrDeadlineExceeded
	}
	*by = want
	if err := set(want); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return os.ErrDeadlineExceeded
	}
	return nil
}

// await reads answers until the one to id, the deadline, or the end of
// the process.
func (p *proc) await(ctx context.Context, id int64, op string, sent, deadline time.Time) (answer, error) {
	for {
		line, err := p.readLine(ctx, deadline)
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			p.abandon(id)
			if why := p.reason(); why != nil {
				return answer{}, fmt.Errorf("%s: %w", op, why)
			}
			return answer{}, &errTimeout{adapter: p.name, id: id, op: op, after: time.Since(sent)}
		case errors.Is(err, errLineTooLong):
			n := p.countLine()
			return answer{}, p.breakProtocol(&ProtocolError{Adapter: p.name, LineNo: n, Line: string(line), Problem: fmt.Sprintf("a line longer than %d bytes", maxLine)})
		case err != nil:
			return answer{}, p.ended(err)
		}
		a, ok, err := p.dispatch(id, line)
		if err != nil {
			return answer{}, p.breakProtocol(err)
		}
		if ok {
			return a, nil
		}
	}
}

// ended is why the adapter's stdout ended: its exit, once reaped, or a
// protocol fault when it closed stdout and lives on.
func (p *proc) ended(readErr error) error {
	select {
	case <-p.exited:
	case <-time.After(2 * time.Second):
	}
	if why := p.reason(); why != nil {
		return why
	}
	return p.breakProtocol(&ProtocolError{Adapter: p.name, Problem: fmt.Sprintf("its stdout ended (%v) while it still runs", readErr)})
}

func (p *proc) countLine() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lineNo++
	return p.lineNo
}

func (p *proc) reason() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.why
}

// dispatch judges one line read while waiting for request id: ok when it
// is that request's answer, an error when it breaks the protocol.
func (p *proc) dispatch(id int64, line []byte) (answer, bool, error) {
	n := p.countLine()
	if len(bytes.TrimSpace(line)) == 0 {
		return answer{}, false, nil // blank lines are allowed
	}
	bad := func(problem string) error {
		return &ProtocolError{Adapter: p.name, LineNo: n, Line: string(line), Problem: problem}
	}
	a, problem := parseAnswer(line)
	if problem != "" {
		return a, false, bad(problem)
	}
	got := *a.ID
	if got == id {
		return a, true, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.late[got]:
		delete(p.late, got)
		p.log.Note(fmt.Sprintf("late answer to request %d, after the harness gave up on it: dropped", got))
		return a, false, nil
	case got >= 1 && got <= p.next:
		return a, false, bad(fmt.Sprintf("a second answer to request %d: every request gets exactly one", got))
	}
	return a, false, bad(fmt.Sprintf("an answer to nothing: no request has id %d", got))
}

// parseAnswer reads one non-blank line of an adapter's stdout as an
// answer, or says what is wrong with it: pure, so that it is fuzzed
// (FuzzAnswer) apart from the process.
func parseAnswer(line []byte) (answer, string) {
	a, ok := scanAnswer(line) // the answers of every cycle, without reflection
	if !ok {
		a = answer{}
		if err := json.Unmarshal(line, &a); err != nil {
			return a, "not a JSON object (" + err.Error() + "); an adapter writes only answers to stdout, its log goes to stderr"
		}
	}
	if a.ID == nil {
		return a, `no "id": every answer carries the id of the request it answers`
	}
	switch a.Status {
	case statusOK, statusFail, statusUnknown:
	default:
		return a, fmt.Sprintf(`"status" is %q, want "ok", "fail" or "unknown"`, a.Status)
	}
	return a, ""
}

// breakProtocol records the adapter's fault, kills it and returns err.
func (p *proc) breakProtocol(err error) error {
	p.end(err)
	_ = p.signal(syscall.SIGKILL)
	return err
}

// end marks the process as gone for reason err (the first reason wins),
// a fault unless the harness ended it.
func (p *proc) end(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.why != nil {
		return
	}
	p.why = err
	if !p.ours {
		p.fault = err
		p.log.Note("harness: " + err.Error())
	}
	close(p.gone)
}

// signal sends sig to the process group while the harness is entitled to:
// until the group's leader is reaped and its group killed.
func (p *proc) signal(sig syscall.Signal) error {
	err := syscall.Kill(-p.pgid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil // nothing left
	}
	return err
}

// errTimeout is a request that got no answer in time.
type errTimeout struct {
	adapter string
	id      int64
	op      string
	after   time.Duration
}

func (e *errTimeout) Error() string {
	return fmt.Sprintf("adapter %s: no answer to request %d (%s) within %v", e.adapter, e.id, e.op, e.after.Round(time.Millisecond))
}
func (e *errTimeout) Unwrap() []error { return []error{ErrUnknown, context.DeadlineExceeded} }

// call sends req and waits for its answer until limit has passed or ctx
// is done. It returns the answer and the instant before the request was
// sent (the anchor of a lease's deadline).
func (p *proc) call(ctx context.Context, req request, limit time.Duration) (answer, time.Time, error) {
	p.callMu.Lock()
	defer p.callMu.Unlock()
	p.mu.Lock()
	if p.why != nil {
		err := p.why
		p.mu.Unlock()
		return answer{}, time.Time{}, fmt.Errorf("%s: %w", req.Op, err)
	}
	p.next++
	req.ID = p.next
	p.awaiting, p.awaitingOp = req.ID, req.Op
	p.mu.Unlock()
	line, err := p.encode(req)
	if err != nil {
		return answer{}, time.Time{}, err
	}
	sent := time.Now()
	deadline := sent.Add(limit)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if err := p.write(ctx, line, deadline); err != nil {
		p.abandon(req.ID)
		return answer{}, sent, fmt.Errorf("adapter %s: sending request %d (%s): %v: %w", p.name, req.ID, req.Op, err, ErrUnknown)
	}
	if ctx.Done() != nil {
		// A cancelled context ends the wait at once.
		stop := context.AfterFunc(ctx, func() { _ = p.out.SetReadDeadline(time.Now()) })
		defer stop()
	}
	a, err := p.await(ctx, req.ID, req.Op, sent, deadline)
	if err != nil && ctx.Err() != nil && errors.As(err, new(*errTimeout)) {
		return answer{}, sent, fmt.Errorf("adapter %s: request %d (%s): %w: %w", p.name, req.ID, req.Op, ErrUnknown, context.Cause(ctx))
	}
	return a, sent, err
}

// encode makes req's line, valid until the next request: the requests of
// every cycle by hand (appendRequest), the others by the encoder.
func (p *proc) encode(req request) ([]byte, error) {
	if line, ok := appendRequest(p.reqLine[:0], req); ok {
		p.reqLine = line
		return line, nil
	}
	p.wbuf.Reset()
	if err := p.enc.Encode(req); err != nil { // one line: Encode ends it with a newline
		return nil, fmt.Errorf("adapter %s: encoding request %d (%s): %w", p.name, req.ID, req.Op, err)
	}
	return p.wbuf.Bytes(), nil
}

// write sends line, giving up at deadline (an adapter that reads nothing
// fills the pipe).
func (p *proc) write(ctx context.Context, line []byte, deadline time.Time) error {
	if err := keepDeadline(p.stdin.SetWriteDeadline, &p.writeBy, deadline); err != nil {
		return err
	}
	for {
		n, err := p.stdin.Write(line)
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			return err
		}
		if err := renewDeadline(ctx, p.stdin.SetWriteDeadline, &p.writeBy, deadline); err != nil {
			return err
		}
		line = line[n:]
	}
}

// abandon forgets request id: its answer, if it comes, is late.
func (p *proc) abandon(id int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.late) < maxLate {
		p.late[id] = true
	}
}

// kill ends the process group at once; the harness did it, so it is not
// a fault.
func (p *proc) kill(why error) {
	p.mu.Lock()
	p.ours = true
	p.mu.Unlock()
	p.end(why)
	_ = p.signal(syscall.SIGCONT) // a stopped group dies on SIGKILL too, but be plain
	_ = p.signal(syscall.SIGKILL)
	p.stdin.Close()
	<-p.exited
	p.out.Close()
}

// shutdown asks the adapter to close, gives it grace to exit, then kills
// whatever is left of its group.
func (p *proc) shutdown(grace time.Duration) {
	p.closeAndWait(grace)
	p.kill(errors.New("closed"))
}

// closeAndWait sends close, closes stdin and waits up to grace for the
// process to exit; it reports whether it did.
func (p *proc) closeAndWait(grace time.Duration) bool {
	select {
	case <-p.gone:
		select {
		case <-p.exited:
			return true
		case <-time.After(grace):
			return false
		}
	default:
	}
	p.mu.Lock()
	p.ours = true // an exit from now on is the one asked for
	p.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	_, _, _ = p.call(ctx, request{Op: opClose}, grace)
	cancel()
	p.stdin.Close()
	select {
	case <-p.exited:
		return true
	case <-time.After(grace):
		return false
	}
}

// Err is the adapter's fault, if any.
func (p *proc) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.fault
}
