package reports

import (
	"encoding/binary"
	"math/bits"
	"slices"
)

// rowDeflater is a zlib stream (RFC 1950, 1951) of a PNG's filtered rows,
// made for what a figure's rows are: mostly the row above again, which
// the "up" filter makes a row of zeros, and otherwise runs of a byte or of
// a pixel (a bar's edge, a grid line) between the few bytes of text and
// anti-aliased edges. It looks for nothing else: a byte is the start of a
// run of the byte before it (distance 1) or of the pixel before it
// (distance 3), or a literal. compress/flate at its fastest hashes every
// byte of the 15 MB of a tall timeline and builds a Huffman code for
// every 64 KB of it; here a row of zeros is a few tokens, found with a
// comparison of two rows of pixels, and the tokens are coded with a
// Huffman code of their own (a dynamic block) every maxTokens of them.
type rowDeflater struct {
	out    []byte // the zlib stream so far
	bitbuf uint64
	nbits  uint
	toks   []uint32 // tokens of the block being gathered (token)
	s1, s2 uint32   // Adler-32 of the bytes so far
	litF   [286]uint32
	distF  [30]uint32
}

// A token is a literal byte (below 256), or a match: matchFlag, the
// length (3 to 258) shifted by 8, and the distance code (0 for a
// distance of 1, 2 for 3: codes without extra bits).
const (
	matchFlag = 1 << 31
	maxTokens = 1 << 16
	adlerMod  = 65521
)

func newRowDeflater() *rowDeflater {
	z := &rowDeflater{s1: 1, toks: make([]uint32, 0, maxTokens)}
	z.out = append(z.out, 0x78, 0x01) // deflate, 32 KB window, fastest: as compress/zlib at BestSpeed
	return z
}

// zeros adds n zero bytes that follow a zero byte (a run at distance 1).
func (z *rowDeflater) zeros(n int) {
	z.s2 = uint32((uint64(z.s2) + uint64(n%adlerMod)*uint64(z.s1)) % adlerMod)
	z.match(n, 0)
}

// match adds a run of n bytes at the distance of code dc (0: 1 byte,
// 2: 3 bytes), n at least 3, in matches of at most 258.
func (z *rowDeflater) match(n, dc int) {
	for n > 0 {
		m := min(n, 258)
		if r := n - m; r > 0 && r < 3 {
			m = n - 3
		}
		z.token(matchFlag | uint32(m)<<8 | uint32(dc))
		n -= m
	}
}

func (z *rowDeflater) literal(b byte) { z.token(uint32(b)) }

// zeroRun adds n zero bytes, after a zero byte or not.
func (z *rowDeflater) zeroRun(n int, afterZero bool) {
	if !afterZero && n > 0 {
		z.s2 = (z.s2 + z.s1) % adlerMod
		z.literal(0)
		n--
	}
	if n >= 3 {
		z.zeros(n)
		return
	}
	for ; n > 0; n-- {
		z.s2 = (z.s2 + z.s1) % adlerMod
		z.literal(0)
	}
}

func (z *rowDeflater) token(t uint32) {
	z.toks = append(z.toks, t)
	if len(z.toks) == maxTokens {
		z.block(false)
	}
}

// bytesOf adds the bytes of b (a filtered row), and their checksum: runs
// of one byte or of one pixel (3 bytes) as matches, the rest as
// literals. Matches reach back into b only.
func (z *rowDeflater) bytesOf(b []byte) {
	n := len(b)
	s1, s2 := uint64(z.s1), uint64(z.s2)
	for i := 0; i < n; {
		c := b[i]
		r1, r3 := 0, 0
		if i >= 1 && c == b[i-1] {
			r1 = runLen(b, i, 1)
		}
		if i >= 3 && c == b[i-3] {
			r3 = runLen(b, i, 3)
		}
		switch {
		case r1 >= 3 && r1 >= r3:
			z.match(r1, 0)
			// r1 bytes c: s1 grows by c each, s2 by each s1.
			k := uint64(r1)
			s2 += k*s1 + uint64(c)*k*(k+1)/2
			s1 += k * uint64(c)
			i += r1
		case r3 >= 3:
			z.match(r3, 2)
			for _, c := range b[i : i+r3] {
				s1 += uint64(c)
				s2 += s1
			}
			i += r3
		default:
			z.literal(c)
			s1 += uint64(c)
			s2 += s1
			i++
		}
		if s2 >= 1<<62 {
			s1, s2 = s1%adlerMod, s2%adlerMod
		}
	}
	z.s1, z.s2 = uint32(s1%adlerMod), uint32(s2%adlerMod)
}

