package checker

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
)

// TestPKStoreGivesBackWhatItEvicted: entries of keys at rest go to the
// file once the store holds more than hot, those of busy keys stay, and
// every one comes back as it was, again after a second eviction; with
// 20,000 entries an eviction writes its records in several chunks
// (spillChunk).
func TestPKStoreGivesBackWhatItEvicted(t *testing.T) {
	for _, n := range []int{100, 20_000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) { testPKStoreEvicts(t, n) })
	}
}

func testPKStoreEvicts(t *testing.T, n int) {
	s := newPKStore(t.TempDir())
	s.hot, s.base = 10, 10
	want := map[procKey]pkCarry{}
	for i := range n {
		k := procKey{i % 7, fmt.Sprintf("key-%d", i)}
		pc := s.at(k)
		pc.token, pc.hasToken = fmt.Sprintf("tok%d", i), true
		pc.claimEnd, pc.claimGrant, pc.hasClaim = int64(i)*3, -int64(i), i%2 == 0
		pc.relDone, pc.released, pc.held = int64(i)<<40, true, i%3 == 0
		pc.foreverT, pc.foreverI, pc.hasForever = 5, 6, i%5 == 0
		pc.acquire, pc.acquired = priorAcquire{start: 1, end: never, inv: 3, done: -1, typ: 2}, true
		pc.granted, pc.gotOne = priorAcquire{start: 7, end: 8, inv: 9, done: 10, typ: 1}, i%2 == 1
		if i%4 == 1 {
			pc.granted = pc.acquire // written once
		}
		for j := range i % 4 {
			tok := fmt.Sprint("r", j)
			if j == 2 {
				tok = pc.token // written once
			}
			pc.releases = append(pc.releases, priorRelease{start: int64(j) - 1<<62, end: never, inv: 2, done: -1, token: tok, typ: 3, notHeld: j == 1})
		}
		want[k] = *pc
	}
	busy := func(key string) bool { return key == "key-3" }
	s.evict(busy)
	if k := (procKey{3, "key-3"}); s.inMemory() != 1 || s.mem(k, s.hash(k)) == nil {
		t.Fatalf("%d entries stayed in memory, want the busy key's", s.inMemory())
	}
	check := func() {
		for k, w := range want {
			got := s.get(k)
			if got != nil {
				w.spilled = got.spilled // where it lay in the file
			}
			if got == nil || !reflect.DeepEqual(*got, w) {
				t.Fatalf("%v: got %+v, want %+v", k, got, w)
			}
		}
	}
	check()
	s.get(procKey{0, "key-0"}).token = "changed"
	w := want[procKey{0, "key-0"}]
	w.token = "changed"
	want[procKey{0, "key-0"}] = w
	s.hot = 10
	s.evict(busy)
	check()
	// Most keys busy: the few moved are taken out one by one (release).
	s.hot = 10
	s.evict(func(key string) bool { return key != "key-5" })
	if k := (procKey{5, "key-5"}); s.inMemory() != len(want)-1 || s.mem(k, s.hash(k)) != nil {
		t.Fatalf("%d entries stayed in memory, want all but key-5's", s.inMemory())
	}
	check()
	if s.get(procKey{1, "key-0"}) != nil {
		t.Fatal("an entry never made came back")
	}
	s.close()
}

// TestSpillIndexFindsEveryEntry: entries whose tags collide, and tags
// whose places collide, are all found after the table grew, each at its
// latest offset once moved, and a tag never put finds nothing.
func TestSpillIndexFindsEveryEntry(t *testing.T) {
	var x spillIndex
	want := map[uint64][]int64{}
	for i := range int64(5000) {
		tag := uint64(i % 1700) // three entries a tag
		if i%2 == 0 {
			tag <<= spillTagBits - 11 // crowded at the start of the table
		}
		x.put(tag, -1, i*spillAlign)
		want[tag] = append(want[tag], i*spillAlign)
	}
	for tag, offs := range want {
		// Move the first entry of each tag to a new offset.
		x.put(tag, offs[0], offs[0]+10_000*spillAlign)
		offs[0] += 10_000 * spillAlign
	}
	for tag, offs := range want {
		var got []int64
		x.find(tag, func(off int64) bool { got = append(got, off); return false })
		slices.Sort(got)
		slices.Sort(offs)
		if !slices.Equal(got, offs) {
			t.Fatalf("tag %x: offsets %v, want %v", tag, got, offs)
		}
	}
	if x.n != 5000 || len(x.slots)*17 < x.n*20 {
		t.Fatalf("%d entries in %d slots", x.n, len(x.slots))
	}
	x.find(1<<spillTagBits-1, func(int64) bool { t.Fatal("found a tag never put"); return true })
}

