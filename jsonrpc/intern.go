package jsonrpc

import (
	"maps"
	"sync"
	"sync/atomic"
)

// interned maps each interned method name to itself; it is replaced, never changed, so
// that decoding reads it without a lock.
var (
	interned   atomic.Pointer[map[string]string]
	internedMu sync.Mutex // serialises replacements
)

func init() { interned.Store(&map[string]string{}) }

// Intern makes Decode return these method names without allocating: a protocol's own
// names, which runtime.NewServer interns from its profile (runtime.Profile.Methods). It is
// safe for concurrent use, and cheap once the names are known.
func Intern(names ...string) {
	known := *interned.Load()
	missing := false
	for _, n := range names {
		if _, ok := known[n]; !ok {
			missing = true
			break
		}
	}
	if !missing {
		return
	}
	internedMu.Lock()
	defer internedMu.Unlock()
	next := maps.Clone(*interned.Load())
	for _, n := range names {
		next[n] = n
	}
	interned.Store(&next)
}

// Interned reports whether name is one of the interned method names: a name of one of the
// protocols served, not a client's own.
func Interned(name string) bool {
	_, ok := (*interned.Load())[name]
	return ok
}
