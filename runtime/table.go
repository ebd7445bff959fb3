package runtime

import (
	"hash/maphash"
	"unsafe"
)

// table is the dispatcher's record of the requests in flight, by id: a hash set of entries,
// each found by its key, with open addressing and linear probing. A map[string]*entry held
// each key's string header besides the pointer, in groups it grows by copying (by heap
// profile, about 43 bytes a parked request, and 40 more of garbage); the table holds one
// pointer a slot, 7/16 to 7/8 of them used (9 to 18 bytes a request), and the array it grew
// from, half as large, is the garbage. Only the dispatcher's goroutine uses it.
type table struct {
	seed  maphash.Seed
	slots []*entry // a power of two of them, or none
	n     int
}

// The table grows (doubles) when a put would fill more than maxLoad/loadDen of its slots.
const (
	maxLoad   = 7
	loadDen   = 8
	minTableN = 16 // the slots of a table's first allocation
)

func newTable() table { return table{seed: maphash.MakeSeed()} }

// len returns the number of entries.
func (t *table) len() int { return t.n }

// home returns the slot where key's probe starts.
func (t *table) home(key string) int {
	return int(maphash.String(t.seed, key) & uint64(len(t.slots)-1))
}

// get returns the entry whose key is key, or nil.
func (t *table) get(key string) *entry {
	if t.n == 0 {
		return nil
	}
	mask := len(t.slots) - 1
	for i := t.home(key); ; i = (i + 1) & mask {
		e := t.slots[i]
		if e == nil || e.key() == key {
			return e
		}
	}
}

// getID is get for an id as it came in a frame, without copying it.
func (t *table) getID(id []byte) *entry {
	return t.get(unsafe.String(unsafe.SliceData(id), len(id)))
}

// put adds e, whose key must not be in the table.
func (t *table) put(e *entry) {
	if (t.n+1)*loadDen > len(t.slots)*maxLoad {
		t.grow()
	}
	t.insert(e)
	t.n++
}

func (t *table) insert(e *entry) {
	mask := len(t.slots) - 1
	i := t.home(e.key())
	for t.slots[i] != nil {
		i = (i + 1) & mask
	}
	t.slots[i] = e
}

func (t *table) grow() {
	old := t.slots
	t.slots = make([]*entry, max(2*len(old), minTableN))
	for _, e := range old {
		if e != nil {
			t.insert(e)
		}
	}
}

// remove removes e, if it is in the table, and reports whether it was. The entries after it
// in its run move back, so that no probe stops short of them (no tombstones).
func (t *table) remove(e *entry) bool {
	if t.n == 0 {
		return false
	}
	mask := len(t.slots) - 1
	i := t.home(e.key())
	for t.slots[i] != e {
		if t.slots[i] == nil {
			return false
		}
		i = (i + 1) & mask
	}
	for j := (i + 1) & mask; t.slots[j] != nil; j = (j + 1) & mask {
		// The entry at j may fill the hole at i unless its home is cyclically in (i, j].
		h := t.home(t.slots[j].key())
		if (j > i && (h <= i || h > j)) || (j < i && h <= i && h > j) {
			t.slots[i] = t.slots[j]
			i = j
		}
	}
	t.slots[i] = nil
	t.n--
	return true
}

// each calls f with every entry, in no particular order; f must not change the table.
func (t *table) each(f func(*entry)) {
	for _, e := range t.slots {
		if e != nil {
			f(e)
		}
	}
}