// TestPKStoreTellsApartEntriesOfOneHash: two entries whose hashes are
// equal (one in 2^64 pairs: made here by hand) are each found as its own,
// and each still after the other left memory.
func TestPKStoreTellsApartEntriesOfOneHash(t *testing.T) {
	s := newPKStore(t.TempDir())
	a, b, c := procKey{1, "key-a"}, procKey{2, "key-b"}, procKey{1, "key-c"}
	pa, pb, pc := &pkCarry{token: "a"}, &pkCarry{token: "b"}, &pkCarry{token: "c"}
	const h = 42
	s.put(a, h, pa)
	s.put(b, h, pb)
	if s.mem(a, h) != pa || s.mem(b, h) != pb || s.mem(c, h) != nil || s.inMemory() != 2 {
		t.Fatalf("two entries of one hash: got %v and %v (%d in memory)", s.mem(a, h), s.mem(b, h), s.inMemory())
	}
	s.drop(a, h)
	if s.mem(a, h) != nil || s.mem(b, h) != pb || s.inMemory() != 1 {
		t.Fatalf("after the first left: got %v and %v", s.mem(a, h), s.mem(b, h))
	}
	s.put(c, h, pc)
	s.drop(b, h)
	if s.mem(b, h) != nil || s.mem(c, h) != pc || s.inMemory() != 1 {
		t.Fatalf("after the second left: got %v and %v", s.mem(b, h), s.mem(c, h))
	}
}

// TestPKStoreGrowsWhenEntriesComeBack: a store whose moved entries are
// read back before its next eviction keeps more in memory (base doubles,
// up to top); one whose moved entries stay in the file (a fresh key per
// cycle) keeps base.
func TestPKStoreGrowsWhenEntriesComeBack(t *testing.T) {
	fill := func(s *pkStore, from, n int) {
		for i := from; i < from+n; i++ {
			s.at(procKey{0, fmt.Sprintf("key-%d", i)}).held = true
		}
	}
	idle := func(string) bool { return false }
	fresh := newPKStore(t.TempDir())
	fresh.hot, fresh.base, fresh.top = 100, 100, 400
	for round := range 5 {
		fill(fresh, round*200, 200) // new keys only
		fresh.evict(idle)
	}
	if fresh.base != 100 {
		t.Fatalf("a store of fresh keys grew base to %d, want 100", fresh.base)
	}
	fresh.close()
	back := newPKStore(t.TempDir())
	back.hot, back.base, back.top = 100, 100, 400
	var bases []int
	for range 5 {
		fill(back, 0, 200) // the same keys: read back after the first round
		back.evict(idle)
		bases = append(bases, back.base)
	}
	// From the third round on the 200 entries fit under base: they stay
	// in memory, and are read back no more.
	if want := []int{100, 200, 200, 200, 200}; !slices.Equal(bases, want) || back.inMemory() != 200 {
		t.Fatalf("base after each eviction %v, want %v; %d in memory, want 200", bases, want, back.inMemory())
	}
	// Up to top, not past it.
	fill(back, 200, 600)
	back.evict(idle) // moves all 800
	fill(back, 0, 800)
	back.evict(idle)
	if back.base != 400 {
		t.Fatalf("base grew to %d, want top, 400", back.base)
	}
	back.close()
}

