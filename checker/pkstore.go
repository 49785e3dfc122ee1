package checker

import (
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"os"
)

// pkStore is the carry's entries per process and key (pkCarry): a
// history has up to clients × keys of them, a million and more for a run
// on a million keys, each a few hundred bytes with its map slot. Most are
// at rest: their key is quiet, its events taken, and the process may
// never touch the key again. So once the store holds more than hot
// entries, a cut moves those of keys at rest to a file (evict), where an
// entry costs memory only for its index slot (spillIndex: 8 bytes), and get
// brings one back whenever a later window asks for it: nothing is lost,
// so the windows stay exact. The file is deleted as soon as it is
// opened, in the check's SpillDir, as the holds' is; if it cannot be
// written the entries stay in memory.
type pkStore struct {
	// m is the entries in memory by their hash (see hash), and over
	// those whose hash an entry of m has already (pkCarry.k tells them
	// apart): lookup hashes k anyway, for recent and the file's index,
	// and a map by procKey hashed it again, an int and a string through
	// the generic hash, at every lookup, insertion and deletion.
	m    map[uint64]*pkCarry
	over map[procKey]*pkCarry
	// all is every entry in memory (m's and over's), in the order they
	// came there, which evict goes through: a window's entries, and their
	// keys' strings, were made one after the other and lie so in memory,
	// where going through m met each (and each key's bytes, which the
	// record holds) at random, a cache miss apiece.
	all  []*pkCarry
	dir  string
	hot  int // evict when m holds more than this
	base int // hot at least (see pkHot)
	top  int // how far base grows
	// lastMoved is how many entries the latest eviction moved, loads
	// how many entries were read back since: the entries of keys that
	// come back soon make base grow (see grow).
	lastMoved, loads int
	f                *os.File
	off              int64
	index            spillIndex // hash of a procKey → offset of its latest record
	seed             maphash.Seed
	buf              []byte
	err              error
	// recent is the entries looked up lately, by slot: a window asks
	// for each process and key's entry several times (the cutter at its
	// grant and release, the orphan carry and carryClaims after the
	// window), close together in the history, and a run of a fresh key
	// per cycle has a store too large for its map to stay in the cache,
	// where a lookup cost more than the rest of following the key.
	// Cleared whenever an entry leaves m (evict).
	recent [pkRecentSlots]pkRecent
	// made is the entries made since the latest window was carried (see
	// forgetMade), in the order they were made: the cutter makes a
	// process and key's entry at its grant, and carryClaims asks for
	// them again after the window in about that order, first of made
	// from next on (lately), then of recent and the maps (a window of
	// fresh keys, too many for recent, looked every one up in the map
	// again).
	made  []pkRecent
	next  int
	moved []pkMove // evict's, kept from one eviction to the next
	stay  []*pkCarry
	// spare is entries an eviction moved to the file, for new ones: a
	// history of a fresh key per cycle made one, and an array of its
	// releases, for every process and key. Nothing points to an entry
	// once it is moved (recent is cleared; the windows' and the cutter's
	// pointers last a step of theirs, never across a cut).
	spare []*pkCarry
}

// pkRecent is one of pkStore.recent's slots.
type pkRecent struct {
	k  procKey
	pc *pkCarry
}

// pkRecentSlots is the size of pkStore.recent (a power of two): a run has
// a few dozen processes and keys at work at once.
const pkRecentSlots = 256

// pkMove is an entry an eviction writes to the file: its tag, where its
// record lay before (-1: nowhere) and lies now.
type pkMove struct {
	k        procKey
	pc       *pkCarry
	h        uint64
	old, off int64
}

// pkHot is how many entries the store keeps in memory at least before a
// cut moves some to its file (about 1 MB). A window of a fresh key per
// cycle makes about 4,000 entries: at 16,384 a cut moved them every four
// windows, long after they were last in the cache (a third of the
// eviction's cost was misses), at 4,096 it moves every window's right
// after it, while they are still warm (the check of a million keys
// 0.85x of the CPU). A history of few keys has far fewer entries than
// that (10 keys and 22 processes: 220), and it holds busy keys' entries;
// one whose entries come back after a cut moved them has the store keep
// up to pkHotMax (see grow).
const pkHot = 1 << 12

