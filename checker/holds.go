package checker

import (
	"bufio"
	"cmp"
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"os"
	"slices"
)

// holdsInMemory is how many holds a windowed check keeps in memory: past
// it, they go to a file in sorted runs of this many. A hold is about 64
// bytes, so this is 4 MB, and a long run's holds (one per grant, 416,000
// in 180 s of 50 clients) no longer grow the checker's memory.
const holdsInMemory = 1 << 16

// CompareHolds is the order a result's holds are listed in: by start, then
// process, key and grant (the acquire's history index), then the rest, so
// that it is total and any two sorts of the same holds agree.
func CompareHolds(a, b Hold) int {
	return cmp.Or(cmp.Compare(a.Start, b.Start), cmp.Compare(a.Process, b.Process), cmp.Compare(a.Key, b.Key),
		cmp.Compare(a.Acquire, b.Acquire), cmp.Compare(a.End, b.End), cmp.Compare(a.Deadline, b.Deadline),
		cmp.Compare(a.Fence, b.Fence))
}

// holdFile keeps the holds of a long history out of memory: sorted runs of
// holdsInMemory holds, encoded compactly, in a file removed as soon as it
// is created (it lives as long as the result that refers to it, and no
// path of the process, a crash included, leaves it behind). Holds added
// after a write failed stay in memory: the verdict never rests on the disk.
type holdFile struct {
	dir   string
	limit int
	mem   []Hold
	f     *os.File
	w     *bufio.Writer
	off   int64 // bytes written to f
	runs  []holdRun
	n     int   // holds in all
	err   error // the write that failed; the rest stay in memory
}

// holdRun is one sorted run in the file, from first to last.
type holdRun struct {
	off, size   int64
	first, last Hold
}

func newHoldFile(dir string, limit int) *holdFile {
	return &holdFile{dir: dir, limit: limit}
}

// add keeps hs.
func (h *holdFile) add(hs ...Hold) {
	if need := len(h.mem) + len(hs); need > cap(h.mem) {
		// Doubled up to the limit: append grows a large slice by a
		// quarter, and the 4 MB of holds a long history spills were
		// copied and cleared some twenty times over on the way. Past
		// it (a window of many holds, a spill that failed and keeps
		// them all) as append grows it.
		c := max(min(2*cap(h.mem), h.limit), 64)
		if need > c {
			c = need + need/4
		}
		h.mem = append(make([]Hold, 0, c), h.mem...)
	}
	h.mem = append(h.mem, hs...)
	h.n += len(hs)
	if len(h.mem) >= h.limit && h.err == nil {
		h.spill()
	}
}

// spill writes the holds in memory as one sorted run.
func (h *holdFile) spill() {
	if h.f == nil {
		f, err := os.CreateTemp(h.dir, ".holds-*")
		if err != nil {
			h.err = fmt.Errorf("spill holds: %w", err)
			return
		}
		_ = os.Remove(f.Name())
		h.f, h.w = f, bufio.NewWriterSize(f, 64<<10)
	}
	slices.SortFunc(h.mem, CompareHolds)
	start := h.off
	var buf []byte
	for _, x := range h.mem {
		buf = appendHold(buf[:0], x)
		n, err := h.w.Write(buf)
		h.off += int64(n)
		if err != nil {
			h.err = fmt.Errorf("spill holds: %w", err)
			return
		}
	}
	if err := h.w.Flush(); err != nil {
		h.err = fmt.Errorf("spill holds: %w", err)
		return
	}
	h.runs = append(h.runs, holdRun{off: start, size: h.off - start, first: h.mem[0], last: h.mem[len(h.mem)-1]})
	h.mem = h.mem[:0]
}

// finish sorts what is left in memory and reports whether the holds are
// all there (h.mem). After it, the holds are only read (each).
func (h *holdFile) finish() bool {
	slices.SortFunc(h.mem, CompareHolds)
	h.mem = slices.Clip(h.mem)
	return len(h.runs) == 0
}

func appendHold(b []byte, h Hold) []byte {
	b = binary.AppendUvarint(b, uint64(len(h.Key)))
	b = append(b, h.Key...)
	for _, v := range [...]int64{int64(h.Process), h.Start, h.End, h.Deadline, h.Fence, h.Acquire} {
		b = binary.AppendVarint(b, v)
	}
	return b
}

