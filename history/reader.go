package history

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// ErrMalformed is wrapped by every error about the content of a history.
var ErrMalformed = errors.New("malformed history")

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
// other bad line is an error that names its line number.
func Read(r io.Reader) (ReadResult, error) {
	var res ReadResult
	br := bufio.NewReaderSize(r, 256<<10)
	line := 0
	for {
		b, err := br.ReadBytes('\n')
		if len(b) == 0 && err == io.EOF {
			return res, nil
		}
		if err != nil && err != io.EOF {
			return res, fmt.Errorf("read history: %w", err)
		}
		line++
		complete := err == nil
		b = bytes.TrimSpace(b)
		if len(b) == 0 {
			if !complete {
				return res, nil
			}
			continue
		}
		var op Op
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		perr := dec.Decode(&op)
		if perr == nil && dec.More() {
			perr = errors.New("trailing data after the JSON object")
		}
		if perr == nil {
			perr = op.Validate()
		}
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
	f, err := os.Open(path)
	if err != nil {
		return ReadResult{}, fmt.Errorf("open history: %w", err)
	}
	defer f.Close()
	res, err := Read(f)
	if err != nil {
		return res, fmt.Errorf("%s: %w", path, err)
	}
	return res, nil
}
