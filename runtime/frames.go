package runtime

import "sync"

// Large response frames are recycled: a 64 KiB echo otherwise leaves 64 KiB more per request
// for the collector (bench: gc-% at 64 KiB).
// Only frames a transport gives back with ReleaseFrame are reused.
var framePool sync.Pool // of *[]byte

// minPooledFrame is the smallest frame worth recycling; smaller ones cost the allocator less
// than the pool.
const minPooledFrame = 4 << 10

// newFrame returns an empty buffer of at least n bytes' capacity for a response frame.
func newFrame(n int) []byte {
	if n >= minPooledFrame {
		if p, _ := framePool.Get().(*[]byte); p != nil && cap(*p) >= n {
			return (*p)[:0]
		}
	}
	return make([]byte, 0, n)
}

// ReleaseFrame gives back the memory of a frame that Serve or ServeOutbound emitted, once the
// transport has written it and keeps no reference to it, not even a slice of it. The runtime
// may then reuse it for a later response. Calling it is optional: a frame never released is
// collected as usual.
func ReleaseFrame(frame []byte) {
	if cap(frame) >= minPooledFrame {
		framePool.Put(&frame)
	}
}
