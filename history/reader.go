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
	d := newDecoder()
	// The buffer is the bound: ReadSlice fails with ErrBufferFull on a
	// longer line instead of growing.
	br := bufio.NewReaderSize(r, MaxLine)
	line := 0
	for {
		b, err := br.ReadSlice('\n')
		if len(b) == 0 && err == io.EOF {
			return res, nil
		}
		line++
		if line%4096 == 0 && ctx.Err() != nil {
			return res, fmt.Errorf("read history: stopped at line %d: %w", line, context.Cause(ctx))
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			return res, &LineError{Line: line, Err: fmt.Errorf("longer than %d bytes: not a history (an event the harness writes is a few hundred bytes)", MaxLine)}
		}
		if err != nil && err != io.EOF {
			return res, fmt.Errorf("read history: %w", err)
		}
		complete := err == nil
		b = bytes.TrimSpace(b)
		if len(b) == 0 {
			if !complete {
				return res, nil
			}
			continue
		}
		op, perr := d.decode(b)
		if perr != nil {
			if !complete {
				res.Truncated = true
				return res, nil
			}
			return res, &LineError{Line: line, Err: perr}
		}
		res.Ops = append(res.Ops, op)
		if !complete {
			return res, nil
		}
	}
}

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
