package reports

import (
	"syscall"
	"unsafe"
)

// pixels is the memory of a raster figure's pixels: a tall timeline's
// are 14 MB, and the first touch of each 4 KiB page of them (the white
// the canvas starts with) faulted 3,500 times, about 9 µs each on the
// virtual machines the harness runs on, a tenth of what a report adds
// to its check. Mapped on their own and advised into huge pages (2 MiB),
// they fault a few times. b is the pixels, mem the mapping (nil: b is of
// the Go heap).
type pixels struct {
	b   []byte
	mem []byte
}

const hugePage = 2 << 20

// newPixels is n bytes of zeroed memory: a mapping of its own, aligned
// to huge pages, for n of a huge page or more, which free unmaps; else,
// or if the mapping fails, of the Go heap.
func newPixels(n int) pixels {
	if n < hugePage {
		return pixels{b: make([]byte, n)}
	}
	mem, err := syscall.Mmap(-1, 0, n+hugePage, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return pixels{b: make([]byte, n)}
	}
	_ = syscall.Madvise(mem, syscall.MADV_HUGEPAGE) // advice: small pages if refused
	off := int((hugePage - uintptr(unsafe.Pointer(&mem[0]))%hugePage) % hugePage)
	return pixels{b: mem[off : off+n : off+n], mem: mem}
}

// free unmaps p's mapping: nothing may use p.b after.
func (p pixels) free() {
	if p.mem != nil {
		_ = syscall.Munmap(p.mem)
	}
}
