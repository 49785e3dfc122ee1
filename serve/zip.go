package serve

import (
	"archive/zip"
	"context"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// MaxZip bounds the archive of one run. A run's directory is a history, a
// few JSON files and figures: tens of megabytes for a long run.
const MaxZip = 1 << 30

// Download limits. An archive is built in full into a temporary file while
// the request holds one of maxZips build slots (a compressor and a core
// each), and the slot is given back before a byte is sent: a client that
// reads slowly, or never, holds its connection and its temporary file, not
// a slot, so it cannot make everyone else's download wait. Building in full
// first (rather than streaming the zip as it is compressed) also keeps a
// failure half-way an error status instead of a 200 with a truncated
// archive. The temporary files are bounded by maxDownloads × MaxZip on
// disk, and one address may have maxPerClient downloads at once (more
// than one: under the default loopback address, every browser on the
// machine is the same address).
const (
	maxZips      = 4  // archives built at once; more requests wait for a slot
	maxDownloads = 16 // archives built or being sent at once; more are refused with 503
	maxPerClient = 4  // downloads at once from one remote address; more are refused with 429
)

// SendIdle is how long a response may go without the client taking any of
// it before the connection is cut: a client that never reads is gone
// after it, however large the file, while a slow one that keeps reading
// is never cut off (the deadline moves with every chunk sent).
const SendIdle = 30 * time.Second

// sendChunk is how much is sent between two moves of the write deadline:
// a client must take this much every SendIdle (about 8 KB/s) to keep its
// connection.
const sendChunk = 256 << 10

// downloads counts the archives in flight, in all and per remote address.
type downloads struct {
	mu        sync.Mutex
	total     int
	perClient map[string]int
}

// admit takes a place for a download from addr, or says why not with the
// status to answer: 429 when addr has maxPerClient already, 503 when the
// server has maxDownloads.
func (d *downloads) admit(addr string) (int, string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.perClient[addr] >= maxPerClient {
		return http.StatusTooManyRequests, fmt.Sprintf("%d downloads from your address are in progress already: wait for one to finish", maxPerClient)
	}
	if d.total >= maxDownloads {
		return http.StatusServiceUnavailable, fmt.Sprintf("the server is preparing or sending %d archives already: try again in a moment", maxDownloads)
	}
	d.total++
	d.perClient[addr]++
	return 0, ""
}

func (d *downloads) release(addr string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.total--
	if d.perClient[addr]--; d.perClient[addr] <= 0 {
		delete(d.perClient, addr)
	}
}

// inFlight is the number of downloads being built or sent.
func (d *downloads) inFlight() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.total
}

