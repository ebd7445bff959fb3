// Package ratelog bounds the log entries that a peer's bad bytes can cause. A peer that
// writes malformed lines as fast as it can must not turn each one into a log entry: hosts keep
// a server's stderr in files, and one entry per bad line made 8 MiB of bad input into
// 96 MiB of log.
//
// A Limiter lets through at most Options.PerSecond entries of each kind (an entry's message)
// in any one second, with the offending bytes cut to Options.MaxBytes and their full length
// given beside them. It counts the entries it holds back, and reports them in one summary
// entry, "N more like this in the last second", on the first call after that second ends,
// or at Flush.
//
// A Limiter starts no goroutine: it acts only when called. Its owner calls Flush when it
// stops, so that the count of the last second is not lost. It is safe for concurrent use.
package ratelog

import (
	"fmt"
	"sync"
	"time"
	"unicode/utf8"

	"go.uber.org/zap"
)

// DefaultMaxBytes is how much of a peer's frame an entry keeps unless told otherwise.
const DefaultMaxBytes = 256

// Options tunes a Limiter. The zero value (or nil) gives the defaults.
type Options struct {
	PerSecond int              // entries of one kind let through per second (default 10)
	MaxBytes  int              // bytes of a peer's frame kept in an entry (default DefaultMaxBytes)
	Now       func() time.Time // the clock (default time.Now)
}

// Limiter is a rate-limited logger for entries caused by a peer's bytes.
type Limiter struct {
	log      *zap.Logger
	per      int
	maxBytes int
	now      func() time.Time

	mu    sync.Mutex
	kinds []*window // few: one per message in the code that logs
}

// window is the current second of one kind of entry.
type window struct {
	kind   string
	start  time.Time
	logged int // entries let through since start
	held   int // entries held back since start
}

// New returns a Limiter that writes to log.
func New(log *zap.Logger, opts *Options) *Limiter {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.PerSecond <= 0 {
		o.PerSecond = 10
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Limiter{log: log, per: o.PerSecond, maxBytes: o.MaxBytes, now: o.Now}
}

// Warn logs msg at warn level with fields and the first MaxBytes of frame (the peer's bytes,
// as "frame", with their full length as "frameLength"; neither when frame is nil), unless
// PerSecond entries with the same msg were already logged in the current second: then it only
// counts it.
func (l *Limiter) Warn(msg string, frame []byte, fields ...zap.Field) {
	now := l.now()
	l.mu.Lock()
	summaries := l.expire(now, false)
	var w *window
	for _, k := range l.kinds {
		if k.kind == msg {
			w = k
			break
		}
	}
	if w == nil {
		w = &window{kind: msg, start: now}
		l.kinds = append(l.kinds, w)
	}
	pass := w.logged < l.per
	if pass {
		w.logged++
	} else {
		w.held++
	}
	l.mu.Unlock()

	l.summarize(summaries)
	if !pass {
		return
	}
	if frame == nil {
		l.log.Warn(msg, fields...)
		return
	}
	kept := append([]byte(nil), Cut(frame, l.maxBytes)...) // a logger may keep fields after Warn returns
	all := make([]zap.Field, 0, len(fields)+2)
	all = append(append(all, fields...), zap.ByteString("frame", kept), zap.Int("frameLength", len(frame)))
	l.log.Warn(msg, all...)
}

// Flush reports what was held back and has not been reported yet, and starts every kind
// afresh. The Limiter's owner calls it when it stops.
func (l *Limiter) Flush() {
	l.mu.Lock()
	summaries := l.expire(time.Time{}, true)
	l.mu.Unlock()
	l.summarize(summaries)
}

// expire ends the windows whose second is over at now (every window when all is set) and
// returns those that held entries back.
func (l *Limiter) expire(now time.Time, all bool) []window {
	var done []window
	kept := l.kinds[:0]
	for _, w := range l.kinds {
		if !all && now.Sub(w.start) < time.Second {
			kept = append(kept, w)
			continue
		}
		if w.held > 0 {
			done = append(done, *w)
		}
	}
	clear(l.kinds[len(kept):])
	l.kinds = kept
	return done
}

func (l *Limiter) summarize(windows []window) {
	for _, w := range windows {
		l.log.Warn(fmt.Sprintf("%d more like this in the last second", w.held),
			zap.String("like", w.kind), zap.Int("more", w.held), zap.Time("since", w.start))
	}
}

// Cut returns at most the first max bytes of v, without splitting a UTF-8 sequence at the end:
// for a value of the peer's logged beside a frame or instead of it (a method name, an id).
func Cut[T ~string | ~[]byte](v T, max int) T {
	if len(v) <= max {
		return v
	}
	v = v[:max]
	for i := len(v) - 1; i >= 0 && i >= len(v)-utf8.UTFMax; i-- {
		if utf8.RuneStart(v[i]) {
			if len(v)-i < seqLen(v[i]) {
				v = v[:i] // an incomplete sequence
			}
			break
		}
	}
	return v
}

// seqLen is the length of the UTF-8 sequence that a lead byte starts.
func seqLen(lead byte) int {
	switch {
	case lead < 0xC0:
		return 1 // ASCII, or not a lead byte: nothing to wait for
	case lead < 0xE0:
		return 2
	case lead < 0xF0:
		return 3
	case lead < 0xF8:
		return 4
	}
	return 1 // never a lead byte
}
