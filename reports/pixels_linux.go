//go:build linux

package reports

import "syscall"

// hugeMin is the size from which a figure's pixels are worth mapping
// in huge pages: 2 MiB, one huge page.
const hugeMin = 2 << 20

// pixelMemory is n bytes for the pixels of one figure, zero, and the
// function that gives them back once the figure is written (nothing may
// touch them after). A large figure's pixels are mapped for it and
// asked to be in huge pages (transparent huge pages, as the kernel
// allows): a tall timeline is 20 MB, whose first touch in small pages
// cost more CPU (a fault per 4 KiB) than drawing it. Where the mapping
// fails they come from Go's heap.
func pixelMemory(n int) ([]byte, func()) {
	if n < hugeMin {
		return make([]byte, n), func() {}
	}
	mem, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return make([]byte, n), func() {}
	}
	_ = syscall.Madvise(mem, syscall.MADV_HUGEPAGE) // a hint: refused, the pages are small
	return mem, func() { _ = syscall.Munmap(mem) }
}
