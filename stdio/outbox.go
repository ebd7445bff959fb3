package stdio

import (
	"errors"
	"io"
	"sync"

	"go.uber.org/zap"
)

// Outbox is the mailbox of a writer actor whose senders must never wait (WriteOutbox): a
// proxy writing to a child process, which must go on serving its host when the child stops
// reading. Send queues a frame at once, or refuses it when the bytes queued and not yet
// written would pass the outbox's bound; a writer actor over a channel (Serve's) makes its
// senders wait instead.
type Outbox struct {
	max    int
	kick   chan struct{} // wakes the writer actor
	mu     sync.Mutex
	queue  [][]byte
	bytes  int // queued, or taken by the writer and not yet written
	closed bool
}

// Errors of Outbox.Send.
var (
	ErrOutboxFull   = errors.New("stdio: the outbox is full: its reader is not reading")
	ErrOutboxClosed = errors.New("stdio: the outbox is closed")
)

// NewOutbox returns an outbox that holds at most maxBytes of frames not yet written (and
// always at least one frame, whatever its size).
func NewOutbox(maxBytes int) *Outbox {
	return &Outbox{max: maxBytes, kick: make(chan struct{}, 1)}
}

// Send queues frame; it fails with ErrOutboxFull past the bound and ErrOutboxClosed once
// the outbox is closed. It never waits for the writer.
func (o *Outbox) Send(frame []byte) error {
	o.mu.Lock()
	switch {
	case o.closed:
		o.mu.Unlock()
		return ErrOutboxClosed
	case o.bytes > 0 && o.bytes+len(frame)+1 > o.max:
		o.mu.Unlock()
		return ErrOutboxFull
	}
	o.queue = append(o.queue, frame)
	o.bytes += len(frame) + 1
	o.mu.Unlock()
	select {
	case o.kick <- struct{}{}:
	default:
	}
	return nil
}

// Close ends the outbox: the writer writes what is queued and returns, and Send fails.
func (o *Outbox) Close() {
	o.mu.Lock()
	o.closed = true
	o.mu.Unlock()
	select {
	case o.kick <- struct{}{}:
	default:
	}
}

// Abort ends the outbox and drops what is queued: its reader is gone (a child that exited),
// and writing to it would only fail. The writer returns without writing more.
func (o *Outbox) Abort() {
	o.mu.Lock()
	o.closed = true
	o.queue = nil
	o.mu.Unlock()
	select {
	case o.kick <- struct{}{}:
	default:
	}
}

// take hands the writer everything queued, and whether the outbox is closed. The queue goes
// on in spare, the writer's last batch, emptied: a busy outbox would otherwise grow a new
// queue for every batch.
func (o *Outbox) take(spare [][]byte) ([][]byte, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	q := o.queue
	o.queue = spare[:0]
	return q, o.closed
}

// written tells the outbox that n bytes of frames have left it.
func (o *Outbox) written(n int) {
	o.mu.Lock()
	o.bytes -= n
	o.mu.Unlock()
}

// WriteOutbox is the writer actor over an Outbox: the only owner of w, writing what is queued
// in batches as Serve's writer does (one line per frame, one write per batch). It returns
// once the outbox is closed and what was queued is written, or at the first failed write,
// after closing the outbox so that senders hear of it at once.
func WriteOutbox(w io.Writer, o *Outbox, log *zap.Logger) error {
	if log == nil {
		log = zap.NewNop()
	}
	bw := batchWriter{w: w, log: log, failed: func(error) { o.Close() }, buf: make([]byte, 0, 64<<10)}
	var spare [][]byte
	for range o.kick {
		for {
			q, closed := o.take(spare)
			n := 0
			for _, f := range q {
				bw.add(f)
				n += len(f) + 1
				if bw.size() >= maxCoalesce {
					bw.flush()
				}
			}
			bw.flush()
			o.written(n)
			clear(q) // the frames are written: hold none of them
			if spare = q; cap(spare) > 4096 {
				spare = nil // not the whole of a burst's queue
			}
			if bw.err != nil {
				return bw.err
			}
			if closed {
				return nil
			}
			if len(q) == 0 {
				break
			}
		}
	}
	return nil
}
