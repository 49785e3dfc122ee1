package reports

import (
	"bufio"
	"compress/zlib"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/png"
	"io"
)

// encodePNG writes m as a PNG of the same pixels as image/png would, for
// less CPU: a figure is opaque (drawn on white), so its pixels go out as
// RGB rows, each filtered with "up" (its difference from the row above)
// and compressed at the fastest level. image/png tries every filter on
// every row to pick the best, which cost more than the compression
// itself on a tall timeline, and the figures' rows, mostly white or
// repeating the row above, gain little from the choice. An image that is
// not opaque RGBA goes to image/png.
func encodePNG(w io.Writer, m image.Image) error {
	rgba, ok := m.(*image.RGBA)
	if !ok || !rgba.Opaque() {
		enc := png.Encoder{CompressionLevel: png.BestSpeed}
		return enc.Encode(w, m)
	}
	b := rgba.Bounds()
	width, height := b.Dx(), b.Dy()
	if _, err := io.WriteString(w, "\x89PNG\r\n\x1a\n"); err != nil {
		return err
	}
	var hdr [13]byte
	binary.BigEndian.PutUint32(hdr[0:4], uint32(width))
	binary.BigEndian.PutUint32(hdr[4:8], uint32(height))
	hdr[8], hdr[9] = 8, 2 // 8 bits a sample, truecolour (RGB)
	if err := writeChunk(w, "IHDR", hdr[:]); err != nil {
		return err
	}
	cw := bufio.NewWriterSize(&idatWriter{w: w}, 64<<10)
	zw, err := zlib.NewWriterLevel(cw, zlib.BestSpeed)
	if err != nil {
		return err
	}
	const ftUp = 2
	prev := make([]byte, 1+3*width) // the row above, unfiltered; zero above the first
	cur := make([]byte, 1+3*width)
	out := make([]byte, 1+3*width)
	out[0] = ftUp
	for y := b.Min.Y; y < b.Max.Y; y++ {
		pix := rgba.Pix[rgba.PixOffset(b.Min.X, y):]
		for x, j := 0, 1; x < width; x, j = x+1, j+3 {
			cur[j], cur[j+1], cur[j+2] = pix[4*x], pix[4*x+1], pix[4*x+2]
		}
		for j := 1; j < len(cur); j++ {
			out[j] = cur[j] - prev[j]
		}
		if _, err := zw.Write(out); err != nil {
			return err
		}
		prev, cur = cur, prev
	}
	if err := zw.Close(); err != nil {
		return err
	}
	if err := cw.Flush(); err != nil {
		return err
	}
	return writeChunk(w, "IEND", nil)
}

// idatWriter writes what it is given as IDAT chunks.
type idatWriter struct{ w io.Writer }

func (iw *idatWriter) Write(b []byte) (int, error) {
	if err := writeChunk(iw.w, "IDAT", b); err != nil {
		return 0, err
	}
	return len(b), nil
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