// pkHotMax is how far base grows: 16,384 entries (about 4 MB).
const pkHotMax = 1 << 14

func newPKStore(dir string) *pkStore {
	return &pkStore{m: map[uint64]*pkCarry{}, dir: dir, hot: pkHot, base: pkHot, top: pkHotMax, seed: maphash.MakeSeed()}
}

// get is k's entry, or nil.
func (s *pkStore) get(k procKey) *pkCarry {
	pc, _, _ := s.lookup(k)
	return pc
}

// at is k's entry, made if need be.
func (s *pkStore) at(k procKey) *pkCarry {
	pc, r, h := s.lookup(k)
	if pc == nil {
		pc = s.newEntry()
		s.put(k, h, pc)
		*r = pkRecent{k, pc}
		s.made = append(s.made, *r)
	}
	return pc
}

// pkLookahead is how far lately looks among the entries made: the
// clients' grants come in a different order from their invocations (which
// order a window's keys), by a few places.
const pkLookahead = 32

// lately is k's entry, made if need be (at), looked for first among the
// next pkLookahead entries made (see made). Whatever it finds there is
// k's entry: an entry leaves memory only at an eviction, which empties
// made.
func (s *pkStore) lately(k procKey) *pkCarry {
	end := min(len(s.made), s.next+pkLookahead)
	for i := s.next; i < end; i++ {
		if m := s.made[i]; m.k.proc == k.proc && m.k.key == k.key {
			s.made[i], s.made[s.next] = s.made[s.next], m
			s.next++
			return m.pc
		}
	}
	return s.at(k)
}

// forgetMade empties made: the window's entries were carried (or leave
// memory).
func (s *pkStore) forgetMade() {
	clear(s.made)
	s.made, s.next = s.made[:0], 0
}

// newEntry is an empty entry: a spare one (its releases' array kept), or
// a new one.
func (s *pkStore) newEntry() *pkCarry {
	n := len(s.spare)
	if n == 0 {
		return &pkCarry{}
	}
	pc := s.spare[n-1]
	s.spare[n-1] = nil
	s.spare = s.spare[:n-1]
	rs := pc.releases
	clear(rs) // let go of their tokens
	*pc = pkCarry{}
	pc.releases = rs[:0]
	return pc
}

// mem is k's entry in memory, or nil; h is k's hash.
func (s *pkStore) mem(k procKey, h uint64) *pkCarry {
	if pc := s.m[h]; pc != nil && pc.k == k {
		return pc
	}
	if len(s.over) > 0 {
		return s.over[k]
	}
	return nil
}

// put puts pc in memory as k's entry (k has none there); h is k's hash.
func (s *pkStore) put(k procKey, h uint64, pc *pkCarry) {
	pc.k, pc.h = k, h
	s.all = append(s.all, pc)
	if s.m[h] == nil {
		s.m[h] = pc
		return
	}
	if s.over == nil {
		s.over = map[procKey]*pkCarry{}
	}
	s.over[k] = pc
}

// drop takes k's entry out of m or over; h is k's hash. (Only release
// calls it, which makes all anew.)
func (s *pkStore) drop(k procKey, h uint64) {
	if pc := s.m[h]; pc != nil && pc.k == k {
		delete(s.m, h)
		return
	}
	delete(s.over, k)
}

// inMemory is how many entries are in memory.
func (s *pkStore) inMemory() int { return len(s.m) + len(s.over) }

// lookup is k's entry (nil if it has none: neither in memory nor in the
// file), k's slot in recent, which holds the entry when it has one, and
// k's hash. k is hashed once, for its slot, its place in memory and its
// tag in the file's index.
func (s *pkStore) lookup(k procKey) (*pkCarry, *pkRecent, uint64) {
	h := s.hash(k)
	r := &s.recent[h&(pkRecentSlots-1)]
	if r.pc != nil && r.k == k {
		return r.pc, r, h
	}
	pc := s.mem(k, h)
	if pc == nil && s.index.n > 0 {
		if pc = s.load(k, h); pc != nil {
			s.put(k, h, pc)
			s.loads++
		}
	}
	if pc != nil {
		*r = pkRecent{k, pc}
	}
	return pc, r, h
}

