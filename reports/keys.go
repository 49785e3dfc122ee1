package reports

import (
	"hash/fnv"
	"slices"
)

// maxKeys bounds the keys a report holds to colour holds by key and to
// name them in a timeline's legend. A key's colour is its place among
// the run's keys, sorted, while it has maxKeys keys at most; a run of
// more (a fresh key per acquire: a million of them) would hold them all
// for colours no one can tell apart, so its keys are coloured by a hash
// of their names instead, and a legend says how many keys it drew up to
// maxKeys, and past it "over maxKeys".
const maxKeys = 10_000

// keySet is a set of keys that stops holding them past maxKeys: then it
// knows only that it had more.
type keySet struct {
	keys map[string]bool
	over bool
}

func newKeySet() *keySet { return &keySet{keys: map[string]bool{}} }

// add puts k in the set.
func (s *keySet) add(k string) {
	if s.over || s.keys[k] {
		return
	}
	if len(s.keys) == maxKeys {
		s.keys, s.over = nil, true
		return
	}
	s.keys[k] = true
}

// recentKeys remembers the key last given to it in each of a few slots
// (by length and last byte: a run's keys, lock-0 to lock-9, each have
// their own), so that the holds of a run's few keys, millions of them,
// do not each hash their key into a set it is in already.
type recentKeys [recentSlots]string

// seen reports whether k is the key last given in its slot, and makes
// it so.
func (r *recentKeys) seen(k string) bool {
	if k == "" {
		return false
	}
	slot := keySlot(k)
	if r[slot] == k {
		return true
	}
	r[slot] = k
	return false
}

// keySlot is the slot of a key that is not empty in a cache of
// recentSlots keys: by its length and last byte.
func keySlot(k string) int { return (len(k)*31 + int(k[len(k)-1])) & (recentSlots - 1) }

// sortedUnion is the keys of sets, sorted, and false when they come to
// more than maxKeys.
func sortedUnion(sets ...*keySet) ([]string, bool) {
	all := map[string]bool{}
	for _, s := range sets {
		if s.over {
			return nil, false
		}
		for k := range s.keys {
			all[k] = true
		}
		if len(all) > maxKeys {
			return nil, false
		}
	}
	out := make([]string, 0, len(all))
	for k := range all {
		out = append(out, k)
	}
	slices.Sort(out)
	return out, true
}

// hashColour is the colour index of key in a run of more than maxKeys
// keys.
func hashColour(key string) int {
	h := fnv.New32a()
	h.Write([]byte(key))
	return int(h.Sum32() % uint32(len(keyColours)))
}

// legendKeys is how many keys a timeline's legend names.
const legendKeys = 7

// windowKeys are the keys a timeline window holds, for its legend: the
// first legendKeys of them in sorted order, and how many there are
// (a keySet, which stops counting at maxKeys).
type windowKeys struct {
	set   *keySet
	least []string // sorted, legendKeys at most
}

func newWindowKeys() *windowKeys { return &windowKeys{set: newKeySet()} }

// add takes a key held in the window.
func (w *windowKeys) add(k string) {
	w.set.add(k)
	if len(w.least) == legendKeys && k >= w.least[legendKeys-1] {
		return
	}
	i, found := slices.BinarySearch(w.least, k)
	if found {
		return
	}
	w.least = slices.Insert(w.least, i, k)
	if len(w.least) > legendKeys {
		w.least = w.least[:legendKeys]
	}
}

// count is how many keys the window holds, and false when that is more
// than maxKeys.
func (w *windowKeys) count() (int, bool) {
	if w.set.over {
		return 0, false
	}
	return len(w.set.keys), true
}
