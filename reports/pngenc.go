package reports

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/png"
	"io"
)

// encodePNG writes m as a PNG of the same pixels as image/png would, for
// less CPU: a figure is opaque (drawn on white), so its pixels go out as
// RGB rows, each filtered with "up" (its difference from the row above),
// compressed by a deflater made for such rows (rowDeflater). image/png
// tries every filter on every row to pick the best, which cost more than
// the compression itself on a tall timeline, and the figures' rows,
// mostly white or repeating the row above, gain little from the choice;
// compress/flate, even at its fastest, looks at every byte of them. A row
// that repeats the row above is found by comparing the two and costs a
// few tokens, the others are filtered and deflated byte by byte. An
// image that is not opaque RGBA goes to image/png.
func encodePNG(w io.Writer, m image.Image) error {
	var stream []byte
	if rgba, ok := m.(*image.RGBA); ok && !rgba.Bounds().Empty() { // image/png refuses an empty image
		stream = deflateRows(rgba)
	}
	if stream == nil {
		enc := png.Encoder{CompressionLevel: png.BestSpeed}
		return enc.Encode(w, m)
	}
	b := m.Bounds()
	if _, err := io.WriteString(w, "\x89PNG\r\n\x1a\n"); err != nil {
		return err
	}
	var hdr [13]byte
	binary.BigEndian.PutUint32(hdr[0:4], uint32(b.Dx()))
	binary.BigEndian.PutUint32(hdr[4:8], uint32(b.Dy()))
	hdr[8], hdr[9] = 8, 2 // 8 bits a sample, truecolour (RGB)
	if err := writeChunk(w, "IHDR", hdr[:]); err != nil {
		return err
	}
	for len(stream) > 0 {
		n := min(len(stream), 64<<10)
		if err := writeChunk(w, "IDAT", stream[:n]); err != nil {
			return err
		}
		stream = stream[n:]
	}
	return writeChunk(w, "IEND", nil)
}

const ftUp = 2 // the filter "up"

// deflateRows is the zlib stream of m's pixels as RGB rows filtered
// "up", or nil when m is not opaque (then its RGB rows would not be its
// pixels). A stretch of pixels as above is a run of zeros, found four
// words at a time; the pixels that differ are filtered and deflated byte
// by byte.
func deflateRows(m *image.RGBA) []byte {
	b := m.Bounds()
	width := b.Dx()
	z := newRowDeflater()
	out := make([]byte, 3*width)
	var prev []byte // the row above, as m holds it; none above the first
	for y := b.Min.Y; y < b.Max.Y; y++ {
		i := m.PixOffset(b.Min.X, y)
		cur := m.Pix[i : i+4*width]
		z.bytesOf([]byte{ftUp})
		opaque := byte(0xff)
		switch {
		case prev == nil:
			for x, j := 0, 0; x < width; x, j = x+1, j+3 {
				out[j], out[j+1], out[j+2] = cur[4*x], cur[4*x+1], cur[4*x+2]
				opaque &= cur[4*x+3]
			}
			z.bytesOf(out)
		case bytes.Equal(cur, prev):
			z.zeroRun(3*width, false)
		default:
			afterZero := false
			for x := 0; x < width; {
				if e := sameRun(cur, prev, x, width); e > x {
					z.zeroRun(3*(e-x), afterZero)
					afterZero, x = true, e
				}
				j := 0
				for ; x < width && binary.LittleEndian.Uint32(cur[4*x:]) != binary.LittleEndian.Uint32(prev[4*x:]); x, j = x+1, j+3 {
					out[j], out[j+1], out[j+2] = cur[4*x]-prev[4*x], cur[4*x+1]-prev[4*x+1], cur[4*x+2]-prev[4*x+2]
					opaque &= cur[4*x+3]
				}
				if j > 0 {
					z.bytesOf(out[:j])
					afterZero = out[j-1] == 0
				}
			}
		}
		if opaque != 0xff {
			return nil
		}
		prev = cur
	}
	return z.finish()
}

// sameRun is where the stretch of pixels from x on that are the same in
// the rows cur and prev (of width pixels) ends.
func sameRun(cur, prev []byte, x, width int) int {
	le := binary.LittleEndian
	for ; x+8 <= width; x += 8 {
		c, p := cur[4*x:4*x+32], prev[4*x:4*x+32]
		if (le.Uint64(c)^le.Uint64(p))|(le.Uint64(c[8:])^le.Uint64(p[8:]))|
			(le.Uint64(c[16:])^le.Uint64(p[16:]))|(le.Uint64(c[24:])^le.Uint64(p[24:])) != 0 {
			break
		}
	}
	for x < width && le.Uint32(cur[4*x:]) == le.Uint32(prev[4*x:]) {
		x++
	}
	return x
}

// writeChunk writes one PNG chunk: length, type, data, CRC of type and
// data.
func writeChunk(w io.Writer, typ string, data []byte) error {
	var head [8]byte
	binary.BigEndian.PutUint32(head[:4], uint32(len(data)))
	copy(head[4:], typ)
	crc := crc32.NewIEEE()
	crc.Write(head[4:])
	crc.Write(data)
	var tail [4]byte
	binary.BigEndian.PutUint32(tail[:], crc.Sum32())
	for _, p := range [][]byte{head[:], data, tail[:]} {
		if _, err := w.Write(p); err != nil {
			return err
		}
	}
	return nil
}
