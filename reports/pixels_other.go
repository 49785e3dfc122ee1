//go:build !linux

package reports

// pixels is the memory of a raster figure's pixels (see pixels_linux.go):
// of the Go heap.
type pixels struct{ b []byte }

func newPixels(n int) pixels { return pixels{b: make([]byte, n)} }

func (pixels) free() {}
