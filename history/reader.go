package history

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
)

// ErrMalformed is wrapped by every error about the content of a history.
var ErrMalformed = errors.New("malformed history")

// MaxLine bounds one line of a history. An event the harness writes is a
// few hundred bytes; without a bound a file without newlines (a 1 GB line,
// /dev/zero) is read into memory until the machine runs out of it.
const MaxLine = 1 << 20

// LineError names the line of a history that could not be read.
type LineError struct {
	Line int
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }
func (e *LineError) Unwrap() []error {
	return []error{ErrMalformed, e.Err}
}

// ReadResult is a history read back from JSON lines.
type ReadResult struct {
	Ops []Op
	// Truncated is true when the last line was cut off (a killed run) and was
	// dropped. Every earlier line was complete and valid.
	Truncated bool
}

// Read parses a JSONL history. A last line without a trailing newline that
// does not parse is taken as a write cut short by a crash and dropped; any
// other bad line, and any line longer than MaxLine, is an error that names
// its line number.
func Read(r io.Reader) (ReadResult, error) {
	return ReadContext(context.Background(), r)
}

// ReadContext is Read that stops when ctx is done (a long history takes
// seconds to parse), returning ctx's error.
func ReadContext(ctx context.Context, r io.Reader) (ReadResult, error) {
	return readContext(ctx, r, 0)
}

// readContext is ReadContext with room for sizeHint events made at once.
func readContext(ctx context.Context, r io.Reader, sizeHint int) (ReadResult, error) {
	var res ReadResult
	if sizeHint > 0 {
		res.Ops = make([]Op, 0, sizeHint)
	}
	sc := NewScanner(r)
	for sc.Scan(ctx) {
		res.Ops = append(res.Ops, sc.Op())
	}
	res.Truncated = sc.Truncated()
	return res, sc.Err()
}

// Scanner reads a JSONL history one event at a time, with the meaning of
// Read (a cut-off last line is dropped and reported by Truncated), so that
// a reader that needs only a window of the history at once (the checker
// of a long run) never holds the rest.
//
// It reads the history in blocks of MaxLine bytes and parses the
// recorder's lines where they lie in its block (decoder.orderedLine),
// finding each line's end as it parses it: looking for the newline first
// (bufio.Reader.ReadSlice) was another pass over every byte, a tenth of
// reading a history of short events. Any other line, and the line a
// block ends in, is found as ReadSlice finds it (readLine) and decoded
// whole.
type Scanner struct {
	d         *decoder
	r         io.Reader
	buf       []byte // MaxLine bytes: the bound on a line
	head      int    // buf[head:tail] is read and not yet scanned
	tail      int
	rerr      error // the reader's, once buf[head:tail] is scanned
	line      int
	op        Op
	err       error
	truncated bool
	done      bool
}

// NewScanner reads a history from r.
func NewScanner(r io.Reader) *Scanner {
	return &Scanner{d: newDecoder(), r: r, buf: make([]byte, MaxLine)}
}

// Scan reads the next event; false at the end of the history, on an
// error (see Err) or when ctx is done.
func (s *Scanner) Scan(ctx context.Context) bool {
	for !s.done {
		s.op = Op{}
		if n := s.d.orderedLine(s.buf[s.head:s.tail], &s.op); n > 0 {
			s.line++
			if s.line%4096 == 0 && ctx.Err() != nil {
				return s.stopped(ctx)
			}
			s.head += n
			if err := s.op.validate(); err != nil {
				return s.fail(&LineError{Line: s.line, Err: err})
			}
			return true
		}
		if ok, event := s.scanLine(ctx); event || s.done {
			return ok
		}
	}
	return false
}

// scanLine reads and decodes the next line as a whole: event is true
// when Scan is to return ok (an event, or the end of the scan), false
// for an empty line (Scan goes on).
func (s *Scanner) scanLine(ctx context.Context) (ok, event bool) {
	b, err := s.readLine()
	if len(b) == 0 && err == io.EOF {
		s.done = true
		return false, true
	}
	s.line++
	if s.line%4096 == 0 && ctx.Err() != nil {
		return s.stopped(ctx), true
	}
	if errors.Is(err, bufio.ErrBufferFull) {
		return s.fail(&LineError{Line: s.line, Err: fmt.Errorf("longer than %d bytes: not a history (an event the harness writes is a few hundred bytes)", MaxLine)}), true
	}
	if err != nil && err != io.EOF {
		return s.fail(fmt.Errorf("read history: %w", err)), true
	}
	complete := err == nil
	if !complete {
		s.done = true
	}
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return false, !complete
	}
	if perr := s.d.decodeInto(b, &s.op); perr != nil {
		if !complete {
			s.truncated = true
			return false, true
		}
		return s.fail(&LineError{Line: s.line, Err: perr}), true
	}
	return true, true
}