// clientAddr is the remote address a download is counted against: the
// host, without the port, so that one client's many connections count
// together.
func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// zip sends store/<test>/<run> as a zip: its regular files only, so a
// symbolic link inside a run cannot smuggle anything out. The archive is
// built in full, in a temporary file, before the status line is sent: a
// failure half-way (a file removed while it was read) is then an error
// status, never a 200 with a truncated archive. A run in progress is
// refused with 409: its files are still changing.
func (s *Server) zip(w http.ResponseWriter, r *http.Request) {
	test, run := r.PathValue("test"), strings.TrimSuffix(r.PathValue("run"), ".zip")
	name, ok := cleanName(test + "/" + run)
	if !ok || strings.Count(name, "/") != 1 {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	if st, err := fs.Stat(s.fsys, name); err != nil || !st.IsDir() {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	if s.progress(name) == InProgress {
		http.Error(w, "run in progress: download it when its report is written", http.StatusConflict)
		return
	}
	addr := clientAddr(r)
	if code, msg := s.downloads.admit(addr); code != 0 {
		w.Header().Set("Retry-After", "10")
		http.Error(w, msg, code)
		return
	}
	defer s.downloads.release(addr)
	base := test + "-" + run
	tmp, size, err := s.buildZip(r.Context(), name, base)
	if tmp != nil {
		defer os.Remove(tmp.Name())
		defer tmp.Close()
	}
	if err != nil {
		if r.Context().Err() == nil { // else the client went away
			http.Error(w, "cannot build the archive: "+err.Error(), http.StatusInternalServerError)
		}
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/zip")
	h.Set("Content-Disposition", fmt.Sprintf(`attachment; filename="%s.zip"`, base))
	h.Set("Content-Length", strconv.FormatInt(size, 10))
	w.WriteHeader(http.StatusOK)
	// The write deadline moves with every chunk (see deadlineWriter): a
	// client that stops reading is cut off after SendIdle; one that hangs
	// up gets less, and the length tells it so. ReadFrom with the file
	// itself sends each chunk by sendfile.
	if rf, ok := w.(io.ReaderFrom); ok {
		_, _ = rf.ReadFrom(tmp)
	} else {
		_, _ = io.Copy(w, tmp)
	}
}

// buildZip waits for a build slot, builds the archive of the run at name
// into a temporary file and gives the slot back. It returns the file,
// positioned at its start, and its size; the caller removes the file
// (also when err is not nil).
func (s *Server) buildZip(ctx context.Context, name, base string) (*os.File, int64, error) {
	sub, err := fs.Sub(s.fsys, name)
	if err != nil {
		return nil, 0, err
	}
	select {
	case s.zips <- struct{}{}:
		defer func() { <-s.zips }()
	case <-ctx.Done():
		return nil, 0, ctx.Err()
	}
	tmp, err := os.CreateTemp(s.tmp, "zip-*")
	if err != nil {
		return nil, 0, err
	}
	size, err := writeZip(ctx, tmp, sub, base)
	if err == nil {
		_, err = tmp.Seek(0, io.SeekStart)
	}
	return tmp, size, err
}

// deadlineWriter moves the connection's write deadline forward by
// SendIdle with every write, and with every chunk of a copy: a response
// of any size goes out to a client that keeps reading, and one that takes
// nothing for SendIdle is cut off, freeing its goroutine, its connection
// and whatever the handler held.
type deadlineWriter struct {
	http.ResponseWriter
	rc    *http.ResponseController
	idle  time.Duration
	armed time.Time
}

func newDeadlineWriter(w http.ResponseWriter, idle time.Duration) *deadlineWriter {
	return &deadlineWriter{ResponseWriter: w, rc: http.NewResponseController(w), idle: idle}
}

// arm moves the deadline, at most once a second: a page written in many
// small pieces does not set it for each.
func (d *deadlineWriter) arm() {
	now := time.Now()
	if now.Sub(d.armed) < time.Second {
		return
	}
	d.armed = now
	_ = d.rc.SetWriteDeadline(now.Add(d.idle))
}

func (d *deadlineWriter) Write(b []byte) (int, error) {
	d.arm()
	return d.ResponseWriter.Write(b)
}

// ReadFrom copies r in chunks, moving the deadline before each; each
// chunk still goes by the connection's own ReadFrom (sendfile from a
// file).
func (d *deadlineWriter) ReadFrom(r io.Reader) (int64, error) {
	var n int64
	for {
		d.armed = time.Time{}
		d.arm()
		m, err := io.CopyN(d.ResponseWriter, r, sendChunk)
		n += m
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (d *deadlineWriter) Unwrap() http.ResponseWriter { return d.ResponseWriter }

// errTooBig is returned when a run's archive would exceed MaxZip.
var errTooBig = fmt.Errorf("the run is larger than %d MiB: copy its directory instead", MaxZip>>20)

// writeZip writes the regular files of sub into out as a zip under base/
// and returns the archive's size.
func writeZip(ctx context.Context, out io.Writer, sub fs.FS, base string) (int64, error) {
	cw := &capWriter{w: out, left: MaxZip}
	zw := zip.NewWriter(cw)
	err := fs.WalkDir(sub, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if strings.HasPrefix(d.Name(), ".") && p != "." {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil // directories are implied; symlinks are left out
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		hdr, err := zip.FileInfoHeader(info)
		if err != nil {
			return err
		}
		hdr.Name, hdr.Method = base+"/"+p, zip.Deflate
		zf, err := zw.CreateHeader(hdr)
		if err != nil {
			return err
		}
		f, err := sub.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(zf, ctxReader{ctx, f})
		return err
	})
	if err == nil {
		err = zw.Close()
	}
	return cw.n, err
}

// ctxReader stops reading when ctx is done: a client that hangs up
// while a large history is compressed frees its slot at once.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(b []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(b)
}

// capWriter fails once more than left bytes have been written.
type capWriter struct {
	w    io.Writer
	n    int64
	left int64
}

func (c *capWriter) Write(b []byte) (int, error) {
	if int64(len(b)) > c.left {
		return 0, errTooBig
	}
	n, err := c.w.Write(b)
	c.n += int64(n)
	c.left -= int64(n)
	return n, err
}