// hash is k's hash: its place in recent (the low bits) and its tag in the
// file's index (the high ones). The key's hash is uniform, and so stays
// mixed with the process's; one call of maphash.String (a streaming
// maphash.Hash of the key and the process cost three times as much, once
// for every entry made, moved or looked for in the file).
func (s *pkStore) hash(k procKey) uint64 {
	return maphash.String(s.seed, k.key) ^ uint64(k.proc)*0x9e3779b97f4a7c15
}

// evict moves to the file the entries of keys that busy does not name,
// when there are more than hot; the next eviction waits until the store
// has grown to twice what stayed, so that a store of busy keys is not
// gone through at every cut.
func (s *pkStore) evict(busy func(key string) bool) {
	if s.inMemory() <= s.hot || s.err != nil {
		return
	}
	if s.f == nil {
		f, err := os.CreateTemp(s.dir, ".carry-*")
		if err != nil {
			s.err = fmt.Errorf("spill the carry: %w", err)
			return
		}
		_ = os.Remove(f.Name())
		s.f = f
	}
	s.forgetMade()
	s.buf = s.buf[:0]
	moved, stay := s.moved[:0], s.stay[:0]
	// The records are written in chunks of about spillChunk bytes at
	// s.off+written, so that the buffer stays small and is kept from one
	// eviction to the next (an eviction of a window of fresh keys moves
	// tens of thousands of entries); s.off moves, and the entries leave
	// memory, only once every chunk is written.
	written := int64(0)
	move := func(h uint64, pc *pkCarry) bool {
		if busy(pc.k.key) {
			stay = append(stay, pc)
			return true
		}
		start := len(s.buf)
		s.buf = append(s.buf, 0, 0, 0, 0)
		s.buf = encodePK(s.buf, pc.k, pc)
		binary.LittleEndian.PutUint32(s.buf[start:], uint32(len(s.buf)-start-4))
		for len(s.buf)%spillAlign != 0 {
			s.buf = append(s.buf, 0)
		}
		moved = append(moved, pkMove{pc.k, pc, h, pc.spilled - 1, s.off + written + int64(start)})
		return len(s.buf) < spillChunk || s.writeChunk(&written)
	}
	for _, pc := range s.all {
		if !move(pc.h, pc) {
			return
		}
	}
	if !s.writeChunk(&written) {
		return
	}
	s.off += written
	clear(s.recent[:])
	s.release(moved, stay)
	clear(stay)
	s.stay = stay[:0]
	for _, mv := range moved {
		s.index.put(spillTag(mv.h), mv.old, mv.off)
		if len(s.spare) < pkHot {
			s.spare = append(s.spare, mv.pc)
		}
	}
	clear(moved) // let go of the keys
	s.moved = moved[:0]
	s.grow()
	s.lastMoved, s.loads = len(moved), 0
	s.hot = max(s.base, 2*s.inMemory())
}

// grow doubles base, up to top (pkHotMax), when the entries the store
// moved to its file come back: an eighth or more of those the latest
// eviction moved were read back before this one. A history whose keys recur (a
// thousand keys and ten clients: ten thousand entries, each at rest
// between its key's cycles) would otherwise move its entries out and
// read them back at every cut; one of a fresh key per cycle reads none
// back, and keeps base at pkHot.
func (s *pkStore) grow() {
	if s.lastMoved > 0 && s.loads*8 >= s.lastMoved {
		s.base = max(s.base, min(2*s.base, s.top))
	}
}

