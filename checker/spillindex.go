package checker

import "math/bits"

// spillIndex is where the pkStore's file holds the record of each process
// and key it moved there: an open-addressing table of packed slots, each
// the top 32 bits of the entry's hash (its tag) and, in the low 32, the
// record's offset in units of spillAlign plus one (0 is an empty slot). A
// history of a fresh key per cycle moves an entry to the file for every
// key it has (2.5 million at 10M events): a map of hash to offset cost
// about 28 bytes an entry there (71 MB), this 8 a slot at a load of 0.57
// to 0.85.
//
// A slot's place is its tag's, so that the table grows without the
// hashes; every entry of a tag lies on the tag's probe, so find gives
// every offset of the tag and the pkStore reads the records to compare
// their keys. With 32-bit tags a lookup of an entry never moved reads a
// record for one in 1,700 at 2.5 million entries (24-bit tags had it read
// one in seven, a fifth of the check's time in reads).
//
// In front of the table, seen has a bit for each tag's hash (four to
// eight bits a slot): a tag whose bit is clear has no entry, and find says so
// without reading the table. A history of a fresh key per cycle asks for
// every process and key once before it has an entry, and the table (11
// MB at a million entries, a page-table walk and a cache miss for each
// probe) cost a twentieth of the check there; the bits are a megabyte.
type spillIndex struct {
	slots []uint64
	n     int      // slots in use
	seen  []uint64 // bits, by seenBit
	shift uint     // of seenBit: 64 - log2 of seen's bits
}

const (
	spillOffBits = 32 // a file of up to 32 GB: past it the store keeps its entries
	spillTagBits = 64 - spillOffBits
	spillAlign   = 8 // records begin at multiples of it
	spillMinLen  = 1024
)

func spillTag(h uint64) uint64 { return h >> spillOffBits }

// home is the first slot a tag's entries may lie in.
func (x *spillIndex) home(tag uint64) int {
	hi, _ := bits.Mul64(tag<<spillOffBits, uint64(len(x.slots)))
	return int(hi)
}

// find calls f with the offset of each entry of tag until f returns true.
func (x *spillIndex) find(tag uint64, f func(off int64) bool) {
	if x.n == 0 || !x.mayHold(tag) {
		return
	}
	for i := x.home(tag); ; i = x.next(i) {
		s := x.slots[i]
		if s == 0 {
			return
		}
		if s>>spillOffBits == tag && f((int64(s&(1<<spillOffBits-1))-1)*spillAlign) {
			return
		}
	}
}

func (x *spillIndex) next(i int) int {
	if i++; i == len(x.slots) {
		return 0
	}
	return i
}

// put records that the entry of tag lies at off, in place of the slot
// that said it lay at old (-1: a new entry).
// (off and old are multiples of spillAlign, below spillLimit.)
func (x *spillIndex) put(tag uint64, old, off int64) {
	slot := func(off int64) uint64 { return tag<<spillOffBits | uint64(off/spillAlign+1) }
	if old >= 0 {
		want := slot(old)
		for i := x.home(tag); x.slots[i] != 0; i = x.next(i) {
			if x.slots[i] == want {
				x.slots[i] = slot(off)
				return
			}
		}
		panic("spill index: an entry read from the file is not in its index")
	}
	if (x.n+1)*20 > len(x.slots)*17 {
		x.grow()
	}
	x.insert(slot(off))
	x.mark(tag)
	x.n++
}

// seenBit is tag's bit in seen.
func (x *spillIndex) seenBit(tag uint64) uint64 { return (tag * 0x9e3779b97f4a7c15) >> x.shift }

// mark sets tag's bit; mayHold reports whether it is set.
func (x *spillIndex) mark(tag uint64) {
	b := x.seenBit(tag)
	x.seen[b/64] |= 1 << (b % 64)
}

func (x *spillIndex) mayHold(tag uint64) bool {
	b := x.seenBit(tag)
	return x.seen[b/64]&(1<<(b%64)) != 0
}

// spillLimit is the length of a file whose every offset a slot can hold.
const spillLimit = (1<<spillOffBits - 1) * spillAlign

func (x *spillIndex) insert(s uint64) {
	i := x.home(s >> spillOffBits)
	for x.slots[i] != 0 {
		i = x.next(i)
	}
	x.slots[i] = s
}

// grow makes the table half as large again (past a load of 0.85), each
// slot put at its tag's place.
func (x *spillIndex) grow() {
	old := x.slots
	x.slots = make([]uint64, max(spillMinLen, len(old)+len(old)/2))
	lg := uint(bits.Len(uint(len(x.slots)*4 - 1))) // four bits a slot at least, a power of two
	x.seen, x.shift = make([]uint64, max(1, (1<<lg)/64)), 64-lg
	for _, s := range old {
		if s != 0 {
			x.insert(s)
			x.mark(s >> spillOffBits)
		}
	}
}