// runLen is how many bytes from b[i] on repeat the byte d before each.
func runLen(b []byte, i, d int) int {
	j := i
	for ; j+8 <= len(b); j += 8 {
		if x := binary.LittleEndian.Uint64(b[j:]) ^ binary.LittleEndian.Uint64(b[j-d:]); x != 0 {
			return j + bits.TrailingZeros64(x)/8 - i
		}
	}
	for j < len(b) && b[j] == b[j-d] {
		j++
	}
	return j - i
}

// finish ends the stream: the last block and the checksum.
func (z *rowDeflater) finish() []byte {
	z.block(true)
	for z.nbits > 0 {
		z.out = append(z.out, byte(z.bitbuf))
		z.bitbuf >>= 8
		z.nbits -= min(z.nbits, 8)
	}
	sum := z.s2<<16 | z.s1
	return append(z.out, byte(sum>>24), byte(sum>>16), byte(sum>>8), byte(sum))
}

// bits sends the n (at most 16) low bits of v, the lowest first.
func (z *rowDeflater) bits(v uint32, n uint) {
	z.bitbuf |= uint64(v) << z.nbits
	z.nbits += n
	if z.nbits >= 32 {
		z.out = binary.LittleEndian.AppendUint32(z.out, uint32(z.bitbuf))
		z.bitbuf >>= 32
		z.nbits -= 32
	}
}

// Lengths 3 to 258 as deflate codes them: code 257+lenCode[l-3], with
// lenExtra[code-257] extra bits over lenBase[code-257].
var (
	lenBase  = [29]uint16{3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258}
	lenExtra = [29]uint8{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0}
	lenCode  [256]uint8
	// clOrder is the order the lengths of the code lengths' code are sent in.
	clOrder = [19]uint8{16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15}
)

func init() {
	for c := range lenBase {
		hi := 259
		if c+1 < len(lenBase) {
			hi = int(lenBase[c+1])
		}
		for l := int(lenBase[c]); l < hi && l <= 258; l++ {
			lenCode[l-3] = uint8(c)
		}
	}
}

// block writes the tokens gathered as one block with codes of its own.
func (z *rowDeflater) block(last bool) {
	clear(z.litF[:])
	clear(z.distF[:])
	for _, t := range z.toks {
		if t&matchFlag == 0 {
			z.litF[t]++
			continue
		}
		z.litF[257+int(lenCode[(t>>8&0x1ff)-3])]++
		z.distF[t&0xff]++
	}
	z.litF[256]++ // the end of the block
	var litL [286]uint8
	var distL [30]uint8
	huffLengths(z.litF[:], litL[:], 15)
	huffLengths(z.distF[:], distL[:], 15)
	var litC [286]uint16
	var distC [30]uint16
	canonical(litL[:], litC[:])
	canonical(distL[:], distC[:])

	z.header(litL[:], distL[:], last)
	for _, t := range z.toks {
		if t&matchFlag == 0 {
			z.bits(uint32(litC[t]), uint(litL[t]))
			continue
		}
		l := int(t >> 8 & 0x1ff)
		c := lenCode[l-3]
		z.bits(uint32(litC[257+int(c)]), uint(litL[257+int(c)]))
		if e := lenExtra[c]; e > 0 {
			z.bits(uint32(l-int(lenBase[c])), uint(e))
		}
		d := t & 0xff
		z.bits(uint32(distC[d]), uint(distL[d]))
	}
	z.bits(uint32(litC[256]), uint(litL[256]))
	z.toks = z.toks[:0]
}