// holdReader decodes one run, from a buffer of it read a chunk at a
// time: a hold's varints decoded from the bytes, not read a byte at a
// time through an io.ByteReader (bufio's), which cost twice the rest of
// reading the holds back.
type holdReader struct {
	r    io.Reader
	keys *keyCache // shared by the runs of one each
	buf  []byte    // what was read of the run and not decoded yet
	mem  []byte    // the buffer buf is a part of
	eof  bool      // r has no more
}

func newHoldReader(r io.Reader, keys *keyCache) *holdReader {
	return &holdReader{r: r, keys: keys, mem: make([]byte, 0, 32<<10)}
}

// holdVarints is the most bytes a hold's varints take in a run: the
// length of its key, and six numbers.
const holdVarints = 7 * binary.MaxVarintLen64

// fill reads more of the run, unless it has all of it, so that buf holds
// at least n bytes or the rest of the run.
func (r *holdReader) fill(n int) error {
	for len(r.buf) < n && !r.eof {
		if cap(r.mem) < n {
			r.mem = make([]byte, 0, max(n, 2*cap(r.mem)))
		}
		m := copy(r.mem[:cap(r.mem)], r.buf)
		k, err := io.ReadFull(r.r, r.mem[m:cap(r.mem)])
		r.buf = r.mem[:m+k]
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			r.eof = true
		} else if err != nil {
			return fmt.Errorf("read spilled holds: %w", err)
		}
	}
	return nil
}

// keyCache gives the holds read back one string per key while the keys
// repeat (a few keys taken in turn: most histories), in bounded memory
// when they do not (a fresh key per acquire: a map of every key grew to a
// million entries and cost a report of 4M events a second). A slot per
// hash, the last key of that hash kept: a miss only costs the string a
// hold needs anyway.
type keyCache struct {
	seed  maphash.Seed
	slots [1024]string
}

func newKeyCache() *keyCache { return &keyCache{seed: maphash.MakeSeed()} }

func (c *keyCache) intern(b []byte) string {
	slot := &c.slots[maphash.Bytes(c.seed, b)%uint64(len(c.slots))]
	if *slot != string(b) {
		*slot = string(b)
	}
	return *slot
}

func (r *holdReader) next() (Hold, error) {
	if err := r.fill(holdVarints); err != nil {
		return Hold{}, err
	}
	if len(r.buf) == 0 {
		return Hold{}, io.EOF // the end of the run
	}
	n, k := binary.Uvarint(r.buf)
	if k <= 0 {
		return Hold{}, fmt.Errorf("read spilled holds: %w", io.ErrUnexpectedEOF)
	}
	if n > 1<<20 {
		return Hold{}, fmt.Errorf("read spilled holds: a key of %d bytes", n)
	}
	if err := r.fill(k + int(n) + holdVarints); err != nil {
		return Hold{}, err
	}
	b := r.buf[k:]
	if uint64(len(b)) < n {
		return Hold{}, fmt.Errorf("read spilled holds: %w", io.ErrUnexpectedEOF)
	}
	key := r.keys.intern(b[:n])
	b = b[n:]
	var v [6]int64
	for i := range v {
		if v[i], k = binary.Varint(b); k <= 0 {
			return Hold{}, fmt.Errorf("read spilled holds: %w", io.ErrUnexpectedEOF)
		}
		b = b[k:]
	}
	r.buf = b
	return Hold{Key: key, Process: int(v[0]), Start: v[1], End: v[2], Deadline: v[3], Fence: v[4], Acquire: v[5]}, nil
}

