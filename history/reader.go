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
// It parses the recorder's lines where they lie in the reader's buffer
// (decoder.orderedLine on bufio.Reader.Peek), finding each line's end as
// it parses it: looking for the newline first (ReadSlice) was another
// pass over every byte, a tenth of reading a history of short events.
// Any other line, and the line the buffer ends in, is read by ReadSlice
// and decoded whole.
type Scanner struct {
	d         *decoder
	br        *bufio.Reader
	line      int
	op        Op
	err       error
	truncated bool
	done      bool
}

// NewScanner reads a history from r.
func NewScanner(r io.Reader) *Scanner {
	// The buffer is the bound: ReadSlice fails with ErrBufferFull on a
	// longer line instead of growing.
	return &Scanner{d: newDecoder(), br: bufio.NewReaderSize(r, MaxLine)}
}

// Scan reads the next event; false at the end of the history, on an
// error (see Err) or when ctx is done.
func (s *Scanner) Scan(ctx context.Context) bool {
	for !s.done {
		s.op = Op{}
		buf, _ := s.br.Peek(s.br.Buffered()) // what is read; never reads
		if n := s.d.orderedLine(buf, &s.op); n > 0 {
			s.line++
			if s.line%4096 == 0 && ctx.Err() != nil {
				return s.stopped(ctx)
			}
			_, _ = s.br.Discard(n) // buffered: no error
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
	b, err := s.br.ReadSlice('\n')
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