// release takes the moved entries out of memory; stay are those that
// stay. When the moved are most of it (a window of fresh keys moves all
// but a few), the maps are emptied and the entries that stay put back:
// deleting each moved entry cost a probe of a table too large for the
// cache.
func (s *pkStore) release(moved []pkMove, stay []*pkCarry) {
	clear(s.all)
	s.all = s.all[:0]
	if len(moved) < len(stay) {
		for _, mv := range moved {
			s.drop(mv.k, mv.h)
		}
		s.all = append(s.all, stay...)
		return
	}
	clear(s.m)
	clear(s.over)
	for _, pc := range stay {
		s.put(pc.k, pc.h, pc)
	}
}

// spillChunk is how many bytes of records evict gathers before writing
// them.
const spillChunk = 256 << 10

// writeChunk writes the records gathered in s.buf at s.off+*written and
// empties it; false, with s.err set, when the file would pass its limit
// or the write failed (nothing is moved then: every entry is still in
// memory, and s.off has not moved).
func (s *pkStore) writeChunk(written *int64) bool {
	if len(s.buf) == 0 {
		return true
	}
	at := s.off + *written
	if at+int64(len(s.buf)) >= spillLimit {
		s.err = fmt.Errorf("spill the carry: the file would pass %d bytes", int64(spillLimit))
		return false
	}
	if _, err := s.f.WriteAt(s.buf, at); err != nil {
		s.err = fmt.Errorf("spill the carry: %w", err)
		return false
	}
	*written += int64(len(s.buf))
	s.buf = s.buf[:0]
	return true
}

// load reads k's latest record back (h is k's hash), or nil when there
// is none; the entry remembers where it lay (pkCarry.spilled), so that its
// next eviction puts its new record in the old one's slot.
func (s *pkStore) load(k procKey, h uint64) *pkCarry {
	var out *pkCarry
	s.index.find(spillTag(h), func(off int64) bool {
		var hdr [4]byte
		if _, err := s.f.ReadAt(hdr[:], off); err != nil {
			panic(fmt.Sprintf("read the carry back: %v", err)) // guard makes it unknown
		}
		rec := make([]byte, binary.LittleEndian.Uint32(hdr[:]))
		if _, err := s.f.ReadAt(rec, off+4); err != nil {
			panic(fmt.Sprintf("read the carry back: %v", err))
		}
		rk, pc := decodePK(rec)
		if rk != k {
			return false // another entry of the same tag
		}
		pc.spilled, out = off+1, pc
		return true
	})
	return out
}

// close lets the file go.
func (s *pkStore) close() {
	if s.f != nil {
		_ = s.f.Close()
		s.f = nil
	}
}

// encodePK appends the record of k's entry pc to b. A record is written
// for every entry a cut moves to the file (a history of a fresh key per
// cycle: one for every process and key, and never read back), so it is
// short: its numbers are written as a varint of their difference from the
// number of their kind (times, or event indexes) written before, and only
// those that are not zero (a mask says which); a granted acquire equal to
// the latest acquire, and a release's token equal to the entry's, are
// not written again. Whole times and indexes took 9 bytes each, and
// writing them most of the record's cost.
func encodePK(b []byte, k procKey, pc *pkCarry) []byte {
	b = binary.AppendVarint(b, int64(k.proc))
	b = appendString(b, k.key)
	b = appendString(b, pc.token)
	sameGrant := pc.gotOne && pc.acquired && pc.granted == pc.acquire
	b = append(b, flags(pc.hasToken, pc.hasClaim, pc.hasForever, pc.released, pc.held, pc.acquired, pc.gotOne, sameGrant))
	var e pkEnc
	e.b = b
	e.nums(pkTime, pc.claimEnd, pkIndex, pc.claimGrant, pkIndex, pc.relDone, pkTime, pc.foreverT, pkIndex, pc.foreverI)
	e.acquire(pc.acquire)
	if !sameGrant {
		e.acquire(pc.granted)
	}
	e.b = binary.AppendUvarint(e.b, uint64(len(pc.releases)))
	for _, r := range pc.releases {
		e.nums(pkTime, r.start, pkTime, r.end, pkIndex, r.inv, pkIndex, r.done)
		sameToken := r.token != "" && r.token == pc.token
		e.b = append(e.b, byte(r.typ), flags(r.notHeld, sameToken))
		if !sameToken {
			e.b = appendString(e.b, r.token)
		}
	}
	return e.b
}