// TestPKStoreLatelyFindsWhatAtWould: entries asked for again in about the
// order they were made are found among those made, others (asked far out
// of order, never made, made before an eviction) where at finds them; in
// every case the entry is the one at gives.
func TestPKStoreLatelyFindsWhatAtWould(t *testing.T) {
	s := newPKStore(t.TempDir())
	s.hot, s.base, s.top = 50, 50, 50
	key := func(i int) procKey { return procKey{i % 10, fmt.Sprintf("key-%d", i)} }
	made := map[procKey]*pkCarry{}
	for i := range 100 {
		made[key(i)] = s.at(key(i))
	}
	// Asked in pairs swapped, and the last one first (out of reach).
	order := []int{99}
	for i := 0; i < 98; i += 2 {
		order = append(order, i+1, i)
	}
	order = append(order, 98)
	for _, i := range order {
		if got := s.lately(key(i)); got != made[key(i)] {
			t.Fatalf("lately(%v) is not the entry at made", key(i))
		}
	}
	if s.next < 95 {
		t.Fatalf("%d of 100 entries found among those made, want 95 or more", s.next)
	}
	if pc := s.lately(procKey{3, "never"}); pc == nil || pc != s.get(procKey{3, "never"}) {
		t.Fatal("an entry never made was not made")
	}
	s.evict(func(string) bool { return false })
	if len(s.made) != 0 {
		t.Fatalf("%d entries made before an eviction are still in made", len(s.made))
	}
	pc := s.lately(key(5)) // read back from the file
	if pc == nil || pc.spilled == 0 || pc != s.get(key(5)) {
		t.Fatal("an entry moved to the file did not come back from it")
	}
	s.close()
}

// TestSpillIndexSeenTellsMostAbsentTags: every tag put passes the index's
// bits (find reads the table for it), and most tags never put do not.
func TestSpillIndexSeenTellsMostAbsentTags(t *testing.T) {
	var x spillIndex
	for i := range uint64(100_000) {
		x.put(i*2654435761%(1<<spillTagBits), -1, int64(i)*spillAlign)
	}
	for i := range uint64(100_000) {
		if !x.mayHold(i * 2654435761 % (1 << spillTagBits)) {
			t.Fatalf("tag of entry %d: bit clear", i)
		}
	}
	passed := 0
	for i := range uint64(100_000) {
		if x.mayHold((i*2654435761 + 12345) % (1 << spillTagBits)) {
			passed++
		}
	}
	if passed > 25_000 {
		t.Fatalf("%d of 100,000 tags never put passed the bits, want at most a quarter", passed)
	}
	t.Logf("%d of 100,000 absent tags passed", passed)
}

// TestPKStoreAllIsWhatIsInMemory: the list evict goes through (all) holds
// every entry in memory once, in the order they came there, after
// evictions that move most entries (the maps emptied, those that stay put
// back) or few (each moved one dropped), and entries read back.
func TestPKStoreAllIsWhatIsInMemory(t *testing.T) {
	s := newPKStore(t.TempDir())
	defer s.close()
	s.hot, s.base, s.top = 10, 10, 10
	check := func(when string) {
		t.Helper()
		if len(s.all) != s.inMemory() {
			t.Fatalf("%s: %d listed, %d in memory", when, len(s.all), s.inMemory())
		}
		seen := map[procKey]bool{}
		for _, pc := range s.all {
			if seen[pc.k] || s.mem(pc.k, s.hash(pc.k)) != pc || pc.h != s.hash(pc.k) {
				t.Fatalf("%s: %v listed twice, or not as in memory", when, pc.k)
			}
			seen[pc.k] = true
		}
	}
	key := func(i int) procKey { return procKey{i % 3, fmt.Sprintf("key-%d", i)} }
	for i := range 30 {
		s.at(key(i)).relDone = int64(i)
	}
	check("made")
	s.evict(func(k string) bool { return k < "key-2" }) // keys 0, 1, 10-19 stay; most move
	check("after most moved")
	for i := range 30 {
		s.at(key(i)) // the moved come back
	}
	check("read back")
	s.evict(func(k string) bool { return k != "key-29" }) // one moves
	check("after one moved")
	if pc := s.get(key(29)); pc == nil || pc.relDone != 29 || len(s.all) != 30 {
		t.Fatalf("key-29 read back as %+v, %d listed", pc, len(s.all))
	}
	check("after key-29 read back")
}
