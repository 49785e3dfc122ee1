package adapter

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
// requests with ids out, answers matched to them in.
type proc struct {
	name  string
	cmd   *exec.Cmd
	stdin *os.File
	log   *boundedLog

	mu      sync.Mutex
	next    int64 // the last id sent
	pending map[int64]chan answer
	late    map[int64]bool // abandoned ids whose answer may still come
	lineNo  int
	// gone is closed once the process cannot answer any more; why says
	// why. fault is set when that was not the harness's doing (Err).
	gone   chan struct{}
	why    error
	fault  error
	ours   bool // the harness killed or closed it
	exited chan struct{}
	pgid   int
	during string // what the harness awaits, for an exit's message
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
	p := &proc{name: name, cmd: cmd, stdin: inW, log: log, pending: map[int64]chan answer{}, late: map[int64]bool{},
		gone: make(chan struct{}), exited: make(chan struct{}), pgid: cmd.Process.Pid}
	readDone := make(chan struct{})
	go func() { p.read(outR); close(readDone) }()
	go p.wait(readDone, outR)
	return p, nil
}

// wait reaps the process and kills what is left of its group.
func (p *proc) wait(readDone <-chan struct{}, out *os.File) {
	err := p.cmd.Wait()
	p.signal(syscall.SIGKILL) // children it left behind
	select {
	case <-readDone:
	case <-time.After(time.Second):
		out.Close() // a grandchild holds stdout open: stop reading
		<-readDone
	}
	out.Close()
	status := "exit status 0"
	if err != nil {
		status = err.Error()
	}
	p.mu.Lock()
	during := p.during
	p.mu.Unlock()
	p.end(&ExitError{Adapter: p.name, Status: status, Log: p.log.Tail(), During: during})
	close(p.exited)
}

// read dispatches the adapter's stdout, line by line, until it ends.
func (p *proc) read(r io.Reader) {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := readLine(br)
		if errors.Is(err, errLineTooLong) {
			p.mu.Lock()
			p.lineNo++
			n := p.lineNo
			p.mu.Unlock()
			p.breakProtocol(&ProtocolError{Adapter: p.name, LineNo: n, Line: string(line), Problem: fmt.Sprintf("a line longer than %d bytes", maxLine)})
			_, _ = io.Copy(io.Discard, br)
			return
		}
		if len(line) > 0 || err == nil {
			p.dispatch(line)
		}
		if err != nil {
			return
		}
	}
}

var errLineTooLong = errors.New("line too long")

// readLine reads one line without its newline, at most maxLine bytes.
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		frag, err := br.ReadSlice('\n')
		line = append(line, frag...)
		if len(line) > maxLine {
			return line[:maxLine], errLineTooLong
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimRight(line, "\r\n"), err
	}
}

// dispatch hands one line to the request it answers.
func (p *proc) dispatch(line []byte) {
	p.mu.Lock()
	p.lineNo++
	n, gone := p.lineNo, p.why != nil
	p.mu.Unlock()
	if gone || len(bytes.TrimSpace(line)) == 0 {
		return // nothing it says after its end counts; blank lines are allowed
	}
	bad := func(problem string) {
		p.breakProtocol(&ProtocolError{Adapter: p.name, LineNo: n, Line: string(line), Problem: problem})
	}
	var a answer
	if err := json.Unmarshal(line, &a); err != nil {
		bad("not a JSON object (" + err.Error() + "); an adapter writes only answers to stdout, its log goes to stderr")
		return
	}
	if a.ID == nil {
		bad(`no "id": every answer carries the id of the request it answers`)
		return
	}
	switch a.Status {
	case statusOK, statusFail, statusUnknown:
	default:
		bad(fmt.Sprintf(`"status" is %q, want "ok", "fail" or "unknown"`, a.Status))
		return
	}
	p.deliver(*a.ID, a, bad)
}

// deliver gives a to the request with id, or says what is wrong.
func (p *proc) deliver(id int64, a answer, bad func(string)) {
	p.mu.Lock()
	ch, ok := p.pending[id]
	switch {
	case ok:
		delete(p.pending, id)
		p.mu.Unlock()
		ch <- a
	case p.late[id]:
		delete(p.late, id)
		p.mu.Unlock()
		p.log.Note(fmt.Sprintf("late answer to request %d, after the harness gave up on it: dropped", id))
	case id >= 1 && id <= p.next:
		p.mu.Unlock()
		bad(fmt.Sprintf("a second answer to request %d: every request gets exactly one", id))
	default:
		p.mu.Unlock()
		bad(fmt.Sprintf("an answer to nothing: no request has id %d", id))
	}
}

// breakProtocol records the adapter's fault and kills it.
func (p *proc) breakProtocol(err error) {
	p.end(err)
	p.signal(syscall.SIGKILL)
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
	p.mu.Lock()
	if p.why != nil {
		err := p.why
		p.mu.Unlock()
		return answer{}, time.Time{}, fmt.Errorf("%s: %w", req.Op, err)
	}
	p.next++
	req.ID = p.next
	ch := make(chan answer, 1)
	p.pending[req.ID] = ch
	p.during = fmt.Sprintf("request %d (%s)", req.ID, req.Op)
	p.mu.Unlock()
	line, err := json.Marshal(req)
	if err != nil {
		p.abandon(req.ID)
		return answer{}, time.Time{}, err
	}
	sent := time.Now()
	deadline := sent.Add(limit)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if err := p.write(append(line, '\n'), deadline); err != nil {
		p.abandon(req.ID)
		return answer{}, sent, fmt.Errorf("adapter %s: sending request %d (%s): %v: %w", p.name, req.ID, req.Op, err, ErrUnknown)
	}
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	select {
	case a := <-ch:
		return a, sent, nil
	case <-timer.C:
		p.abandon(req.ID)
		return answer{}, sent, &errTimeout{adapter: p.name, id: req.ID, op: req.Op, after: time.Since(sent)}
	case <-ctx.Done():
		p.abandon(req.ID)
		return answer{}, sent, fmt.Errorf("adapter %s: request %d (%s): %w", p.name, req.ID, req.Op, context.Cause(ctx))
	case <-p.gone:
		select {
		case a := <-ch: // answered just before it went
			return a, sent, nil
		default:
		}
		p.mu.Lock()
		err := p.why
		p.mu.Unlock()
		return answer{}, sent, fmt.Errorf("%s: %w", req.Op, err)
	}
}

// write sends line, giving up at deadline (an adapter that reads nothing
// fills the pipe).
func (p *proc) write(line []byte, deadline time.Time) error {
	if err := p.stdin.SetWriteDeadline(deadline); err != nil {
		return err
	}
	_, err := p.stdin.Write(line)
	return err
}

// abandon forgets request id: its answer, if it comes, is late.
func (p *proc) abandon(id int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.pending[id]; !ok {
		return
	}
	delete(p.pending, id)
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
