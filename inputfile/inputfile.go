// Package inputfile opens the files a user names on the command line
// (targets, expectations, histories, shard artifacts) the one safe way: a
// regular file only, opened without blocking, of a bounded size, and read
// so that a cancelled context stops it. Without it, `--expect /dev/zero`
// read until memory ran out, and `--target FIFO` blocked in open(2) so that
// not even Ctrl-C ended the harness (issue 22, rows 7 and 19).
package inputfile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"
)

// Kind is a kind of input file, as the errors name it: "target file",
// named by the flag "--target" (empty when no flag names it), of at most
// Max bytes (0: no bound, for a file read as a stream, such as a history).
type Kind struct {
	Name string
	Flag string
	Max  int64
}

// what is how an error names the file: by its flag and path.
func (k Kind) what(path string) string {
	if k.Flag != "" {
		return k.Flag + " " + path
	}
	return k.Name + " " + path
}

// Open opens path for reading. It refuses what is not a regular file (a
// directory, a FIFO, a device, a socket), naming what it is, and a file
// larger than k.Max. The open itself does not block: O_NONBLOCK makes
// open(2) of a FIFO with no writer return at once, so the check is made on
// the file opened (no race between a stat and the open).
func Open(path string, k Kind) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", k.what(path), unwrapPath(err))
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", k.what(path), unwrapPath(err))
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s is %s, not a regular file: give the path of the %s", k.what(path), describe(st.Mode()), k.Name)
	}
	if k.Max > 0 && st.Size() > k.Max {
		f.Close()
		return nil, tooLarge(path, k, st.Size())
	}
	return f, nil
}

// Read reads the whole of path (see Open), at most k.Max bytes, a chunk at
// a time, stopping when ctx is done. A file that grows past k.Max while it
// is read is refused as well.
func Read(ctx context.Context, path string, k Kind) ([]byte, error) {
	f, err := Open(path, k)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var buf bytes.Buffer
	if st, err := f.Stat(); err == nil {
		buf.Grow(int(st.Size()) + 1)
	}
	r := io.Reader(f)
	if k.Max > 0 {
		r = io.LimitReader(f, k.Max+1)
	}
	for {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("%s: %w", k.what(path), err)
		}
		n, err := io.CopyN(&buf, r, chunk)
		if k.Max > 0 && int64(buf.Len()) > k.Max {
			return nil, fmt.Errorf("%s grew past the most %s may be (%s) while it was read: is it the right file?", k.what(path), article(k.Name), bytesText(k.Max))
		}
		if errors.Is(err, io.EOF) || (err == nil && n < chunk) {
			return buf.Bytes(), nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k.what(path), err)
		}
	}
}

// chunk is how much Read reads between two looks at its context.
const chunk = 256 << 10

func tooLarge(path string, k Kind, size int64) error {
	return fmt.Errorf("%s is %s, more than %s may be (%s): is it the right file?", k.what(path), bytesText(size), article(k.Name), bytesText(k.Max))
}

// article is name after "a" or "an".
func article(name string) string {
	if name != "" && strings.ContainsRune("aeiou", rune(name[0])) {
		return "an " + name
	}
	return "a " + name
}

// describe names a file mode's type for an error.
func describe(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return "not a regular file (" + m.Type().String() + ")"
}

// bytesText is n in the largest binary unit that keeps it readable.
func bytesText(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// unwrapPath drops the *fs.PathError's own "open PATH:" prefix: the
// message names the path already.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
