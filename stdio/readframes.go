package stdio

import (
	"context"
	"errors"
	"io"
	goruntime "runtime"

	"github.com/relayrt/relay/runtime"
)

// ReadFrames is the reader actor of an NDJSON stream, the one every part of Relay uses (a
// server's stdin, a proxy's host, a supervised child's stdout). It owns r and gives each line
// to deliver, in order: a message in a fresh slice that the receiver keeps (Frame), or, for a
// line longer than maxFrame bytes (DefaultMaxFrame if maxFrame <= 0), which it discarded
// without holding more than maxFrame of it, the limit (TooLarge); reading goes on after it.
//
// It returns nil at the end of input, or the read error, or nil as soon as deliver returns
// false (deliver is where a reader waits for its receiver, and gives up when it must). When
// ctx is done and r is an io.Closer, r is closed so that a blocked read ends, and ReadFrames
// returns nil.
func ReadFrames(ctx context.Context, r io.Reader, maxFrame int, deliver func(runtime.Inbound) bool) error {
	if c, ok := r.(io.Closer); ok {
		stop := context.AfterFunc(ctx, func() { c.Close() })
		defer stop()
	}
	fr := NewReader(r, maxFrame)
	for {
		line, err := fr.Next()
		var msg runtime.Inbound
		switch {
		case err == nil:
			msg.Frame = append([]byte(nil), line...)
		case asTooLarge(err, &msg):
		case errors.Is(err, io.EOF) || ctx.Err() != nil:
			return nil
		default:
			return err
		}
		if !deliver(msg) {
			return nil
		}
		if fr.Drained() {
			// The next Next reads, and at a quiet moment that read finds nothing and parks:
			// let the receiver, just woken on this P, run first instead of after that
			// syscall. A lone request's round trip is a few µs shorter for it.
			goruntime.Gosched()
		}
	}
}

// asTooLarge reports whether err is a *TooLargeError, and sets msg.TooLarge to its limit. Out of
// ReadFrames's loop, where the target of errors.As escaped to the heap on every frame read.
func asTooLarge(err error, msg *runtime.Inbound) bool {
	var tl *TooLargeError
	if !errors.As(err, &tl) {
		return false
	}
	msg.TooLarge = tl.Limit
	return true
}
