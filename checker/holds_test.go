package checker

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/lockharness/lockharness/history"
)

// writeHistoryFile writes ops as a history file and returns its path.
func writeHistoryFile(t *testing.T, ops []history.Op) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "history.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	enc := json.NewEncoder(f)
	for i := range ops {
		if err := enc.Encode(&ops[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestHoldsPastTheLimitGoToAFile: a windowed check keeps at most its limit
// of holds in memory and the rest in a file no directory shows, and gives
// them back, in order, as many times as asked (also at once), so that the
// result is the whole check's.
func TestHoldsPastTheLimitGoToAFile(t *testing.T) {
	ops := simValidRun(rand.New(rand.NewPCG(3, 4)), simConfig{procs: 5, keys: 2, events: 20_000, ttl: 5e6, pInfo: 0.02, heal: true})
	path := writeHistoryFile(t, ops)
	whole := checkOps(ctx, ops, Config{Timeout: time.Minute})
	if len(whole.Holds) < 1000 {
		t.Fatalf("only %d holds", len(whole.Holds))
	}
	spill := t.TempDir()
	res, _, err := checkFile(ctx, path, Config{Timeout: time.Minute, SpillDir: spill, HoldsInMemory: 97}, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if !res.HoldsInFile() || len(res.Holds) != 0 || res.NumHolds() != len(whole.Holds) {
		t.Fatalf("in a file %v, %d in memory, %d in all; want %d in a file", res.HoldsInFile(), len(res.Holds), res.NumHolds(), len(whole.Holds))
	}
	if runs := len(res.spilled.runs); runs < 2 {
		t.Fatalf("%d runs in the file for %d holds: want several to merge", runs, len(whole.Holds))
	}
	if left, _ := os.ReadDir(spill); len(left) != 0 {
		t.Errorf("the spill left %d files in its directory", len(left))
	}
	var wg sync.WaitGroup
	got := make([][]Hold, 3)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = res.EachHold(func(h Hold) error { got[i] = append(got[i], h); return nil })
		}()
	}
	wg.Wait()
	for i := range got {
		r := res
		r.spilled, r.Holds = nil, got[i]
		sameResult(t, "spilled holds", whole, r)
	}
	stop := errors.New("stop")
	n := 0
	if err := res.EachHold(func(Hold) error { n++; return stop }); err != stop || n != 1 {
		t.Errorf("EachHold went on after an error: %v, %d holds", err, n)
	}
}

// TestHoldsStayInMemoryWhenTheFileCannotBeWritten: a spill directory that
// cannot be written costs memory, never the verdict.
func TestHoldsStayInMemoryWhenTheFileCannotBeWritten(t *testing.T) {
	ops := simValidRun(rand.New(rand.NewPCG(3, 4)), simConfig{procs: 5, keys: 2, events: 5_000, ttl: 5e6, pInfo: 0.02, heal: true})
	path := writeHistoryFile(t, ops)
	whole := checkOps(ctx, ops, Config{Timeout: time.Minute})
	res, _, err := checkFile(ctx, path, Config{Timeout: time.Minute, SpillDir: filepath.Join(t.TempDir(), "missing"), HoldsInMemory: 50}, 500)
	if err != nil {
		t.Fatal(err)
	}
	if res.HoldsInFile() {
		t.Fatal("holds in a file that could not be created")
	}
	sameResult(t, "holds kept in memory", whole, res)
}

// The holds read back share one string per key while keys repeat, and
// any number of distinct keys comes back right in a table that does not
// grow.
func TestKeyCacheInternsInBoundedMemory(t *testing.T) {
	c := newKeyCache()
	a := c.intern([]byte("lock-1"))
	if b := c.intern([]byte("lock-1")); unsafe.StringData(a) != unsafe.StringData(b) {
		t.Errorf("a repeated key gave a second string")
	}
	for i := range 100_000 {
		want := fmt.Sprintf("key-%d", i)
		if got := c.intern([]byte(want)); got != want {
			t.Fatalf("intern(%q) = %q", want, got)
		}
	}
	if got := c.intern([]byte("lock-1")); got != "lock-1" {
		t.Errorf("intern(lock-1) after many keys = %q", got)
	}
}

// A run of holds reads back as it was written, whatever their keys' length
// against the reader's buffer (a key longer than a chunk of it), and a run
// cut short is an error, not its end.
func TestHoldReaderReadsBackARun(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	var want []Hold
	var run []byte
	for i := range 5000 {
		key := fmt.Sprintf("lock-%d", rng.IntN(20))
		if i%1000 == 7 {
			key = strings.Repeat("k", 100_000+i)
		}
		h := Hold{Key: key, Process: rng.IntN(1000), Start: rng.Int64(), End: -1, Deadline: rng.Int64N(1e12), Fence: rng.Int64N(5) - 2, Acquire: int64(i)}
		want = append(want, h)
		run = appendHold(run, h)
	}
	readAll := func(b []byte) ([]Hold, error) {
		r := newHoldReader(bytes.NewReader(b), newKeyCache())
		var got []Hold
		for {
			h, err := r.next()
			if errors.Is(err, io.EOF) {
				return got, nil
			}
			if err != nil {
				return got, err
			}
			got = append(got, h)
		}
	}
	got, err := readAll(run)
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("read back %d holds of %d (%v)", len(got), len(want), err)
	}
	for _, cut := range []int{len(run) - 1, len(run) - 100_000, 3} {
		if _, err := readAll(run[:cut]); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("a run cut at %d of %d bytes reads back with %v, want an unexpected end", cut, len(run), err)
		}
	}
}

// Holds spilled in order (a windowed check's, window after window) are
// read back one run after another, without a merge, and holds spilled out
// of order are merged: either way in CompareHolds order, all of them.
func TestSpilledHoldsInOrderNeedNoMerge(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 20))
	for _, ordered := range []bool{true, false} {
		h := newHoldFile(t.TempDir(), 100)
		var want []Hold
		for w := range 30 { // windows of holds, each sorted by the check
			var win []Hold
			for range 1 + rng.IntN(40) {
				start := int64(w*1000 + rng.IntN(1000))
				if !ordered {
					start = int64(rng.IntN(30_000))
				}
				win = append(win, Hold{Key: fmt.Sprintf("lock-%d", rng.IntN(3)), Process: rng.IntN(5), Start: start, End: start + 10, Acquire: int64(len(want) + len(win))})
			}
			slices.SortFunc(win, CompareHolds)
			want = append(want, win...)
			h.add(win...)
		}
		h.finish()
		if len(h.runs) < 2 || h.inOrder() != ordered {
			t.Fatalf("ordered %v: %d runs, in order %v", ordered, len(h.runs), h.inOrder())
		}
		slices.SortFunc(want, CompareHolds)
		var got []Hold
		if err := h.each(func(x Hold) error { got = append(got, x); return nil }); err != nil || !slices.Equal(got, want) {
			t.Errorf("ordered %v: read back %d holds of %d, or out of order (%v)", ordered, len(got), len(want), err)
		}
	}
}
