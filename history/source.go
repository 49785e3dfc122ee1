package history

import (
	"bytes"
	"context"
	"fmt"
	"os"
)

// Source is a history for whoever reads it, the check and the report
// alike: a file, read one event at a time each time a reader goes through
// it, so that no reader holds a long history in memory; or events that
// are in memory already (a recorder that kept them, a test). Each is the
// one way through it.
type Source struct {
	path      string
	ops       []Op
	inMemory  bool
	truncated bool // events read whole from a path whose last line was cut off
}

// File is the history file at path, read event by event.
func File(path string) Source { return Source{path: path} }

// Events is a history already in memory.
func Events(ops []Op) Source { return Source{ops: ops, inMemory: true} }

// Open is the history at path as a source: a regular file is read event
// by event whenever a reader goes through it; anything else (a pipe, which
// cannot be read twice) is read whole now, once. Its errors are
// ReadFileContext's: a path that cannot be read, a directory, a line that
// is not an event.
func Open(ctx context.Context, path string) (Source, error) {
	if st, err := os.Stat(path); err == nil && st.Mode().IsRegular() {
		return File(path), nil
	}
	rr, err := ReadFileContext(ctx, path)
	if err != nil {
		return Source{}, err
	}
	return Source{path: path, ops: rr.Ops, inMemory: true, truncated: rr.Truncated}, nil
}

// Path is the file the history is read from, "" for events in memory
// that never were in a file.
func (s Source) Path() string { return s.path }

// InMemory returns the events of a history that is in memory; false for
// one read from its file.
func (s Source) InMemory() ([]Op, bool) { return s.ops, s.inMemory }

// Truncated reports, for a history Open read whole, whether its last line
// was cut off (a killed run) and dropped. A file read event by event says
// it from Each.
func (s Source) Truncated() bool { return s.truncated }

// Each calls yield with every event of the history, in order, until yield
// returns false. An event read from a file is valid only during the call:
// copy it to keep it. truncated reports a last line cut off by a killed
// run, which is dropped (see Read). err is for a file that cannot be read,
// or ctx done while reading one; events in memory are all given whatever
// ctx says.
func (s Source) Each(ctx context.Context, yield func(*Op) bool) (truncated bool, err error) {
	if s.inMemory {
		for i := range s.ops {
			if !yield(&s.ops[i]) {
				break
			}
		}
		return s.truncated, nil
	}
	f, err := os.Open(s.path)
	if err != nil {
		return false, fmt.Errorf("open history: %w", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.IsDir() {
		return false, fmt.Errorf("history %s is a directory: give the history.jsonl inside it", s.path)
	}
	sc := NewScanner(f)
	for sc.Scan(ctx) {
		// The scanner's own event, overwritten by the next Scan: yield's
		// may not outlive the call.
		if !yield(sc.current()) {
			return sc.Truncated(), nil
		}
	}
	if err := sc.Err(); err != nil {
		return sc.Truncated(), fmt.Errorf("%s: %w", s.path, err)
	}
	return sc.Truncated(), ctx.Err()
}

// ReadAll is the whole history in memory: the events of a history in
// memory, or its file read once.
func (s Source) ReadAll(ctx context.Context) (ReadResult, error) {
	if s.inMemory {
		return ReadResult{Ops: s.ops, Truncated: s.truncated}, nil
	}
	return ReadFileContext(ctx, s.path)
}

// tailBytes is how much of a history file's end LastTime reads: many
// lines, so that a last line cut off by a killed run leaves whole ones.
const tailBytes = 64 << 10

// LastTime is the time of the history's last whole event, read from the
// end of its file (a last line cut off by a killed run is passed over):
// what a reader that must size something by the history's span before
// going through it needs (the report's overview timeline, gathered while
// the check reads the history). ok is false when it cannot say (an empty
// history, a file that cannot be read, no whole event in its last 64 KB).
func (s Source) LastTime() (t int64, ok bool) {
	if s.inMemory {
		if len(s.ops) == 0 {
			return 0, false
		}
		return s.ops[len(s.ops)-1].Time, true
	}
	f, err := os.Open(s.path)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return 0, false
	}
	from := max(0, st.Size()-tailBytes)
	buf := make([]byte, st.Size()-from)
	if _, err := f.ReadAt(buf, from); err != nil {
		return 0, false
	}
	lines := bytes.Split(buf, []byte("\n"))
	if from > 0 {
		lines = lines[1:] // the first may be a part of a line
	}
	d := newDecoder()
	for i := len(lines) - 1; i >= 0; i-- {
		if len(bytes.TrimSpace(lines[i])) == 0 {
			continue
		}
		if op, err := d.decode(lines[i]); err == nil {
			return op.Time, true
		}
	}
	return 0, false
}