// each calls f with every hold in CompareHolds order, merging the runs in
// the file with what is in memory. It may be called any number of times,
// also at once from several goroutines.
func (h *holdFile) each(f func(Hold) error) error {
	if len(h.runs) == 0 {
		for _, x := range h.mem {
			if err := f(x); err != nil {
				return err
			}
		}
		return nil
	}
	keys := newKeyCache()
	if h.inOrder() {
		return h.eachInOrder(keys, f)
	}
	m := &holdMerge{}
	for _, run := range h.runs {
		r := newHoldReader(io.NewSectionReader(h.f, run.off, run.size), keys)
		x, err := r.next()
		if errors.Is(err, io.EOF) {
			continue
		}
		if err != nil {
			return err
		}
		m.heads = append(m.heads, mergeHead{hold: x, r: r})
	}
	mem := h.mem
	if len(mem) > 0 {
		m.heads = append(m.heads, mergeHead{hold: mem[0], mem: mem[1:], inMem: true})
	}
	heap.Init(m)
	for len(m.heads) > 0 {
		top := &m.heads[0]
		if err := f(top.hold); err != nil {
			return err
		}
		var err error
		switch {
		case top.inMem && len(top.mem) == 0:
			err = io.EOF
		case top.inMem:
			top.hold, top.mem = top.mem[0], top.mem[1:]
		default:
			top.hold, err = top.r.next()
		}
		if errors.Is(err, io.EOF) {
			heap.Pop(m)
			continue
		}
		if err != nil {
			return err
		}
		heap.Fix(m, 0)
	}
	return nil
}

// inOrder reports whether the runs, and the holds in memory after them,
// follow each other in CompareHolds order: then they need no merge. A
// windowed check mostly adds its holds in order of start, window after
// window, and merging two runs (a million events' holds) through a heap
// compared every hold with another.
func (h *holdFile) inOrder() bool {
	for i := 1; i < len(h.runs); i++ {
		if CompareHolds(h.runs[i-1].last, h.runs[i].first) > 0 {
			return false
		}
	}
	n := len(h.runs)
	return n == 0 || len(h.mem) == 0 || CompareHolds(h.runs[n-1].last, h.mem[0]) <= 0
}

// eachInOrder is each of runs in order (inOrder): one after the other,
// then the holds in memory.
func (h *holdFile) eachInOrder(keys *keyCache, f func(Hold) error) error {
	for _, run := range h.runs {
		r := newHoldReader(io.NewSectionReader(h.f, run.off, run.size), keys)
		for {
			x, err := r.next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return err
			}
			if err := f(x); err != nil {
				return err
			}
		}
	}
	for _, x := range h.mem {
		if err := f(x); err != nil {
			return err
		}
	}
	return nil
}

type mergeHead struct {
	hold  Hold
	r     *holdReader
	mem   []Hold
	inMem bool
}

// holdMerge is a heap of the runs' next holds.
type holdMerge struct{ heads []mergeHead }

func (m *holdMerge) Len() int           { return len(m.heads) }
func (m *holdMerge) Less(i, j int) bool { return CompareHolds(m.heads[i].hold, m.heads[j].hold) < 0 }
func (m *holdMerge) Swap(i, j int)      { m.heads[i], m.heads[j] = m.heads[j], m.heads[i] }
func (m *holdMerge) Push(x any)         { m.heads = append(m.heads, x.(mergeHead)) }
func (m *holdMerge) Pop() any {
	x := m.heads[len(m.heads)-1]
	m.heads = m.heads[:len(m.heads)-1]
	return x
}

// EachHold calls f with each of the result's holds, in CompareHolds order
// when a windowed check kept them in a file (a long history), else in the
// order of Holds. It stops at f's first error and returns it, or an error
// reading the file.
func (r *Result) EachHold(f func(Hold) error) error {
	if r.spilled != nil {
		return r.spilled.each(f)
	}
	for _, h := range r.Holds {
		if err := f(h); err != nil {
			return err
		}
	}
	return nil
}

// WithoutHolds is r without its holds, for a summary that keeps them
// elsewhere (results.json, whose holds are in a file of their own).
func (r Result) WithoutHolds() Result {
	r.Holds, r.spilled = nil, nil
	return r
}

// NumHolds is how many holds EachHold gives.
func (r *Result) NumHolds() int {
	if r.spilled != nil {
		return r.spilled.n
	}
	return len(r.Holds)
}

// HoldsInFile reports whether the holds are kept in a file, not in Holds:
// whoever writes the result out must then write them from EachHold.
func (r *Result) HoldsInFile() bool { return r.spilled != nil }
