package checker

import "math/bits"

// spillIndex is where the pkStore's file holds the record of each process
// and key it moved there: an open-addressing table of packed slots, each
// the top 24 bits of the entry's hash (its tag) and the record's offset
// plus one in the low 40 bits (0 is an empty slot). A history of a fresh
// key per cycle moves an entry to the file for every key it has (2.5
// million at 10M events): a map of hash to offset cost about 28 bytes an
// entry there (71 MB), this 8 a slot at a load of 0.57 to 0.85.
//
// A tag names a few entries at most (24 bits against a probe of a few
// slots), so find gives every offset of the tag and the pkStore reads the
// records to compare their keys, as the chains of the map did. A slot's
// place is the tag's, so that the table grows without the hashes: a
// table of up to 16M slots (13M entries) spreads over every slot, and a
// larger one still works, more crowded.
type spillIndex struct {
	slots []uint64
	n     int // slots in use
}

const (
	spillOffBits = 40 // a file of up to 1 TB: past it the store keeps its entries
	spillTagBits = 64 - spillOffBits
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
	if x.n == 0 {
		return
	}
	for i := x.home(tag); ; i = x.next(i) {
		s := x.slots[i]
		if s == 0 {
			return
		}
		if s>>spillOffBits == tag && f(int64(s&(1<<spillOffBits-1))-1) {
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
func (x *spillIndex) put(tag uint64, old, off int64) {
	if old >= 0 {
		want := tag<<spillOffBits | uint64(old+1)
		for i := x.home(tag); x.slots[i] != 0; i = x.next(i) {
			if x.slots[i] == want {
				x.slots[i] = tag<<spillOffBits | uint64(off+1)
				return
			}
		}
		panic("spill index: an entry read from the file is not in its index")
	}
	if (x.n+1)*20 > len(x.slots)*17 {
		x.grow()
	}
	x.insert(tag<<spillOffBits | uint64(off+1))
	x.n++
}

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
	for _, s := range old {
		if s != 0 {
			x.insert(s)
		}
	}
}
