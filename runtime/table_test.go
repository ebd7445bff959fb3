package runtime

import (
	"math/rand/v2"
	"strconv"
	"testing"
	"unsafe"
)

func tableEntry(key string) *entry {
	return &entry{keyPtr: unsafe.StringData(key), keyLen: int32(len(key))}
}

// TestTable_AgreesWithAMap puts, gets and removes entries at random, in a table small enough
// for its runs to wrap around, and checks every answer against a map's.
func TestTable_AgreesWithAMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	tb := newTable()
	want := map[string]*entry{}
	for i := range 200_000 {
		key := strconv.Itoa(rng.IntN(300))
		switch e := want[key]; {
		case e == nil && rng.IntN(3) > 0:
			e = tableEntry(key)
			tb.put(e)
			want[key] = e
		case e != nil && rng.IntN(2) == 0:
			if !tb.remove(e) {
				t.Fatalf("step %d: remove(%s) found nothing", i, key)
			}
			delete(want, key)
			if tb.remove(e) {
				t.Fatalf("step %d: remove(%s) twice", i, key)
			}
		}
		if got := tb.get(key); got != want[key] {
			t.Fatalf("step %d: get(%s) = %p, want %p", i, key, got, want[key])
		}
		if tb.getID([]byte(key)) != want[key] {
			t.Fatalf("step %d: getID(%s) differs from get", i, key)
		}
		if tb.len() != len(want) {
			t.Fatalf("step %d: len %d, want %d", i, tb.len(), len(want))
		}
		if i%1000 == 0 {
			seen := 0
			tb.each(func(e *entry) {
				if want[e.key()] != e {
					t.Fatalf("step %d: each gave %s, which is not in", i, e.key())
				}
				seen++
			})
			if seen != len(want) {
				t.Fatalf("step %d: each gave %d entries, want %d", i, seen, len(want))
			}
		}
	}
	if tb.remove(tableEntry("absent")) || tb.get("absent") != nil {
		t.Fatal("found an entry never put")
	}
}