func (s *Scanner) stopped(ctx context.Context) bool {
	return s.fail(fmt.Errorf("read history: stopped at line %d: %w", s.line, context.Cause(ctx)))
}

// readLine is bufio.Reader.ReadSlice('\n') on the scanner's block, with
// its errors: the next line with its newline; at the reader's end or
// error, what is left of the history with that error; bufio.ErrBufferFull
// for a line that does not fit in the block.
func (s *Scanner) readLine() ([]byte, error) {
	searched := 0 // of buf[head:tail], bytes known to hold no newline
	for {
		if i := bytes.IndexByte(s.buf[s.head+searched:s.tail], '\n'); i >= 0 {
			end := s.head + searched + i + 1
			b := s.buf[s.head:end]
			s.head = end
			return b, nil
		}
		searched = s.tail - s.head
		b := s.buf[s.head:s.tail]
		switch {
		case s.rerr != nil:
			s.head = s.tail
			return b, s.rerr
		case searched >= len(s.buf):
			s.head = s.tail
			return b, bufio.ErrBufferFull
		}
		s.fill()
	}
}

// fill moves what is left of the block to its start and reads after it,
// as bufio.Reader.fill: one read that returns bytes or an error, or
// io.ErrNoProgress after a hundred that return neither.
func (s *Scanner) fill() {
	if s.head > 0 {
		s.tail = copy(s.buf, s.buf[s.head:s.tail])
		s.head = 0
	}
	for range 100 {
		n, err := s.r.Read(s.buf[s.tail:])
		if n < 0 || n > len(s.buf)-s.tail {
			s.rerr = errors.New("the reader returned a count out of range")
			return
		}
		s.tail += n
		if err != nil {
			s.rerr = err
			return
		}
		if n > 0 {
			return
		}
	}
	s.rerr = io.ErrNoProgress
}

func (s *Scanner) fail(err error) bool {
	s.err, s.done = err, true
	return false
}

// Op is the event the last Scan read.
func (s *Scanner) Op() Op { return s.op }

// current is the event the last Scan read, where it lies: valid until the
// next Scan.
func (s *Scanner) current() *Op { return &s.op }

// Err is the error that ended the scan, nil at the end of the history.
func (s *Scanner) Err() error { return s.err }

// Truncated reports whether the last line was cut off (a killed run) and
// dropped.
func (s *Scanner) Truncated() bool { return s.truncated }

// ReadFile reads a JSONL history from path.
func ReadFile(path string) (ReadResult, error) {
	return ReadFileContext(context.Background(), path)
}

// ReadFileContext is ReadFile that stops when ctx is done.
func ReadFileContext(ctx context.Context, path string) (ReadResult, error) {
	f, err := os.Open(path)
	if err != nil {
		return ReadResult{}, fmt.Errorf("open history: %w", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.IsDir() {
		return ReadResult{}, fmt.Errorf("history %s is a directory: give the history.jsonl inside it (or use `harness report %s`)", path, path)
	}
	// Make room for the history at once rather than copy it while it
	// grows (a copy is a third of a large history's memory): count its
	// lines first, which costs a small part of parsing them.
	// Only a regular file: a pipe cannot be read twice, and a device
	// (/dev/zero) may never end.
	hint := 0
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
		if hint, err = countLines(ctx, f); err != nil {
			return ReadResult{}, fmt.Errorf("%s: %w", path, err)
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return ReadResult{}, fmt.Errorf("%s: %w", path, err)
		}
		// No event is shorter than 50 bytes: empty lines make no room.
		hint = min(hint, int(st.Size()/50)+1)
	}
	res, err := readContext(ctx, f, hint)
	if err != nil {
		return res, fmt.Errorf("%s: %w", path, err)
	}
	return res, nil
}

// countLines counts the newlines of r, plus one for a last line without.
func countLines(ctx context.Context, r io.Reader) (int, error) {
	buf := make([]byte, 256<<10)
	n, last := 0, byte('\n')
	for {
		k, err := r.Read(buf)
		if k > 0 {
			n += bytes.Count(buf[:k], []byte{'\n'})
			last = buf[k-1]
		}
		if err == io.EOF {
			if last != '\n' {
				n++
			}
			return n, nil
		}
		if err != nil {
			return 0, fmt.Errorf("read history: %w", err)
		}
		if ctx.Err() != nil {
			return 0, fmt.Errorf("read history: %w", context.Cause(ctx))
		}
	}
}