// header starts a block with the codes of lengths litL and distL: the
// block's type, and the lengths, run-length coded (symbols 16, 17, 18)
// with a Huffman code of their own.
func (z *rowDeflater) header(litL, distL []uint8, last bool) {
	nlit, ndist := 286, 30
	for nlit > 257 && litL[nlit-1] == 0 {
		nlit--
	}
	for ndist > 1 && distL[ndist-1] == 0 {
		ndist--
	}
	// The code lengths, run-length coded (symbols 16, 17, 18).
	seq := slices.Concat(litL[:nlit], distL[:ndist])
	type clSym struct{ sym, extra uint8 }
	var cls []clSym
	var clF [19]uint32
	for i := 0; i < len(seq); {
		l := seq[i]
		r := 1
		for i+r < len(seq) && seq[i+r] == l {
			r++
		}
		i += r
		if l == 0 {
			for r >= 11 {
				n := min(r, 138)
				cls = append(cls, clSym{18, uint8(n - 11)})
				r -= n
			}
			if r >= 3 {
				cls = append(cls, clSym{17, uint8(r - 3)})
				r = 0
			}
		} else {
			cls = append(cls, clSym{l, 0})
			r--
			for r >= 3 {
				n := min(r, 6)
				cls = append(cls, clSym{16, uint8(n - 3)})
				r -= n
			}
		}
		for ; r > 0; r-- {
			cls = append(cls, clSym{l, 0})
		}
	}
	for _, c := range cls {
		clF[c.sym]++
	}
	var clL [19]uint8
	var clC [19]uint16
	huffLengths(clF[:], clL[:], 7)
	canonical(clL[:], clC[:])
	nclen := 19
	for nclen > 4 && clL[clOrder[nclen-1]] == 0 {
		nclen--
	}

	fin := uint32(0)
	if last {
		fin = 1
	}
	z.bits(fin|2<<1, 3) // BFINAL, BTYPE 2: dynamic codes
	z.bits(uint32(nlit-257), 5)
	z.bits(uint32(ndist-1), 5)
	z.bits(uint32(nclen-4), 4)
	for _, s := range clOrder[:nclen] {
		z.bits(uint32(clL[s]), 3)
	}
	for _, c := range cls {
		z.bits(uint32(clC[c.sym]), uint(clL[c.sym]))
		switch c.sym {
		case 16:
			z.bits(uint32(c.extra), 2)
		case 17:
			z.bits(uint32(c.extra), 3)
		case 18:
			z.bits(uint32(c.extra), 7)
		}
	}
}

// huffLengths sets lens to the lengths of a Huffman code of the symbols
// of freq, none longer than limit; a symbol of frequency 0 gets none,
// unless fewer than two have one: then the first two get a code of one
// bit each (a complete code, which every inflater takes). A code longer
// than limit is made again of the frequencies halved, until it fits.
func huffLengths(freq []uint32, lens []uint8, limit int) {
	clear(lens)
	f := make([]uint64, len(freq))
	n := 0
	for i, c := range freq {
		f[i] = uint64(c)
		if c > 0 {
			n++
		}
	}
	if n < 2 {
		for i := 0; i < len(f) && n < 2; i++ {
			if f[i] == 0 {
				f[i] = 1
				n++
			}
		}
	}
	leaves := make([]int, 0, n)
	for i := range f {
		if f[i] > 0 {
			leaves = append(leaves, i)
		}
	}
	for {
		slices.SortStableFunc(leaves, func(a, b int) int {
			switch {
			case f[a] < f[b]:
				return -1
			case f[a] > f[b]:
				return 1
			}
			return a - b
		})
		// Two queues: the leaves by frequency, and the inner nodes,
		// made in order of frequency. Nodes 0..n-1 are the leaves,
		// n.. the inner nodes; parent of each.
		weight := make([]uint64, 0, 2*n)
		for _, s := range leaves {
			weight = append(weight, f[s])
		}
		parent := make([]int, 2*n-1)
		li, ii := 0, n
		pick := func() int {
			if li < n && (ii >= len(weight) || weight[li] <= weight[ii]) {
				li++
				return li - 1
			}
			ii++
			return ii - 1
		}
		for len(weight) < 2*n-1 {
			a := pick()
			b := pick()
			parent[a], parent[b] = len(weight), len(weight)
			weight = append(weight, weight[a]+weight[b])
		}
		depth := make([]int, 2*n-1)
		deepest := 0
		for i := 2*n - 3; i >= 0; i-- {
			depth[i] = depth[parent[i]] + 1
			if i < n {
				deepest = max(deepest, depth[i])
			}
		}
		if deepest <= limit {
			for k, s := range leaves {
				lens[s] = uint8(depth[k])
			}
			return
		}
		for _, s := range leaves {
			f[s] = (f[s] + 1) / 2
		}
	}
}

// canonical sets codes to the canonical Huffman codes of lens (RFC 1951
// 3.2.2), bit-reversed: deflate sends a code's first bit first.
func canonical(lens []uint8, codes []uint16) {
	var count [16]uint16
	for _, l := range lens {
		count[l]++
	}
	count[0] = 0
	var next [16]uint16
	code := uint16(0)
	for b := 1; b < 16; b++ {
		code = (code + count[b-1]) << 1
		next[b] = code
	}
	for i, l := range lens {
		if l == 0 {
			codes[i] = 0
			continue
		}
		codes[i] = bits.Reverse16(next[l]) >> (16 - l)
		next[l]++
	}
}