// The kinds of pkEnc's numbers: each kind's are written as differences
// from the one before.
const (
	pkTime = iota
	pkIndex
)

// pkEnc writes a record's numbers (see encodePK).
type pkEnc struct {
	b    []byte
	prev [2]int64 // by kind
}

// nums appends kind and value pairs: a mask of the values not zero, then
// each of those as a difference from the kind's previous one.
func (e *pkEnc) nums(kv ...int64) {
	var mask uint64
	for i := 0; i < len(kv); i += 2 {
		if kv[i+1] != 0 {
			mask |= 1 << (i / 2)
		}
	}
	e.b = binary.AppendUvarint(e.b, mask)
	for i := 0; i < len(kv); i += 2 {
		if v := kv[i+1]; v != 0 {
			e.b = binary.AppendVarint(e.b, v-e.prev[kv[i]])
			e.prev[kv[i]] = v
		}
	}
}

func (e *pkEnc) acquire(a priorAcquire) {
	e.nums(pkTime, a.start, pkTime, a.end, pkIndex, a.inv, pkIndex, a.done)
	e.b = append(e.b, byte(a.typ))
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

func flags(bs ...bool) byte {
	var f byte
	for i, x := range bs {
		if x {
			f |= 1 << i
		}
	}
	return f
}

// pkReader reads a record encodePK wrote.
type pkReader struct {
	b    []byte
	prev [2]int64 // as pkEnc's
}

func (r *pkReader) varint() int64 {
	v, n := binary.Varint(r.b)
	r.b = r.b[n:]
	return v
}

func (r *pkReader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	r.b = r.b[n:]
	return v
}

func (r *pkReader) str() string {
	n := r.uvarint()
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

func (r *pkReader) byte() byte {
	v := r.b[0]
	r.b = r.b[1:]
	return v
}

// nums reads what pkEnc.nums wrote of len(kinds) numbers into ps.
func (r *pkReader) nums(kinds []int, ps ...*int64) {
	mask := r.uvarint()
	for i, p := range ps {
		*p = 0
		if mask&(1<<i) != 0 {
			*p = r.prev[kinds[i]] + r.varint()
			r.prev[kinds[i]] = *p
		}
	}
}

var (
	pkCallKinds  = []int{pkTime, pkTime, pkIndex, pkIndex}
	pkEntryKinds = []int{pkTime, pkIndex, pkIndex, pkTime, pkIndex}
)

func (r *pkReader) acquire() (a priorAcquire) {
	r.nums(pkCallKinds, &a.start, &a.end, &a.inv, &a.done)
	a.typ = callType(r.byte())
	return a
}

func decodePK(rec []byte) (k procKey, pc *pkCarry) {
	r := &pkReader{b: rec}
	k.proc = int(r.varint())
	k.key = r.str()
	pc = &pkCarry{}
	pc.token = r.str()
	f := r.byte()
	pc.hasToken, pc.hasClaim, pc.hasForever, pc.released, pc.held, pc.acquired, pc.gotOne =
		f&1 != 0, f&2 != 0, f&4 != 0, f&8 != 0, f&16 != 0, f&32 != 0, f&64 != 0
	r.nums(pkEntryKinds, &pc.claimEnd, &pc.claimGrant, &pc.relDone, &pc.foreverT, &pc.foreverI)
	pc.acquire = r.acquire()
	pc.granted = pc.acquire
	if f&128 == 0 {
		pc.granted = r.acquire()
	}
	if n := r.uvarint(); n > 0 {
		pc.releases = make([]priorRelease, n)
		for i := range pc.releases {
			x := &pc.releases[i]
			r.nums(pkCallKinds, &x.start, &x.end, &x.inv, &x.done)
			x.typ = callType(r.byte())
			fl := r.byte()
			x.notHeld = fl&1 != 0
			x.token = pc.token
			if fl&2 == 0 {
				x.token = r.str()
			}
		}
	}
	return k, pc
}
