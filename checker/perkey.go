package checker

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
)

// eachKey computes f for every key, on as many goroutines as there are
// CPUs, and returns the results in the order of keys, so the verdict does
// not depend on the schedule. Keys are independent (porcupine's
// partitioning by key: an operation on one key never constrains another).
// A panic in f is raised again on the caller's goroutine, where guard
// turns it into Unknown.
// f is given each key's place in keys too, where the caller keeps what
// it knows of the key beside keys (a lookup by key less).
func eachKey[T any](keys []string, f func(i int, key string) T) []T {
	out := make([]T, len(keys))
	workers := min(runtime.GOMAXPROCS(0), len(keys))
	if workers <= 1 {
		for i, k := range keys {
			out[i] = f(i, k)
		}
		return out
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	var once sync.Once
	var panicked any
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if r := recover(); r != nil {
					once.Do(func() { panicked = r })
					next.Store(int64(len(keys))) // stop the others
				}
			}()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(keys) {
					return
				}
				out[i] = f(i, keys[i])
			}
		}()
	}
	wg.Wait()
	if panicked != nil {
		panic(fmt.Sprintf("%v (in a key's check)", panicked))
	}
	return out
}
